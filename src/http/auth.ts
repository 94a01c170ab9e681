// Authentication of every API route: `Authorization: Bearer svc_...` or the dashboard's session
// cookie. Routes opt in with `{ auth: true }` and receive `principal`. Also applies the
// per-address limit on failed attempts (counted after the credential for keys and cookies, taken
// first for the password forms, with a per-account limit too), the per-caller rate limit, the
// key's usage quota, the Host and Origin checks on cookie requests (./request-source.ts), the
// `workspaceId` query parameter within the key's scope, the role the permission matrix
// (./permissions.ts) asks for, a workspace's requirement of two-factor sign-in for sessions
// (src/auth/two-factor), and the audit of the action. The session cookie is read under the name
// of the request's scheme, and refused when sent twice (src/auth/service.ts).
import { Elysia } from "elysia";
import { ApiError } from "./errors";
import { assertAllowedHost, assertSameOrigin, requestSourceOf, type RequestSource } from "./request-source";
import type { ServerContext } from "./context";
import { findUsableKey, spendKeyUsage } from "../api-keys/service";
import { activeWorkspaceOf, findSession, sessionTokenOf } from "../auth/service";
import { roleIn, type Role } from "../workspaces/service";
import { assertTwoFactorSetUp } from "../auth/two-factor/service";
import { recordAuditEvent } from "../audit/service";
import { assertPermitted, routeKeyOf, type RoutePermission } from "./permissions";

export interface Principal {
  userId: string;
  workspaceId: string;
  role: Role;
  via: "api_key" | "session";
  apiKeyId: string | null;
  sessionTokenHash: string | null;
  clientAddress: string | null;
}

const BEARER_FORM = /^Bearer (svc_[A-Za-z0-9_]{32,256})$/;
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The `svc_...` key of an `Authorization: Bearer svc_...` header; null when there is none or it has another form. */
export function bearerKeyOf(request: Request): string | null {
  const header = request.headers.get("authorization");
  return header === null ? null : (BEARER_FORM.exec(header)?.[1] ?? null);
}

function rateLimited(message: string, retryAfterSeconds: number) {
  return new ApiError("RATE_LIMITED", message, { "Retry-After": String(retryAfterSeconds) });
}

/** Who makes a password attempt: the client's address and the account it is for. */
export interface Attempter {
  clientAddress: string | null;
  /**
   * `login:<lowercased email>`, `invitation:<id>` or `setup`; or several, each charged: an
   * invitation accepted by an existing account is also a sign-in of that account.
   */
  account: string | string[];
}

/**
 * For the password forms (login, owner setup, invitation acceptance), where a guess is cheap to
 * make. A token of the address's bucket and one of the account's are taken BEFORE the password is
 * checked, so parallel guesses cannot all get past a check that has not counted the others yet;
 * a success (or our own failure) gives them back. The hashing itself waits for a turn among the
 * platform's password checks (PLATFORM_PASSWORD_HASH_CONCURRENCY): past the queue, 503.
 */
export async function limitFailedAttempts<T>(ctx: ServerContext, attempter: Attempter, attempt: () => Promise<T>): Promise<T> {
  const { authFailures, accountFailures, passwordChecks } = ctx.limits;
  const addressKey = attempter.clientAddress ?? "unknown";
  const byAddress = authFailures.take(addressKey);
  if (!byAddress.allowed) throw rateLimited("Too many failed attempts from this address; try again later", byAddress.retryAfterSeconds);
  const accounts = typeof attempter.account === "string" ? [attempter.account] : attempter.account;
  const taken: string[] = [];
  for (const account of accounts) {
    const byAccount = accountFailures.take(account);
    if (!byAccount.allowed) {
      authFailures.giveBack(addressKey);
      for (const takenAccount of taken) accountFailures.giveBack(takenAccount);
      throw rateLimited("Too many failed attempts for this account; try again later", byAccount.retryAfterSeconds);
    }
    taken.push(account);
  }
  let counted = false;
  const turn = await passwordChecks.acquire();
  try {
    if (!turn.acquired) {
      throw new ApiError("SERVER_BUSY", "Too many password checks at once; try again in a moment", { "Retry-After": "1" });
    }
    return await attempt();
  } catch (error) {
    // A refusal of the caller's (wrong password, wrong token, taken setup) counts; ours does not.
    counted = error instanceof ApiError && error.status < 500 && error.code !== "RATE_LIMITED";
    throw error;
  } finally {
    if (turn.acquired) turn.release();
    if (!counted) {
      authFailures.giveBack(addressKey);
      for (const account of accounts) accountFailures.giveBack(account);
    }
  }
}

/**
 * Keys and session cookies are long random secrets, which no address can guess by trying, and
 * behind a TLS proxy every client shares one address: a valid one is never refused because of
 * the address's failures. Only failed attempts are counted, and once the address has none left
 * they are answered 429 instead of 401.
 */
function failedAttempt(ctx: ServerContext, clientAddress: string | null, failure: ApiError): ApiError {
  const allowance = ctx.limits.authFailures.take(clientAddress ?? "unknown");
  if (allowance.allowed) return failure;
  return rateLimited("Too many failed authentication attempts", allowance.retryAfterSeconds);
}

