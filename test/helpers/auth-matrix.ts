// The same authentication checks against every authenticated route. When an issue adds routes
// it appends them to AUTHENTICATED_ROUTES; test/integration/auth-matrix.test.ts runs the lot and
// fails when the server documents an authenticated route that is missing here.
import { beforeAll, describe, expect, test } from "bun:test";
import type { TestServer } from "./server";
import { DATABASE_ROUTES } from "./databases";
import { APP_ROUTES } from "./apps";
import { VOLUME_BACKUP_ROUTES } from "./volume-backups";

/** The registry host of the matrix's registry credentials (the discard port of loopback). */
const MATRIX_REGISTRY = "127.0.0.1:9";
import { VOLUME_ROUTES } from "./volumes";

/** A key and the workspace it acts in. */
export interface Tenant {
  key: string;
  workspaceId: string;
}

export interface AuthenticatedRoute {
  method: string;
  /** Path with `:name` placeholders for resource ids, as declared in src/<domain>/index.ts. */
  path: string;
  /** The call uses its resource up (deletes or moves it): every allowed call gets a fresh one. */
  consumesResource?: boolean;
  /** A query string the request needs to succeed (`path=index.html`), added to the path. */
  query?: string;
  /** A valid body, so that only authentication can refuse the request; a function of the resource's ids when it names one. */
  body?: unknown | ((params: Record<string, string>) => unknown);
  /** Creates a resource owned by `owner` and returns the path parameters naming it (routes with ids). */
  resource?: (server: TestServer, owner: Tenant) => Promise<Record<string, string>>;
  /** Instead of `resource`, for ids of platform-wide things that belong to no workspace (machines). */
  params?: Record<string, string>;
  /** The route acts on the workspace itself (deletes it): it is let in with the owner key of a fresh, empty one. */
  freshWorkspace?: boolean;
}

/** Server settings for the matrix: it fails authentication on purpose far more often than the default limits allow. */
export const AUTH_MATRIX_ENV = {
  PLATFORM_AUTH_FAILURE_BURST: "100000",
  PLATFORM_API_RATE_BURST: "100000",
  // The matrix's registry credentials name it: a loopback port nothing listens on, so a login check fails at once, locally.
  PLATFORM_BUILD_REGISTRIES: MATRIX_REGISTRY,
};

let resourceCount = 0;

async function created(response: Promise<{ status: number; body: any }>) {
  const { status, body } = await response;
  if (status !== 201) throw new Error(`could not create a resource for the auth matrix: ${status} ${JSON.stringify(body)}`);
  return body;
}

const apiKeyOf = async (server: TestServer, owner: Tenant) => {
  const body = await created(server.request("POST", "/api/api-keys/", { key: owner.key, body: { name: "matrix resource" } }));
  return { keyId: body.id as string };
};

const invitationOf = async (server: TestServer, owner: Tenant) => {
  const email = `matrix-${++resourceCount}@example.com`;
  const body = await created(server.request("POST", "/api/organization/invitations", { key: owner.key, body: { email } }));
  return { invitationId: body.invitation.id as string };
};

/** The owner's credentials for MATRIX_REGISTRY: the ones it has, or new ones (one per registry and workspace). */
const registryCredentialOf = async (server: TestServer, owner: Tenant) => {
  const listed = await server.request("GET", "/api/registries/", { key: owner.key });
  const existing = listed.body.registries?.find((entry: { registry: string }) => entry.registry === MATRIX_REGISTRY);
  if (existing) return { registryId: existing.id as string };
  const body = await created(server.request("POST", "/api/registries/", { key: owner.key, body: { registry: MATRIX_REGISTRY, username: "matrix", password: "matrix-password" } }));
  return { registryId: body.registry.id as string };
};

/** A member of `owner`'s workspace: a new account that accepted an invitation. */
export const memberOf = async (server: TestServer, owner: Tenant) => {
  const email = `matrix-member-${++resourceCount}@example.com`;
  const invitation = await created(server.request("POST", "/api/organization/invitations", { key: owner.key, body: { email } }));
  const accepted = await server.request("POST", `/api/organization/invitations/${invitation.invitation.id}/accept`, {
    body: { password: "matrix-member-password" },
  });
  if (accepted.status !== 200) throw new Error(`could not add a member for the auth matrix: ${JSON.stringify(accepted.body)}`);
  return { userId: accepted.body.user.id as string };
};

/** The owner key of a new, empty workspace (made by the command line, so with an owner of its own). */
export const freshWorkspaceOwner = (server: TestServer) => server.createKey("matrix fresh", `matrix-fresh-${++resourceCount}`);

