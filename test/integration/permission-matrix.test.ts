// Every authenticated route under every role, the way the auth matrix covers authentication: one
// user of each role in one workspace; an allowed role is let through, any other gets 403
// `FORBIDDEN`. The expected roles are written out below as the README documents them, apart from
// src/http/permissions.ts, so a route missing there (refused to all) or granted wrongly fails here.
// Also: viewers read env values and connection strings masked, and app and database actions land
// in the audit log with their actor.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";
import { appZip, deleteAllApps, deployZip } from "../helpers/apps";
import { startServerWithDns } from "../helpers/domains";
import {
  bodyOf,
  AUTH_MATRIX_ENV,
  AUTHENTICATED_ROUTES,
  expectErrorEnvelope,
  freshWorkspaceOwner,
  requestPathOf,
  sessionCookieOf,
  type AuthenticatedRoute,
  type Tenant,
} from "../helpers/auth-matrix";
import { removeMatrixDatabases } from "../helpers/databases";
import { removeMatrixVolumes } from "../helpers/volume-backups";
import { PERMISSIONS } from "../../src/http/permissions";
import type { Role } from "../../src/workspaces/service";

const ROLES: Role[] = ["owner", "admin", "member", "viewer"];
const EVERYONE: Role[] = ROLES;
const OPERATORS: Role[] = ["owner", "admin", "member"];
const MANAGERS: Role[] = ["owner", "admin"];
const OWNERS: Role[] = ["owner"];

