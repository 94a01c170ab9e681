// Dashboard accounts and sessions: first-visit owner setup, login (with the second factor of
// ./two-factor), logout, the session's active workspace, and the session cookie. Passwords are
// hashed with Bun.password; session tokens are stored hashed.
import { and, eq, gt, ne, sql } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import type { SessionSchema, UserSchema } from "./model";
import { preparedStatement } from "../db/prepared";
import type { PlatformDb } from "../db";
import { apiKeys, memberships, sessions, users } from "../db/schema";
import { randomBase62, sha256Hex } from "../crypto/tokens";
import { ApiError } from "../http/errors";
import { permittedRoutes } from "../http/permissions";
import { recordAuditEvent } from "../audit/service";
import { findUsableKey, type ApiKeyRow } from "../api-keys/service";
import type { SecretBox } from "../crypto/secrets";
import { assertSecondFactor, hasTwoFactor, isTwoFactorRequired, spendSecondFactor } from "./two-factor/service";
import {
  addMember,
  createUser,
  createWorkspace,
  findUserByEmail,
  findUserById,
  findWorkspaceByName,
  hasAccountWithPassword,
  isPasswordlessOwner,
  passwordlessOwner,
  roleIn,
  workspacesOf,
  type Role,
} from "../workspaces/service";

export const SESSION_COOKIE = "platform_session";
const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;
const DEFAULT_WORKSPACE_NAME = "default";
// Verified when the email is unknown, so a wrong email takes as long as a wrong password.
const DECOY_HASH = Bun.password.hashSync("decoy-password-for-timing");

/** The failed-attempt limiter's key of an account's sign-ins: login, claim, invitation acceptance, two-factor changes. */
export const signInAttempts = (email: string) => `login:${email.toLowerCase()}`;

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