export const AUTHENTICATED_ROUTES: AuthenticatedRoute[] = [
  { method: "GET", path: "/api/api-keys/" },
  { method: "POST", path: "/api/api-keys/", body: { name: "matrix" } },
  { method: "PUT", path: "/api/api-keys/:keyId", body: { name: "renamed" }, resource: apiKeyOf },
  { method: "DELETE", path: "/api/api-keys/:keyId", resource: apiKeyOf },
  { method: "GET", path: "/api/organization/invitations" },
  { method: "POST", path: "/api/organization/invitations", body: { email: "matrix-invitee@example.com" } },
  { method: "DELETE", path: "/api/organization/invitations/:invitationId", resource: invitationOf },
  { method: "GET", path: "/api/organization/members" },
  { method: "PATCH", path: "/api/organization/members/:userId", body: { role: "viewer" }, resource: memberOf },
  { method: "DELETE", path: "/api/organization/members/:userId", resource: memberOf },
  { method: "GET", path: "/api/organization/api-keys" },
  { method: "DELETE", path: "/api/organization/api-keys/:keyId", resource: apiKeyOf },
  { method: "DELETE", path: "/api/organization/", freshWorkspace: true },
  { method: "GET", path: "/api/organization/audit-log" },
  { method: "GET", path: "/api/organization/usage" },
  { method: "GET", path: "/api/auth/session" },
  { method: "POST", path: "/api/auth/set-active-organization", body: { organizationId: "ws_placeholder" } },
  { method: "POST", path: "/api/auth/logout" },
  // Keys are let in and told to use a session (400 SESSION_REQUIRED): a key is no sign-in.
  { method: "GET", path: "/api/auth/two-factor" },
  { method: "POST", path: "/api/auth/two-factor/setup", body: { password: "matrix-password" } },
  { method: "POST", path: "/api/auth/two-factor/enable", body: { code: "123456" } },
  { method: "POST", path: "/api/auth/two-factor/disable", body: { password: "matrix-password" } },
  { method: "PUT", path: "/api/organization/two-factor-requirement", body: { required: false }, freshWorkspace: true },
  { method: "GET", path: "/api/github-app/installations" },
  { method: "POST", path: "/api/github-app/install-link" },
  { method: "GET", path: "/api/github-app/setup", query: "installation_id=1&state=x.y" },
  { method: "GET", path: "/api/platform/status" },
  { method: "GET", path: "/api/machines/" },
  { method: "GET", path: "/api/machines/:machineId", params: { machineId: "local" } },
  // Once the workspace has credentials for the registry, a second add is 409 REGISTRY_TAKEN: still let in.
  { method: "GET", path: "/api/registries/" },
  { method: "POST", path: "/api/registries/", body: { registry: MATRIX_REGISTRY, username: "matrix", password: "matrix-password" } },
  { method: "POST", path: "/api/registries/:registryId/test", resource: registryCredentialOf },
  { method: "DELETE", path: "/api/registries/:registryId", resource: registryCredentialOf },
  ...DATABASE_ROUTES,
  ...APP_ROUTES,
  ...VOLUME_BACKUP_ROUTES,
  ...VOLUME_ROUTES,
];

/** The route's body for a request on the resource `params` names. */
export function bodyOf(route: AuthenticatedRoute, params: Record<string, string> = {}): unknown {
  return typeof route.body === "function" ? route.body(params) : route.body;
}

/** `/api/api-keys/:keyId` -> `/api/api-keys/{keyId}`, the OpenAPI spelling. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z]+)/g, "{$1}");

function fillPath(path: string, params: Record<string, string> = {}): string {
  return path.replace(/:([A-Za-z]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? "placeholder_0000"));
}

/** The route's path with its ids filled in, and its query when it has one. */
export function requestPathOf(route: AuthenticatedRoute, params: Record<string, string> = {}): string {
  const path = fillPath(route.path, params);
  return route.query ? withQuery(path, route.query) : path;
}

function withQuery(path: string, query: string): string {
  return path + (path.includes("?") ? "&" : "?") + query;
}

export function sessionCookieOf(response: { headers: Headers }): string {
  const cookie = response.headers.get("set-cookie");
  if (!cookie) throw new Error("no session cookie was set");
  return cookie.split(";")[0]!;
}

/** An error answer in the envelope of the spec: `{ success: false, error, code }`. */
export function expectErrorEnvelope(response: { status: number; body: any }, status: number, code?: string) {
  // Plain values rather than toMatchObject(expect.any(...)): bun 1.4 writes the matchers into the received object.
  const { success, error, code: actualCode } = response.body ?? {};
  expect({ status: response.status, success, code: code === undefined ? typeof actualCode : actualCode }).toEqual({
    status,
    success: false,
    code: code ?? "string",
  });
  expect(typeof error === "string" && error.length > 0 ? "message" : error).toBe("message");
}

/**
 * Two tenants. `platform keys create` gives each workspace it makes an owner of its own; the
 * caller is a second user, invited as admin into "default" only, with a key made from the session
 * its acceptance starts. `other` is a workspace that user does not belong to.
 */