/** The documented matrix. */
const EXPECTED: Record<string, Role[]> = {
  "GET /api/auth/session": EVERYONE,
  "POST /api/auth/logout": EVERYONE,
  "POST /api/auth/set-active-organization": EVERYONE,
  "GET /api/auth/two-factor": EVERYONE,
  "POST /api/auth/two-factor/setup": EVERYONE,
  "POST /api/auth/two-factor/enable": EVERYONE,
  "POST /api/auth/two-factor/disable": EVERYONE,
  "PUT /api/organization/two-factor-requirement": OWNERS,
  "GET /api/api-keys/": EVERYONE,
  "POST /api/api-keys/": EVERYONE,
  "PUT /api/api-keys/:keyId": EVERYONE,
  "DELETE /api/api-keys/:keyId": EVERYONE,
  "GET /api/organization/members": EVERYONE,
  "PATCH /api/organization/members/:userId": MANAGERS,
  "DELETE /api/organization/members/:userId": MANAGERS,
  "GET /api/organization/invitations": MANAGERS,
  "POST /api/organization/invitations": MANAGERS,
  "DELETE /api/organization/invitations/:invitationId": MANAGERS,
  "GET /api/organization/api-keys": MANAGERS,
  "DELETE /api/organization/api-keys/:keyId": MANAGERS,
  "GET /api/organization/audit-log": MANAGERS,
  "GET /api/organization/usage": EVERYONE,
  "DELETE /api/organization/": OWNERS,
  "GET /api/github-app/installations": EVERYONE,
  "POST /api/github-app/install-link": MANAGERS,
  "GET /api/github-app/setup": MANAGERS,
  "GET /api/platform/status": EVERYONE,
  "GET /api/machines/": EVERYONE,
  "GET /api/machines/:machineId": EVERYONE,
  "GET /api/apps/": EVERYONE,
  "POST /api/apps/deploy": OPERATORS,
  "POST /api/apps/inspect-env": OPERATORS,
  "POST /api/apps/deploy-from-repo": OPERATORS,
  "POST /api/apps/deploy-image": OPERATORS,
  "GET /api/apps/:appId": EVERYONE,
  "POST /api/apps/:appId/start": OPERATORS,
  "POST /api/apps/:appId/stop": OPERATORS,
  "POST /api/apps/:appId/restart": OPERATORS,
  "DELETE /api/apps/:appId": OPERATORS,
  "GET /api/apps/:appId/logs": EVERYONE,
  "GET /api/apps/:appId/traffic": EVERYONE,
  "GET /api/apps/:appId/health": EVERYONE,
  "GET /api/apps/:appId/env": EVERYONE,
  "PUT /api/apps/:appId/env": OPERATORS,
  "DELETE /api/apps/:appId/env/:name": OPERATORS,
  "PUT /api/apps/:appId/settings": OPERATORS,
  "GET /api/apps/:appId/builds": EVERYONE,
  "GET /api/apps/:appId/builds/:buildId": EVERYONE,
  "GET /api/apps/:appId/builds/:buildId/log": EVERYONE,
  "POST /api/apps/:appId/redeploy": OPERATORS,
  "POST /api/apps/:appId/builds/:buildId/rollback": OPERATORS,
  "POST /api/apps/:appId/builds/:buildId/cancel": OPERATORS,
  "GET /api/apps/:appId/domains": EVERYONE,
  "POST /api/apps/:appId/domains": OPERATORS,
  "DELETE /api/apps/:appId/domains/:domainId": OPERATORS,
  "GET /api/apps/:appId/domains/:domainId": EVERYONE,
  "POST /api/apps/:appId/domains/:domainId/verify": OPERATORS,
  "PUT /api/apps/:appId/domains/:domainId/certificate": OPERATORS,
  "DELETE /api/apps/:appId/domains/:domainId/certificate": OPERATORS,
  "GET /api/apps/:appId/deploy-hook": OPERATORS,
  "POST /api/apps/:appId/deploy-hook": OPERATORS,
  "GET /api/apps/:appId/webhook": OPERATORS,
  "POST /api/apps/:appId/webhook": OPERATORS,
  "GET /api/apps/:appId/fs/list": EVERYONE,
  "GET /api/apps/:appId/fs/history": EVERYONE,
  "GET /api/apps/:appId/history": EVERYONE,
  "GET /api/apps/:appId/fs/file": OPERATORS,
  "GET /api/apps/:appId/fs/archive": OPERATORS,
  "POST /api/apps/:appId/fs/file": OPERATORS,
  "PUT /api/apps/:appId/fs/file": OPERATORS,
  "POST /api/apps/:appId/fs/folder": OPERATORS,
  "POST /api/apps/:appId/fs/move": OPERATORS,
  "POST /api/apps/:appId/fs/delete": OPERATORS,
  "POST /api/apps/:appId/fs/bulk-rename/preview": OPERATORS,
  "POST /api/apps/:appId/fs/bulk-rename/apply": OPERATORS,
  "GET /api/registries/": EVERYONE,
  "POST /api/registries/": OPERATORS,
  "POST /api/registries/:registryId/test": OPERATORS,
  "DELETE /api/registries/:registryId": OPERATORS,
  "GET /api/volumes/": EVERYONE,
  "GET /api/volumes/:volumeId": EVERYONE,
  "POST /api/volumes/:volumeId/attach": OPERATORS,
  "DELETE /api/volumes/:volumeId": MANAGERS,
  "GET /api/databases/": EVERYONE,
  "POST /api/databases/": OPERATORS,
  "GET /api/databases/:databaseId": EVERYONE,
  "PATCH /api/databases/:databaseId/settings": OPERATORS,
  "GET /api/databases/:databaseId/stats": EVERYONE,
  "GET /api/databases/:databaseId/logs": EVERYONE,
  "POST /api/databases/:databaseId/start": OPERATORS,
  "POST /api/databases/:databaseId/stop": OPERATORS,
  "DELETE /api/databases/:databaseId": MANAGERS,
  "POST /api/databases/:databaseId/rotate-password": OPERATORS,
  "GET /api/databases/:databaseId/operations": EVERYONE,
  "POST /api/databases/:databaseId/backups": OPERATORS,
  "GET /api/databases/:databaseId/backups": EVERYONE,
  "GET /api/databases/:databaseId/backups/:backupId": EVERYONE,
  "POST /api/databases/:databaseId/backups/upload": OPERATORS,
  "DELETE /api/databases/:databaseId/backups/:backupId": MANAGERS,
  "GET /api/databases/:databaseId/backups/:backupId/download": OPERATORS,
  "POST /api/databases/:databaseId/restore": MANAGERS,
  "POST /api/databases/:databaseId/backups/:backupId/verify": OPERATORS,
  "GET /api/databases/:databaseId/backup-schedule": EVERYONE,
  "PUT /api/databases/:databaseId/backup-schedule": MANAGERS,
  "DELETE /api/databases/:databaseId/backup-schedule": MANAGERS,
  "POST /api/volumes/:volumeId/backups": OPERATORS,
  "GET /api/volumes/:volumeId/backups": EVERYONE,
  "GET /api/volumes/:volumeId/backups/:backupId": EVERYONE,
  "DELETE /api/volumes/:volumeId/backups/:backupId": MANAGERS,
  "GET /api/volumes/:volumeId/backups/:backupId/download": OPERATORS,
  "POST /api/volumes/:volumeId/backups/:backupId/verify": OPERATORS,
  "POST /api/volumes/:volumeId/restore": MANAGERS,
  "GET /api/volumes/:volumeId/restores": EVERYONE,
  "GET /api/volumes/:volumeId/restores/:restoreId": EVERYONE,
  "GET /api/volumes/:volumeId/backup-schedule": EVERYONE,
  "PUT /api/volumes/:volumeId/backup-schedule": MANAGERS,
  "DELETE /api/volumes/:volumeId/backup-schedule": MANAGERS,
};

