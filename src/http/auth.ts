// Authentication of every API route: `Authorization: Bearer svc_...` or the dashboard's session
// cookie. Routes opt in with `{ auth: true }` and receive `principal`. Also applies the
// per-address limit on failed attempts (counted after the credential for keys and cookies, checked
// first for the password forms), the per-caller rate limit, the key's usage quota, the Origin
// check on cookie requests that change state, the `workspaceId` query parameter within the key's
// scope, the role the permission matrix (./permissions.ts) asks for, and the audit of the action.
import { Elysia } from "elysia";
import { ApiError } from "./errors";
import type { ServerContext } from "./context";
import { findUsableKey, spendKeyUsage } from "../api-keys/service";
import { findSession, readCookie, SESSION_COOKIE } from "../auth/service";
import { roleIn, workspacesOf, type Role } from "../workspaces/service";
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

/**
 * For the password forms (login, owner setup, invitation acceptance), where a guess is cheap to
 * make: refuse at once while the address has no failed attempts left, and count every refusal.
 */
export async function limitFailedAttempts<T>(ctx: ServerContext, clientAddress: string | null, attempt: () => Promise<T>): Promise<T> {
  const addressKey = clientAddress ?? "unknown";
  const allowance = ctx.limits.authFailures.check(addressKey);
  if (!allowance.allowed) {
    throw rateLimited("Too many failed attempts from this address; try again later", allowance.retryAfterSeconds);
  }
  try {
    return await attempt();
  } catch (error) {
    if (error instanceof ApiError && error.status < 500) ctx.limits.authFailures.take(addressKey);
    throw error;
  }
}

export function clientAddressOf(server: { requestIP(request: Request): { address: string } | null } | null, request: Request) {
  return server?.requestIP(request)?.address ?? null;
}

/** Cookie requests that change state must come from a page of this same host (no CSRF). */
export function assertSameOrigin(request: Request, required: boolean) {
  const origin = request.headers.get("origin");
  if (!origin) {
    if (required) throw new ApiError("CSRF_REJECTED", "Missing Origin header on a cookie-authenticated request");
    return;
  }
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    throw new ApiError("CSRF_REJECTED", "Malformed Origin header");
  }
  const host = request.headers.get("host") ?? new URL(request.url).host;
  if (originHost !== host) throw new ApiError("CSRF_REJECTED", "Cross-origin request refused");
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

export function authenticate(ctx: ServerContext, request: Request, clientAddress: string | null): Principal {
  const header = request.headers.get("authorization");
  let identity: Omit<Principal, "workspaceId" | "role" | "clientAddress"> & {
    defaultWorkspaceId: string | null;
    /** For a key: the other workspaces it was made to act in; a session may act in any of its user's. */
    otherWorkspaceIds?: string[];
  };
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
      const token = readCookie(request.headers.get("cookie"), SESSION_COOKIE);
      const session = token ? findSession(ctx.db, token) : undefined;
      if (!session) throw new ApiError("UNAUTHORIZED", "Authentication required: send 'Authorization: Bearer svc_...'");
      if (!SAFE_METHODS.has(request.method)) assertSameOrigin(request, true);
      const limit = ctx.limits.api.take(`user:${session.userId}`);
      if (!limit.allowed) throw rateLimited("Rate limit exceeded", limit.retryAfterSeconds);
      identity = {
        userId: session.userId,
        via: "session",
        apiKeyId: null,
        sessionTokenHash: session.tokenHash,
        defaultWorkspaceId: session.activeWorkspaceId ?? workspacesOf(ctx.db, session.userId)[0]?.id ?? null,
      };
    }
  } catch (error) {
    // Only presented credentials that fail count: the dashboard asks "am I logged in?" without any.
    const presented = header !== null || readCookie(request.headers.get("cookie"), SESSION_COOKIE) !== undefined;
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
  const id = resource?.id ?? params?.appId ?? params?.databaseId ?? null;
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
        const principal = authenticate(ctx, request, clientAddressOf(server, request));
        const permission = assertPermitted(principal.role, routeKeyOf(request.method, route, path));
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