export async function prepareTenants(server: TestServer): Promise<{ caller: Tenant; other: Tenant }> {
  const owner = await server.createKey("matrix owner", "default");
  const other = await server.createKey("matrix other", "matrix-other");
  const invitation = await created(
    server.request("POST", "/api/organization/invitations", {
      key: owner.key,
      body: { email: "matrix-caller@example.com", role: "admin" },
    }),
  );
  const accepted = await server.request("POST", `/api/organization/invitations/${invitation.invitation.id}/accept`, {
    body: { password: "matrix-caller-password" },
  });
  const callerKey = await created(
    server.request("POST", "/api/api-keys/", {
      headers: { cookie: sessionCookieOf(accepted), origin: server.baseUrl },
      body: { name: "matrix caller" },
    }),
  );
  return {
    caller: { key: callerKey.key, workspaceId: owner.workspaceId },
    other: { key: other.key, workspaceId: other.workspaceId },
  };
}

type Send = (route: AuthenticatedRoute) => Promise<{ status: number; body: any }>;

/** Tests that make a resource (a deployed app, a running database) wait for it; bun's 5 s is too short under load. */
const RESOURCE_TIMEOUT_MS = 180_000;

/** One test per route and check. The server must run with AUTH_MATRIX_ENV. */
export function describeAuthMatrix(getServer: () => TestServer, routes: AuthenticatedRoute[] = AUTHENTICATED_ROUTES) {
  let tenants: { caller: Tenant; other: Tenant };
  let disabledKey: string;
  let revokedKey: string;

  beforeAll(async () => {
    const server = getServer();
    tenants = await prepareTenants(server);
    const makeKey = (name: string) =>
      created(server.request("POST", "/api/api-keys/", { key: tenants.caller.key, body: { name } }));
    const disabled = await makeKey("matrix disabled");
    await server.request("PUT", `/api/api-keys/${disabled.id}`, { key: tenants.caller.key, body: { enabled: false } });
    disabledKey = disabled.key;
    const revoked = await makeKey("matrix revoked");
    await server.request("DELETE", `/api/api-keys/${revoked.id}`, { key: tenants.caller.key });
    revokedKey = revoked.key;
  }, 60_000);

  // Authentication is decided before the body is read, so the refused requests carry none.
  const withAuthorization = (authorization: string): Send => (route) =>
    getServer().request(route.method, fillPath(route.path), { headers: { authorization } });
  const randomPart = () => tenants.caller.key.slice(-40);
  const unauthorized: [string, Send][] = [
    ["no Authorization header", (route) => getServer().request(route.method, fillPath(route.path))],
    ["Basic scheme", withAuthorization("Basic YWRtaW46YWRtaW4=")],
    ["Bearer with a key not starting svc_", (route) => withAuthorization(`Bearer key_${randomPart()}`)(route)],
    ["a valid key without 'Bearer '", (route) => withAuthorization(tenants.caller.key)(route)],
    ["an unknown svc_ key", withAuthorization(`Bearer svc_${"A1b2C3d4E5".repeat(4)}`)],
    ["an unknown session cookie", (route) =>
      getServer().request(route.method, fillPath(route.path), {
        headers: { cookie: `platform_session=${"x".repeat(43)}`, origin: getServer().baseUrl },
      })],
    ["a disabled key", (route) => withAuthorization(`Bearer ${disabledKey}`)(route)],
    ["a revoked key", (route) => withAuthorization(`Bearer ${revokedKey}`)(route)],
  ];

  for (const route of routes) {
    const hasParams = route.path.includes(":");
    if (hasParams && !route.resource && !route.params) {
      throw new Error(`${route.method} ${route.path} has path parameters but neither resource() nor params`);
    }
    describe(`${route.method} ${route.path}`, () => {
      for (const [name, send] of unauthorized) {
        test(`${name} -> 401`, async () => expectErrorEnvelope(await send(route), 401));
      }

      test("workspaceId of a workspace the caller is not a member of -> 404", async () => {
        const path = withQuery(requestPathOf(route), `workspaceId=${tenants.other.workspaceId}`);
        const response = await getServer().request(route.method, path, { key: tenants.caller.key, body: bodyOf(route) });
        expectErrorEnvelope(response, 404);
      });

      test("the caller's own key is let in", async () => {
        const params = route.resource ? await route.resource(getServer(), tenants.caller) : route.params;
        const key = route.freshWorkspace ? (await freshWorkspaceOwner(getServer())).key : tenants.caller.key;
        const response = await getServer().request(route.method, requestPathOf(route, params), { key, body: bodyOf(route, params) });
        expect([401, 403, 404]).not.toContain(response.status);
        expect(response.status).toBeLessThan(500);
      }, RESOURCE_TIMEOUT_MS);

      if (route.resource) {
        test("another workspace's resource -> 404, and its owner can reach it", async () => {
          const params = await route.resource!(getServer(), tenants.other);
          const path = requestPathOf(route, params);
          expectErrorEnvelope(await getServer().request(route.method, path, { key: tenants.caller.key, body: bodyOf(route, params) }), 404);
          const byOwner = await getServer().request(route.method, path, { key: tenants.other.key, body: bodyOf(route, params) });
          expect(byOwner.status).toBeLessThan(300);
        }, RESOURCE_TIMEOUT_MS);
      }
    });
  }
}
