// Which workspace a GitHub App installation belongs to. An installation is bound through the App's
// setup flow: the platform gives an owner or admin a link to install the App carrying a signed,
// expiring `state` that names the workspace and the user; GitHub sends the browser back to the
// setup URL with `installation_id`, that state and a `code` of the GitHub user who installed it
// (./installing-user.ts). The binding is made when the state is the signed-in user's own, GitHub
// lists the installation among that GitHub user's, and it is not already another workspace's. An
// installation bound elsewhere is answered exactly as one nobody bound.
import { timingSafeEqual } from "node:crypto";
import { eq } from "drizzle-orm";
import type { PlatformDb } from "../db";
import type { SecretBox } from "../crypto/secrets";
import { githubInstallations } from "../db/schema";
import { ApiError } from "../http/errors";

/** Long enough to install the App on an organization (which may need an owner's approval), short enough to go stale. */
export const INSTALL_STATE_LIFETIME_MS = 60 * 60_000;
const STATE_PURPOSE = "github-app-install-state";

export interface InstallState {
  workspaceId: string;
  userId: string;
  expiresAt: number;
}

/** `<payload>.<mac>`, both base64url: the workspace, the user and the expiry, signed with a key of the platform's. */
export function signInstallState(secrets: SecretBox, state: InstallState): string {
  const payload = Buffer.from(JSON.stringify({ w: state.workspaceId, u: state.userId, e: state.expiresAt })).toString("base64url");
  return `${payload}.${secrets.mac(STATE_PURPOSE, payload).toString("base64url")}`;
}

/** The state, when it is signed by this platform and not expired. */
export function readInstallState(secrets: SecretBox, text: string, now = Date.now()): InstallState {
  const invalid = (why: string) => new ApiError("INVALID_INSTALL_STATE", `The install link's state ${why}: start again from a new install link`);
  const [payload, mac, extra] = text.split(".");
  if (!payload || !mac || extra !== undefined) throw invalid("is malformed");
  const given = Buffer.from(mac, "base64url");
  const expected = secrets.mac(STATE_PURPOSE, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid("is not signed by this platform");
  const { w, u, e } = JSON.parse(Buffer.from(payload, "base64url").toString()) as { w: string; u: string; e: number };
  if (!(now < e)) throw invalid("has expired");
  return { workspaceId: w, userId: u, expiresAt: e };
}

/** The workspace the installation is bound to; null when none is. */
export function installationWorkspace(db: PlatformDb, installationId: string): string | null {
  return db.select({ workspaceId: githubInstallations.workspaceId }).from(githubInstallations).where(eq(githubInstallations.installationId, installationId)).get()?.workspaceId ?? null;
}

/** The one answer for an installation that is not the workspace's, whether another's or nobody's. */
export function notTheWorkspaces(installationId: string) {
  return new ApiError(
    "INSTALLATION_NOT_YOURS",
    `GitHub App installation ${installationId} is not connected to this workspace: install the App through the workspace's install link (POST /api/github-app/install-link)`,
  );
}

export function assertInstallationOf(db: PlatformDb, workspaceId: string, installationId: string) {
  if (installationWorkspace(db, installationId) !== workspaceId) throw notTheWorkspaces(installationId);
}

/** Binds the installation to the workspace; one bound to another workspace is refused as an unknown one is. */
export function bindInstallation(db: PlatformDb, binding: { installationId: string; workspaceId: string; userId: string; now?: number }) {
  return db.transaction((tx) => {
    const bound = tx.select().from(githubInstallations).where(eq(githubInstallations.installationId, binding.installationId)).get();
    if (bound && bound.workspaceId !== binding.workspaceId) throw notTheWorkspaces(binding.installationId);
    if (bound) return bound;
    const row = { installationId: binding.installationId, workspaceId: binding.workspaceId, boundByUserId: binding.userId, boundAt: binding.now ?? Date.now() };
    tx.insert(githubInstallations).values(row).run();
    return row;
  });
}

export function listInstallations(db: PlatformDb, workspaceId: string) {
  return db.select().from(githubInstallations).where(eq(githubInstallations.workspaceId, workspaceId)).all();
}