/** A route missing here fails: each route's roles are written out above, apart from the server's table. */
const expectedRoles = (key: string): Role[] | undefined => EXPECTED[key];

let server: TestServer;
let stopServer: () => Promise<void>;
const tenants = {} as Record<Role, Tenant>;

beforeAll(async () => {
  // With a DNS server of its own, where the matrix's custom domains are proved.
  ({ server, stop: stopServer } = await startServerWithDns(AUTH_MATRIX_ENV));
  const owner = await server.createKey("permission owner", "default");
  tenants.owner = owner;
  for (const role of ["admin", "member", "viewer"] as const) {
    const invitation = await server.request("POST", "/api/organization/invitations", {
      key: owner.key,
      body: { email: `permission-${role}@example.com`, role },
    });
    const accepted = await server.request("POST", `/api/organization/invitations/${invitation.body.invitation.id}/accept`, {
      body: { password: `${role}-password-1` },
    });
    const made = await server.request("POST", "/api/api-keys/", {
      headers: { cookie: sessionCookieOf(accepted), origin: server.baseUrl },
      body: { name: `permission ${role}` },
    });
    if (made.status !== 201) throw new Error(`could not make the ${role}'s key: ${JSON.stringify(made.body)}`);
    tenants[role] = { key: made.body.key, workspaceId: owner.workspaceId };
  }
}, 60_000);

afterAll(async () => {
  await deleteAllApps(server, tenants.owner.key);
  await stopServer?.();
  removeMatrixDatabases();
  await removeMatrixVolumes();
}, 120_000);

// Workspace resources are made by the owner and shared between calls, except for the calls that
// use them up (DELETE, and routes marked `consumesResource`); an API key route works on a key of
// the caller itself (any other is 404 to it).
const shared = new Map<AuthenticatedRoute["resource"], Record<string, string>>();
async function paramsFor(route: AuthenticatedRoute, role: Role, allowed: boolean): Promise<Record<string, string> | undefined> {
  if (!route.resource) return route.params;
  if (route.path.startsWith("/api/api-keys/")) return route.resource(server, tenants[role]);
  if ((route.method === "DELETE" || route.consumesResource) && allowed) return route.resource(server, tenants.owner);
  if (!shared.has(route.resource)) shared.set(route.resource, await route.resource(server, tenants.owner));
  return shared.get(route.resource);
}

const routeOf = (key: string) => AUTHENTICATED_ROUTES.find((route) => `${route.method} ${route.path}` === key)!;

// Before the matrix, whose calls then reuse the app and database made here.
describe("secrets and the viewer", () => {
  test("env values: real for a member, `****` for a viewer", async () => {
    const { appId } = (await paramsFor(routeOf("GET /api/apps/:appId"), "owner", false))!;
    const put = await server.request("PUT", `/api/apps/${appId}/env`, { key: tenants.member.key, body: { envVars: { API_TOKEN: "s3cret-token-value" } } });
    expect(put.status).toBe(200);
    const asMember = await server.request("GET", `/api/apps/${appId}/env`, { key: tenants.member.key });
    expect(asMember.body.envVars.API_TOKEN).toBe("s3cret-token-value");
    const asViewer = await server.request("GET", `/api/apps/${appId}/env`, { key: tenants.viewer.key });
    expect(asViewer.status).toBe(200);
    expect(asViewer.body.envVars.API_TOKEN).toBe("****");
    expect(JSON.stringify(asViewer.body)).not.toContain("s3cret-token-value");
  }, 120_000);

  test("connection strings: with the password for a member, masked for a viewer", async () => {
    const { databaseId } = (await paramsFor(routeOf("GET /api/databases/:databaseId"), "owner", false))!;
    const asMember = (await server.request("GET", `/api/databases/${databaseId}`, { key: tenants.member.key })).body.database;
    const password = new URL(asMember.connectionString).password;
    expect(password).not.toBe("****");
    expect(password.length).toBeGreaterThan(8);
    const asViewer = await server.request("GET", `/api/databases/${databaseId}`, { key: tenants.viewer.key });
    expect(asViewer.status).toBe(200);
    expect(new URL(asViewer.body.database.connectionString).password).toBe("****");
    expect(new URL(asViewer.body.database.internalConnectionString).password).toBe("****");
    expect(JSON.stringify(asViewer.body)).not.toContain(password);
    // While it runs (the matrix stops it later), for the audit log below.
    const rotated = await server.request("POST", `/api/databases/${databaseId}/rotate-password`, { key: tenants.member.key, body: {} });
    expect(rotated.status).toBe(202);
  }, 120_000);
});