/** The placeholder owner a presented key belongs to: the account a setup or a claim takes over. */
function placeholderOfKey(db: PlatformDb, presentedKey: string | null, now: number): string {
  const howTo = "paste a key printed by `platform keys create` on this server (sent as 'Authorization: Bearer svc_...')";
  if (presentedKey === null) {
    throw new ApiError("SETUP_KEY_REQUIRED", `Keys were already made on the command line, so claiming the owner account needs one: ${howTo}`);
  }
  let key: ApiKeyRow | undefined;
  try {
    key = findUsableKey(db, presentedKey, now);
  } catch {}
  if (!key || !isPasswordlessOwner(db, key.userId)) {
    throw new ApiError("SETUP_KEY_REQUIRED", `That key is not a key of an unclaimed owner: ${howTo}`);
  }
  return key.userId;
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
    let userId: string;
    if (passwordlessOwner(txDb)) {
      // Each workspace made on the command line has its own placeholder: the key says which one.
      userId = placeholderOfKey(txDb, presentedKey, now);
      tx.update(users).set({ email, passwordHash }).where(eq(users.id, userId)).run();
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

/**
 * Claims the placeholder owner of a key made by `platform keys create` after the owner setup:
 * with a new email it becomes that account; with the email and password of an existing account,
 * that account takes over the placeholder's workspaces (as owner) and keys.
 */
export async function claimOwner(
  db: PlatformDb,
  secrets: SecretBox,
  input: { email: string; password: string; code?: string },
  presentedKey: string | null,
  clientAddress: string | null,
  now = Date.now(),
): Promise<{ userId: string; workspaceId: string }> {
  const email = input.email.toLowerCase();
  const placeholderId = placeholderOfKey(db, presentedKey, now);
  const existing = findUserByEmail(db, email);
  const valid = await Bun.password.verify(input.password, existing?.passwordHash ?? DECOY_HASH);
  const wrongPassword = new ApiError("INVALID_CREDENTIALS", "Wrong password for that account");
  const secondFactor = existing
    ? assertSecondFactor(db, secrets, { userId: existing.id, passwordValid: Boolean(existing.passwordHash) && valid, code: input.code, wrongPassword }, now)
    : null;
  const passwordHash = existing ? null : await Bun.password.hash(input.password);
  return db.transaction((tx) => {
    const txDb = tx as unknown as PlatformDb;
    // Read again: another claim may have taken the placeholder while the password was hashed.
    if (placeholderOfKey(txDb, presentedKey, now) !== placeholderId || findUserByEmail(txDb, email)?.id !== existing?.id) {
      throw new ApiError("CONFLICT", "The account changed meanwhile; try again");
    }
    spendSecondFactor(txDb, secondFactor, clientAddress, now);
    const claimed = workspacesOf(txDb, placeholderId);
    let userId = placeholderId;
    if (existing) {
      userId = existing.id;
      for (const workspace of claimed) {
        if (roleIn(txDb, workspace.id, userId)) {
          tx.update(memberships).set({ role: workspace.role }).where(and(eq(memberships.workspaceId, workspace.id), eq(memberships.userId, userId))).run();
        } else {
          addMember(txDb, workspace.id, userId, workspace.role, now);
        }
      }
      tx.update(apiKeys).set({ userId }).where(eq(apiKeys.userId, placeholderId)).run();
      tx.delete(users).where(eq(users.id, placeholderId)).run();
    } else {
      tx.update(users).set({ email, passwordHash }).where(eq(users.id, placeholderId)).run();
    }
    for (const workspace of claimed) {
      recordAuditEvent(txDb, { workspaceId: workspace.id, action: "auth.owner_claimed", actor: { type: "user", id: userId, clientAddress }, target: email, now });
    }
    return { userId, workspaceId: claimed[0]!.id };
  });
}

/**
 * Checks email, password and, for an account with two-factor sign-in, the code
 * (./two-factor/service.ts); records the login or the failure in the user's workspaces.
 */
export async function verifyLogin(
  db: PlatformDb,
  secrets: SecretBox,
  input: { email: string; password: string; code?: string },
  clientAddress: string | null,
  now = Date.now(),
): Promise<{ userId: string }> {
  const user = findUserByEmail(db, input.email);
  const valid = await Bun.password.verify(input.password, user?.passwordHash ?? DECOY_HASH);
  const passwordValid = Boolean(user?.passwordHash) && valid;
  let refusal: unknown = null;
  try {
    const wrongPassword = new ApiError("INVALID_CREDENTIALS", "Wrong email or password");
    const secondFactor = assertSecondFactor(db, secrets, { userId: user?.id ?? null, passwordValid, code: input.code, wrongPassword }, now);
    spendSecondFactor(db, secondFactor, clientAddress, now);
  } catch (error) {
    refusal = error;
  }
  // Asked for the second factor after the right password: not a failure (nor a login yet).
  const halfway = passwordValid && refusal instanceof ApiError && refusal.code === "TWO_FACTOR_REQUIRED";
  if (user && !halfway) {
    for (const workspace of workspacesOf(db, user.id)) {
      recordAuditEvent(db, {
        workspaceId: workspace.id,
        action: refusal ? "auth.login_failed" : "auth.login",
        actor: { type: "user", id: user.id, clientAddress },
        target: user.email,
        now,
      });
    }
  }
  if (refusal) throw refusal;
  return { userId: user!.id };
}

/** A user as the auth routes answer it. */
export function publicUser(user: { id: string; email: string }): Static<typeof UserSchema> {
  return { id: user.id, email: user.email };
}

/** What `GET /api/auth/session` answers: the caller, the workspace the request acts in, and all of the user's. */
export function describeSession(
  db: PlatformDb,
  caller: { userId: string; via: "api_key" | "session"; workspaceId: string; role: Role },
): Static<typeof SessionSchema> {
  const user = findUserById(db, caller.userId)!;
  return {
    user: publicUser(user),
    via: caller.via,
    activeOrganizationId: caller.workspaceId,
    role: caller.role,
    organizations: workspacesOf(db, user.id).map((workspace) => ({ id: workspace.id, name: workspace.name, role: workspace.role })),
    permissions: permittedRoutes(caller.role),
    twoFactorEnabled: hasTwoFactor(db, user.id),
    twoFactorRequired: isTwoFactorRequired(db, caller.workspaceId),
  };
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

/**
 * The workspace a session acts in. One whose workspace went away (its user was removed from it)
 * moves to the user's first workspace, written back so that later requests need no lookup.
 */
export function activeWorkspaceOf(db: PlatformDb, session: { tokenHash: string; userId: string; activeWorkspaceId: string | null }): string | null {
  if (session.activeWorkspaceId) return session.activeWorkspaceId;
  const first = workspacesOf(db, session.userId)[0]?.id ?? null;
  if (first) db.update(sessions).set({ activeWorkspaceId: first }).where(eq(sessions.tokenHash, session.tokenHash)).run();
  return first;
}

export function deleteSession(db: PlatformDb, tokenHash: string) {
  db.delete(sessions).where(eq(sessions.tokenHash, tokenHash)).run();
}

/** Ends every session of the user but the one making the request. */
export function deleteOtherSessions(db: PlatformDb, userId: string, keptTokenHash: string) {
  db.delete(sessions).where(and(eq(sessions.userId, userId), ne(sessions.tokenHash, keptTokenHash))).run();
}

export function setActiveWorkspace(db: PlatformDb, tokenHash: string, userId: string, workspaceId: string) {
  if (!roleIn(db, workspaceId, userId)) throw new ApiError("NOT_A_MEMBER", "You are not a member of that organization");
  db.update(sessions).set({ activeWorkspaceId: workspaceId }).where(eq(sessions.tokenHash, tokenHash)).run();
}

/**
 * The session cookie's name. Over HTTPS it is `__Host-` prefixed: browsers then take it only from a
 * Secure answer of this very host with `Path=/` and no `Domain`, so a tenant app on a sibling name
 * (any `<app>.<PLATFORM_DOMAIN>` under the same parent) can neither set nor shadow it. Plain HTTP
 * cannot use the prefix (it needs Secure); the start warns when apps share the dashboard's parent
 * domain (./cookie-scope.ts).
 */
export function sessionCookieName(https: boolean): string {
  return https ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
}

/**
 * The Set-Cookie value of a session; Secure and `__Host-` when the client came over HTTPS, directly
 * or through a trusted proxy (`RequestSource.https`: an X-Forwarded-Proto from anyone else is not believed).
 */
export function sessionCookie(token: string, maxAgeSeconds: number, https: boolean): string {
  return `${sessionCookieName(https)}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${https ? "; Secure" : ""}`;
}

/**
 * The session token a request carries under the cookie name of its scheme, if any. Two cookies of
 * that name mean someone else set one too (a sibling site's `Domain=` parent cookie, or a longer
 * `Path`): which one the browser lists first is not ours to choose, so the request is refused.
 */
export function sessionTokenOf(cookieHeader: string | null, https: boolean): string | undefined {
  const values = cookieValues(cookieHeader, sessionCookieName(https));
  if (values.length > 1) {
    throw new ApiError(
      "DUPLICATE_SESSION_COOKIE",
      "The request carries two session cookies: another site under the same parent domain may have set one. Clear this site's cookies and log in again",
    );
  }
  return values[0];
}

function cookieValues(header: string | null, name: string): string[] {
  if (!header) return [];
  const values: string[] = [];
  for (const part of header.split(";")) {
    const index = part.indexOf("=");
    if (index > 0 && part.slice(0, index).trim() === name) values.push(part.slice(index + 1).trim());
  }
  return values;
}