export function authenticate(ctx: ServerContext, request: Request, source: RequestSource): Principal {
  const clientAddress = source.clientAddress;
  const header = request.headers.get("authorization");
  let identity: Omit<Principal, "workspaceId" | "role" | "clientAddress"> & {
    defaultWorkspaceId: string | null;
    /** For a key: the other workspaces it was made to act in; a session may act in any of its user's. */
    otherWorkspaceIds?: string[];
  };
  let cookieToken: string | undefined;
  try {
    if (header !== null) {
      const match = BEARER_FORM.exec(header);
      if (!match) throw new ApiError("INVALID_API_KEY", "Authorization header must be 'Bearer svc_...'");
      const key = findUsableKey(ctx.db, match[1]!);
      // Rate limit before the quota, so refused requests do not spend it.
      const limit = ctx.limits.api.take(`key:${key.id}`);
      if (!limit.allowed) throw rateLimited("Rate limit exceeded", limit.retryAfterSeconds);
      spendKeyUsage(ctx.db, key);
      identity = {
        userId: key.userId,
        via: "api_key",
        apiKeyId: key.id,
        sessionTokenHash: null,
        defaultWorkspaceId: key.workspaceId,
        otherWorkspaceIds: key.otherWorkspaceIds ?? [],
      };
    } else {
      cookieToken = sessionTokenOf(request.headers.get("cookie"), source.https);
      const session = cookieToken ? findSession(ctx.db, cookieToken) : undefined;
      if (!session) throw new ApiError("UNAUTHORIZED", "Authentication required: send 'Authorization: Bearer svc_...'");
      assertAllowedHost(ctx.config, source);
      if (!SAFE_METHODS.has(request.method)) assertSameOrigin(request, source, true);
      const limit = ctx.limits.api.take(`user:${session.userId}`);
      if (!limit.allowed) throw rateLimited("Rate limit exceeded", limit.retryAfterSeconds);
      identity = {
        userId: session.userId,
        via: "session",
        apiKeyId: null,
        sessionTokenHash: session.tokenHash,
        defaultWorkspaceId: activeWorkspaceOf(ctx.db, session),
      };
    }
  } catch (error) {
    // Only presented credentials that fail count: the dashboard asks "am I logged in?" without any.
    const presented = header !== null || cookieToken !== undefined;
    if (error instanceof ApiError && error.status === 401 && presented) throw failedAttempt(ctx, clientAddress, error);
    throw error;
  }
  const { defaultWorkspaceId, otherWorkspaceIds, ...principal } = identity;
  const workspaceId = requestedWorkspace(request) ?? defaultWorkspaceId;
  // A key acts in the workspace it was made in, or in one it was explicitly made for: another
  // workspace of its user is as unknown to it as anyone else's.
  const inKeyScope = otherWorkspaceIds === undefined || workspaceId === defaultWorkspaceId || otherWorkspaceIds.includes(workspaceId!);
  const role = workspaceId && inKeyScope ? roleIn(ctx.db, workspaceId, principal.userId) : undefined;
  // A workspace the caller does not belong to is "not found", like any other workspace's resource.
  if (!workspaceId || !role) throw new ApiError("WORKSPACE_NOT_FOUND", "Workspace not found");
  return { ...principal, workspaceId, role, clientAddress };

}

function requestedWorkspace(request: Request): string | null {
  const queryStart = request.url.indexOf("?");
  if (queryStart < 0) return null;
  const query = new URLSearchParams(request.url.slice(queryStart + 1));
  return query.get("workspaceId") || query.get("organizationId") || null;
}

/** "name (id)" of the app or database a call acted on, from its answer or else its path. */
function auditTargetOf(params: Record<string, string> | undefined, answer: unknown): string | null {
  const body = answer as { app?: { id?: string; name?: string }; database?: { id?: string; name?: string } } | null;
  const resource = body?.app ?? body?.database;
  const id = resource?.id ?? params?.appId ?? params?.databaseId ?? params?.registryId ?? params?.volumeId ?? null;
  return resource?.name && id ? `${resource.name} (${id})` : id;
}

export function authPlugin(ctx: ServerContext) {
  // Decided in `transform`, which runs before the body, query and params are validated: a caller
  // without a valid key gets 401, and one whose role may not use the route 403, never validation
  // details of a route it may not use.
  const principals = new WeakMap<Request, { principal: Principal; permission: RoutePermission }>();
  return new Elysia({ name: "auth" }).macro({
    auth: {
      transform: ({ request, server, route, path }) => {
        const principal = authenticate(ctx, request, requestSourceOf(ctx.config, server, request));
        const permission = assertPermitted(principal.role, routeKeyOf(request.method, route, path));
        assertTwoFactorSetUp(ctx.db, principal, permission.beforeTwoFactorSetup === true);
        principals.set(request, { principal, permission });
      },
      resolve: ({ request }) => ({ principal: principals.get(request)!.principal }),
      afterHandle: ({ request, params, set, responseValue }) => {
        const { principal, permission } = principals.get(request)!;
        const status = typeof set.status === "number" ? set.status : 200;
        if (!permission.audit || status >= 300 || responseValue instanceof Response) return;
        recordAuditEvent(ctx.db, {
          workspaceId: principal.workspaceId,
          action: permission.audit,
          actor: auditActor(principal),
          target: auditTargetOf(params as Record<string, string>, responseValue),
        });
      },
      detail: { security: [{ bearerAuth: [] }, { sessionCookie: [] }] },
    },
  });
}

/** Who did it, for the audit log and operation histories. */
export function auditActor(principal: Principal) {
  return {
    type: principal.via === "api_key" ? ("api_key" as const) : ("user" as const),
    id: principal.apiKeyId ?? principal.userId,
    userId: principal.userId,
    clientAddress: principal.clientAddress,
  };
}