describe("the session tells each role what it may call", () => {
  for (const role of ROLES) {
    test(`${role}: GET /api/auth/session lists the routes of its row, as the OpenAPI document writes them`, async () => {
      const { body } = await server.request("GET", "/api/auth/session", { key: tenants[role].key });
      const expected = Object.keys(EXPECTED)
        .filter((key) => EXPECTED[key]!.includes(role))
        .map((key) => key.replace(/:([A-Za-z]+)/g, "{$1}"));
      expect(body.permissions.toSorted()).toEqual(expected.toSorted());
    });
  }
});

// Deleting an app takes the shared one away: those calls run last, so the others reuse it.
const ordered = [...AUTHENTICATED_ROUTES].sort((a, b) => Number(a.method === "DELETE") - Number(b.method === "DELETE"));

for (const route of ordered) {
  const key = `${route.method} ${route.path}`;
  describe(key, () => {
    for (const role of ROLES) {
      const roles = expectedRoles(key);
      const allowed = roles?.includes(role) ?? false;
      test(`${role} -> ${allowed ? "let in" : "403 FORBIDDEN"}`, async () => {
        if (!roles) throw new Error(`${key} has no entry in the permission matrix (src/http/permissions.ts)`);
        expect(PERMISSIONS[key]?.roles.toSorted()).toEqual(roles.toSorted());
        const params = await paramsFor(route, role, allowed);
        const callerKey = route.freshWorkspace && allowed ? (await freshWorkspaceOwner(server)).key : tenants[role].key;
        const response = await server.request(route.method, requestPathOf(route, params), { key: callerKey, body: bodyOf(route, params) });
        if (allowed) {
          expect([401, 403, 404]).not.toContain(response.status);
          expect(response.status).toBeLessThan(500);
        } else {
          expectErrorEnvelope(response, 403, "FORBIDDEN");
          expect(response.body.error).toContain(`yours is ${role}`);
        }
      }, 180_000);
    }
  });
}

describe("DELETE /api/apps/:appId?deleteVolumes=true", () => {
  test("needs the roles that delete a volume (a member is refused), and records volume.deleted per volume", async () => {
    const volumes = JSON.stringify([{ name: "matrix-app-data", mountPath: "/data" }]);
    // Nothing in the ZIP is detected: its build fails at once and no container mounts the volume.
    const deployed = await deployZip(server, tenants.owner.key, { name: "matrix-with-volume", runtime: "node", memoryMB: "64", volumes }, appZip({ "README.txt": "nothing to run" }));
    expect(deployed.status).toBe(202);
    const { id: appId, volumes: [volume] } = deployed.body.app;
    const byMember = await server.request("DELETE", `/api/apps/${appId}?deleteVolumes=true`, { key: tenants.member.key });
    expectErrorEnvelope(byMember, 403, "FORBIDDEN");
    expect((await server.request("GET", `/api/apps/${appId}`, { key: tenants.owner.key })).status).toBe(200);

    expect((await server.request("DELETE", `/api/apps/${appId}?deleteVolumes=true`, { key: tenants.admin.key })).status).toBe(202);
    const { body } = await server.request("GET", "/api/organization/audit-log?limit=500", { key: tenants.owner.key });
    expect(body.events.some((event: any) => event.action === "volume.deleted" && event.target === `matrix-app-data (${volume.id})`)).toBe(true);
  }, 120_000);
});

describe("audit of app and database actions", () => {
  test("deploys, deletions, env changes and rotations are recorded with their actor and target", async () => {
    const { body } = await server.request("GET", "/api/organization/audit-log?limit=500", { key: tenants.owner.key });
    const actions = new Set(body.events.map((event: { action: string }) => event.action));
    for (const action of ["app.deployed", "app.deleted", "app.env_changed", "app.settings_changed", "database.created", "database.deleted", "database.password_rotated"]) {
      expect(actions).toContain(action);
    }
    // The shared matrix app's deploy (the volume routes' apps are deployed too).
    const deployed = body.events.find((event: any) => event.action === "app.deployed" && event.target.startsWith("matrix-app-"));
    expect(deployed.actor.type).toBe("api_key");
    expect(deployed.target).toMatch(/^matrix-app-\d+ \(app_/);
    // Refused calls are not recorded: the viewer never deleted anything.
    const viewerKeyIds = (await server.request("GET", "/api/api-keys/", { key: tenants.viewer.key })).body.keys.map((key: { id: string }) => key.id);
    const byViewer = body.events.filter((event: any) => viewerKeyIds.includes(event.actor.id) && /^(app|database)\./.test(event.action));
    expect(byViewer).toEqual([]);
  });
});
