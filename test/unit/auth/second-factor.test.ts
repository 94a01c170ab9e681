// The second factor of a sign-in on a real SQLite file: the code is checked against the account's
// secret whether the password was right or not (the same work, so the time does not tell), and a
// code is spent only by a sign-in that goes through: a claim or an invitation acceptance refused
// after the code was checked leaves it usable.
import { beforeEach, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { join } from "node:path";
import { openDatabase, type PlatformDb } from "../../../src/db";
import { invitations, users } from "../../../src/db/schema";
import { SecretBox } from "../../../src/crypto/secrets";
import { ApiError } from "../../../src/http/errors";
import { createApiKey } from "../../../src/api-keys/service";
import { addMember, createUser, createWorkspace, ensureWorkspaceWithOwner } from "../../../src/workspaces/service";
import { claimOwner, verifyLogin } from "../../../src/auth/service";
import { assertSecondFactor, confirmEnrolment, startEnrolment } from "../../../src/auth/two-factor/service";
import { base32Decode, totpAt } from "../../../src/auth/two-factor/totp";
import { acceptInvitation, createInvitation } from "../../../src/organization/service";
import { tempDir } from "../../helpers/temp";

const ACCOUNT = { email: "person@example.com", password: "person-password-1" };
const ACTOR = { type: "user" as const, id: "test", clientAddress: null };

/** A SecretBox that counts its decryptions: the work of checking a TOTP code starts with one. */
class CountingSecretBox extends SecretBox {
  decryptions = 0;
  override decrypt(sealed: string, associatedData: string): string {
    this.decryptions++;
    return super.decrypt(sealed, associatedData);
  }
}

let db: PlatformDb;
let secrets: CountingSecretBox;
let userId: string;
let secret: string;
let recoveryCodes: string[];
/** The moment of the enrolment; sign-ins use the next step, whose code the enrolment did not spend. */
let enrolledAt: number;
const codeAt = (offsetSteps: number) => totpAt(base32Decode(secret), enrolledAt + offsetSteps * 30_000);

async function refused(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => null, (failure: unknown) => failure);
  expect(error).toBeInstanceOf(ApiError);
  return (error as ApiError).code;
}

beforeEach(async () => {
  db = openDatabase(join(tempDir(), "platform.sqlite"));
  secrets = new CountingSecretBox(Buffer.from(crypto.getRandomValues(new Uint8Array(32))));
  const user = createUser(db, ACCOUNT.email, await Bun.password.hash(ACCOUNT.password));
  userId = user.id;
  addMember(db, createWorkspace(db, "own").id, userId, "owner");
  enrolledAt = Date.now();
  secret = (await startEnrolment(db, secrets, { ...user, passwordHash: user.passwordHash }, ACCOUNT.password, enrolledAt)).secret;
  recoveryCodes = confirmEnrolment(db, secrets, userId, codeAt(0), ACTOR, enrolledAt);
});

describe("the code is checked whatever the password", () => {
  test("a wrong password with a wrong code does the same check of the code as the right password with it", () => {
    const wrongCode = String((Number(codeAt(1)) + 1) % 1_000_000).padStart(6, "0");
    const work = (passwordValid: boolean) => {
      secrets.decryptions = 0;
      const attempt = { userId, passwordValid, code: wrongCode, wrongPassword: new ApiError("INVALID_CREDENTIALS", "wrong") };
      expect(() => assertSecondFactor(db, secrets, attempt, enrolledAt + 30_000)).toThrow("Wrong email, password or code");
      return secrets.decryptions;
    };
    expect(work(false)).toBe(1);
    expect(work(true)).toBe(1);
  });
});

describe("a sign-in refused after the code was checked leaves the code unused", () => {
  test("an invitation used up meanwhile: its acceptance fails, the app's code still signs in once", async () => {
    const other = createWorkspace(db, "other");
    const invitation = createInvitation(db, other.id, { email: ACCOUNT.email, role: "member" }, { ...ACTOR, userId: "test" });
    const code = codeAt(1);
    const acceptance = acceptInvitation(db, secrets, invitation.id, { password: ACCOUNT.password, code }, null, enrolledAt + 30_000);
    // While the password is checked, another request cancels the invitation.
    db.update(invitations).set({ status: "canceled" }).where(eq(invitations.id, invitation.id)).run();
    expect(await refused(acceptance)).toBe("INVITATION_NOT_FOUND");
    expect(await verifyLogin(db, secrets, { ...ACCOUNT, code }, null, enrolledAt + 30_000)).toEqual({ userId });
  });

  test("a claim whose account changed meanwhile: 409 CONFLICT, the recovery code still signs in once", async () => {
    const { workspace, ownerId } = ensureWorkspaceWithOwner(db, "made-on-the-command-line");
    const { key } = createApiKey(db, { workspaceId: workspace.id, userId: ownerId }, { name: "cli" }, { type: "cli", id: null });
    const code = recoveryCodes[0]!;
    const claim = claimOwner(db, secrets, { ...ACCOUNT, code }, key, null, enrolledAt + 30_000);
    // While the password is checked, the account's email changes.
    db.update(users).set({ email: "moved@example.com" }).where(eq(users.id, userId)).run();
    expect(await refused(claim)).toBe("CONFLICT");
    const moved = { email: "moved@example.com", password: ACCOUNT.password, code };
    expect(await verifyLogin(db, secrets, moved, null, enrolledAt + 30_000)).toEqual({ userId });
    expect(await refused(verifyLogin(db, secrets, moved, null, enrolledAt + 30_000))).toBe("INVALID_CREDENTIALS");
  });
});
