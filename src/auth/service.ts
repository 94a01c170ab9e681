// Dashboard accounts and sessions: first-visit owner setup, login, logout, the session's
// active workspace. Passwords are hashed with Bun.password; session tokens are stored hashed.
import { and, eq, gt, sql } from "drizzle-orm";
import { preparedStatement } from "../db/prepared";
import type { PlatformDb } from "../db";
import { sessions, users } from "../db/schema";
import { randomBase62, sha256Hex } from "../crypto/tokens";
import { ApiError } from "../http/errors";
import { recordAuditEvent } from "../audit/service";
import { findUsableKey, type ApiKeyRow } from "../api-keys/service";
import {
  addMember,
  createUser,
  createWorkspace,
  findUserByEmail,
  findWorkspaceByName,
  hasAccountWithPassword,
  passwordlessOwner,
  roleIn,
  workspacesOf,
} from "../workspaces/service";

export const SESSION_COOKIE = "platform_session";
const DEFAULT_WORKSPACE_NAME = "default";
// Verified when the email is unknown, so a wrong email takes as long as a wrong password.
const DECOY_HASH = Bun.password.hashSync("decoy-password-for-timing");

export function setupRequired(db: PlatformDb): boolean {
  return !hasAccountWithPassword(db);
}

/**
 * Whether the owner setup must prove it is the operator: once `platform keys create` has made a
 * passwordless owner, whoever sets the password takes over its workspaces and keys, so the setup
 * has to present one of those keys (the operator has them from the command line).
 */
export function setupKeyRequired(db: PlatformDb): boolean {
  return setupRequired(db) && passwordlessOwner(db) !== undefined;
}

function assertOwnsKey(db: PlatformDb, presentedKey: string | null, ownerId: string, now: number) {
  const howTo = "paste a key printed by `platform keys create` on this server (sent as 'Authorization: Bearer svc_...')";
  if (presentedKey === null) {
    throw new ApiError("SETUP_KEY_REQUIRED", `Keys were already made on the command line, so claiming the owner account needs one: ${howTo}`);
  }
  let key: ApiKeyRow | undefined;
  try {
    key = findUsableKey(db, presentedKey, now);
  } catch {}
  if (key?.userId !== ownerId) {
    throw new ApiError("SETUP_KEY_REQUIRED", `That key is not one of the owner's keys: ${howTo}`);
  }
}

export async function createOwner(
  db: PlatformDb,
  input: { email: string; password: string },
  /** A key of the passwordless owner made by `platform keys create`, when there is one. */
  presentedKey: string | null,
  clientAddress: string | null,
  now = Date.now(),
): Promise<{ userId: string; workspaceId: string }> {
  const passwordHash = await Bun.password.hash(input.password);
  const email = input.email.toLowerCase();
  return db.transaction((tx) => {
    const txDb = tx as unknown as PlatformDb;
    if (hasAccountWithPassword(txDb)) throw new ApiError("ALREADY_SET_UP", "The owner account already exists; log in instead");
    // A key made with `platform keys create` before setup already has an owner: that account is claimed.
    const placeholder = passwordlessOwner(txDb);
    let userId: string;
    if (placeholder) {
      assertOwnsKey(txDb, presentedKey, placeholder.id, now);
      tx.update(users).set({ email, passwordHash }).where(eq(users.id, placeholder.id)).run();
      userId = placeholder.id;
    } else {
      userId = createUser(txDb, email, passwordHash, now).id;
      const workspace = findWorkspaceByName(txDb, DEFAULT_WORKSPACE_NAME) ?? createWorkspace(txDb, DEFAULT_WORKSPACE_NAME, now);
      addMember(txDb, workspace.id, userId, "owner", now);
    }
    const workspaceId = workspacesOf(txDb, userId)[0]!.id;
    recordAuditEvent(txDb, { workspaceId, action: "auth.owner_created", actor: { type: "user", id: userId, clientAddress }, target: email, now });
    return { userId, workspaceId };
  });
}

/** Checks email and password; records the login or the failure in the user's workspaces. */
export async function verifyLogin(
  db: PlatformDb,
  input: { email: string; password: string },
  clientAddress: string | null,
  now = Date.now(),
): Promise<{ userId: string }> {
  const user = findUserByEmail(db, input.email);
  const valid = await Bun.password.verify(input.password, user?.passwordHash ?? DECOY_HASH);
  if (user) {
    for (const workspace of workspacesOf(db, user.id)) {
      recordAuditEvent(db, {
        workspaceId: workspace.id,
        action: valid && user.passwordHash ? "auth.login" : "auth.login_failed",
        actor: { type: "user", id: user.id, clientAddress },
        target: user.email,
        now,
      });
    }
  }
  if (!user || !user.passwordHash || !valid) throw new ApiError("INVALID_CREDENTIALS", "Wrong email or password");
  return { userId: user.id };
}

export function createSession(db: PlatformDb, userId: string, ttlSeconds: number, now = Date.now()): string {
  const token = randomBase62(43);
  const activeWorkspaceId = workspacesOf(db, userId)[0]?.id ?? null;
  db.insert(sessions)
    .values({ tokenHash: sha256Hex(token), userId, activeWorkspaceId, expiresAt: now + ttlSeconds * 1000, createdAt: now })
    .run();
  return token;
}

const liveSession = preparedStatement((db) =>
  db
    .select()
    .from(sessions)
    .where(and(eq(sessions.tokenHash, sql.placeholder("tokenHash")), gt(sessions.expiresAt, sql.placeholder("now"))))
    .prepare(),
);

export function findSession(db: PlatformDb, token: string, now = Date.now()) {
  return liveSession(db).get({ tokenHash: sha256Hex(token), now });
}

export function deleteSession(db: PlatformDb, tokenHash: string) {
  db.delete(sessions).where(eq(sessions.tokenHash, tokenHash)).run();
}

export function setActiveWorkspace(db: PlatformDb, tokenHash: string, userId: string, workspaceId: string) {
  if (!roleIn(db, workspaceId, userId)) throw new ApiError("NOT_A_MEMBER", "You are not a member of that organization");
  db.update(sessions).set({ activeWorkspaceId: workspaceId }).where(eq(sessions.tokenHash, tokenHash)).run();
}

/** The Set-Cookie value of a session; Secure when the request came over HTTPS (directly or via a TLS proxy). */
export function sessionCookie(token: string, maxAgeSeconds: number, request: Request): string {
  const secure = request.url.startsWith("https:") || request.headers.get("x-forwarded-proto") === "https";
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure ? "; Secure" : ""}`;
}

export function readCookie(header: string | null, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const index = part.indexOf("=");
    if (index > 0 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return undefined;
}
