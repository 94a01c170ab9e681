// GitHub App installations and workspaces: the install link's state is the platform's, names one
// workspace and user, and expires; an installation is bound once, and one bound to another
// workspace is refused exactly as one nobody bound.
import { expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { SecretBox } from "../../../src/crypto/secrets";
import { openDatabase } from "../../../src/db";
import { workspaces } from "../../../src/db/schema";
import { assertInstallationOf, bindInstallation, installationWorkspace, readInstallState, signInstallState } from "../../../src/git/installations";
import { tempDir } from "../../helpers/temp";

const secrets = new SecretBox(randomBytes(32));
const now = Date.parse("2030-01-01T00:00:00Z");
const state = { workspaceId: "ws_ours", userId: "usr_admin", expiresAt: now + 60_000 };

function refusal(run: () => unknown) {
  try {
    run();
  } catch (error) {
    return { code: (error as { code?: string }).code, message: (error as Error).message };
  }
  throw new Error("not refused");
}

test("a state signed here reads back until it expires", () => {
  const signed = signInstallState(secrets, state);
  expect(readInstallState(secrets, signed, now)).toEqual(state);
  expect(refusal(() => readInstallState(secrets, signed, state.expiresAt)).code).toBe("INVALID_INSTALL_STATE");
});

test("a state altered, signed by another platform or malformed is refused", () => {
  const signed = signInstallState(secrets, state);
  const [, mac] = signed.split(".");
  const forged = `${Buffer.from(JSON.stringify({ w: "ws_theirs", u: "usr_admin", e: state.expiresAt })).toString("base64url")}.${mac}`;
  const elsewhere = signInstallState(new SecretBox(randomBytes(32)), state);
  for (const text of [forged, elsewhere, "", "x", `${signed}.x`, signed.slice(0, -2)]) {
    expect(refusal(() => readInstallState(secrets, text, now)).code).toBe("INVALID_INSTALL_STATE");
  }
});

test("an installation is bound to the first workspace; another's claim is answered as an unknown installation is", () => {
  const db = openDatabase(join(tempDir(), "platform.db"));
  for (const id of ["ws_ours", "ws_theirs"]) db.insert(workspaces).values({ id, name: id, createdAt: now }).run();
  const unknown = refusal(() => assertInstallationOf(db, "ws_ours", "777"));
  expect(unknown.code).toBe("INSTALLATION_NOT_YOURS");

  bindInstallation(db, { installationId: "777", workspaceId: "ws_ours", userId: "usr_admin", now });
  expect(installationWorkspace(db, "777")).toBe("ws_ours");
  expect(() => assertInstallationOf(db, "ws_ours", "777")).not.toThrow();
  // Binding it again to the same workspace changes nothing.
  expect(bindInstallation(db, { installationId: "777", workspaceId: "ws_ours", userId: "usr_other", now: now + 1 })).toMatchObject({ boundByUserId: "usr_admin", boundAt: now });

  expect(refusal(() => bindInstallation(db, { installationId: "777", workspaceId: "ws_theirs", userId: "usr_x" }))).toEqual(unknown);
  expect(refusal(() => assertInstallationOf(db, "ws_theirs", "777"))).toEqual(unknown);
  expect(installationWorkspace(db, "777")).toBe("ws_ours");
});
