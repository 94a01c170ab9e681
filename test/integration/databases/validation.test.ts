// Bad input to /api/databases is refused before anything reaches Docker or an engine: every
// limit of the spec's table, unknown engines and machines, hostile names; another workspace's
// database is not found on any route; conflicting operations get 409 BUSY; names are unique
// among the workspace's databases and apps.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { dockerCli } from "../../helpers/docker";
import { expectErrorEnvelope } from "../../helpers/auth-matrix";
import { createDatabase, deleteAllDatabases, removeWorkspaceNetworks, waitForStatus } from "../../helpers/databases";
import { appZip, deleteAllApps, deployZip, waitForStatus as waitForAppStatus } from "../../helpers/apps";

let server: TestServer;
let key: string;
let workspaceId: string;
let otherKey: string;
let otherWorkspaceId: string;
/** A running Redis database of the first workspace, shared by the tests that need one. */
let database: any;

beforeAll(async () => {
  server = await TestServer.start();
  ({ key, workspaceId } = await server.createKey("validation"));
  ({ key: otherKey, workspaceId: otherWorkspaceId } = await server.createKey("other", "other-workspace"));
  database = (await createDatabase(server, key, { name: "shared", engine: "redis", memoryMB: 256 })).database;
  await waitForStatus(server, key, database.id, ["running"]);
});
afterAll(async () => {
  await deleteAllDatabases(server, key);
  await deleteAllDatabases(server, otherKey);
  await server.stop();
  removeWorkspaceNetworks(workspaceId, otherWorkspaceId);
});

const create = (body: Record<string, unknown>) => server.request("POST", "/api/databases/", { key, body });
const valid = { name: "valid-name", engine: "postgresql" };

describe("create refuses what the spec does not allow", () => {
  const cases: [string, Record<string, unknown>][] = [
    ["memoryMB below 256", { memoryMB: 255 }],
    ["memoryMB not an integer", { memoryMB: 300.5 }],
    ["storageGB below 1", { storageGB: 0 }],
    ["a password of 7 characters", { password: "1234567" }],
    ["a password with a space", { password: "pass word 123" }],
    ["a password with a newline", { password: "password\nFLUSHALL" }],
    ["an unknown engine", { engine: "oracle" }],
    ["no engine", { engine: undefined }],
    ["no name", { name: undefined }],
    ["a version with a shell metacharacter", { version: "17;rm -rf /" }],
    ["a version with a path", { version: "../17" }],
    ["a version of 33 characters", { version: "1".repeat(33) }],
    ["a PostgreSQL role name starting pg_", { username: "pg_admin" }],
    ["a PostgreSQL template database", { databaseName: "template1" }],
    ["a MySQL system database", { engine: "mysql", databaseName: "mysql" }],
    ["a MySQL username over 32 characters", { engine: "mysql", username: "u".repeat(33) }],
    ["a MongoDB system database", { engine: "mongodb", databaseName: "admin" }],
  ];
  const hostile = ["a;rm -rf /", "../x", "x'y", 'x"y', "Upper", "a".repeat(64), "", "-lead", "trail-", "a b", "a_b", "ünï", "$(id)"];
  for (const name of hostile) cases.push([`the name ${JSON.stringify(name)}`, { name }]);
  for (const field of ["username", "databaseName"]) {
    for (const value of ["a;drop table x", "x'--", 'x"y', "Robert", "1abc", "a-b", "a".repeat(64), "", "a b"]) {
      cases.push([`the ${field} ${JSON.stringify(value)}`, { [field]: value }]);
    }
  }

  for (const [what, change] of cases) {
    test(`${what} -> 400`, async () => {
      const response = await create({ ...valid, ...change });
      expectErrorEnvelope(response, 400, "VALIDATION_FAILED");
    });
  }

  test("an unknown machine -> 400 UNKNOWN_MACHINE", async () => {
    expectErrorEnvelope(await create({ ...valid, machineId: "elsewhere" }), 400, "UNKNOWN_MACHINE");
  });

  test("nothing was created by the refused requests", async () => {
    const { body } = await server.request("GET", "/api/databases/", { key });
    expect(body.databases.map((listed: any) => listed.name)).toEqual(["shared"]);
    const containers = (await dockerCli("ps", "-aq", "--filter", `label=platform.workspace=${workspaceId}`)).trim().split("\n");
    expect(containers.filter(Boolean).length).toBe(1);
  });

  test("a name already used in the workspace -> 409 NAME_TAKEN; another workspace may use it", async () => {
    expectErrorEnvelope(await create({ name: "shared", engine: "redis" }), 409, "NAME_TAKEN");
    const elsewhere = await server.request("POST", "/api/databases/", { key: otherKey, body: { name: "shared", engine: "redis", memoryMB: 256 } });
    expect(elsewhere.status).toBe(201);
    await deleteAllDatabases(server, otherKey);
  });
});

describe("the other routes refuse bad input", () => {
  const cases: [string, string, string, unknown][] = [
    ["settings memoryMB below 256", "PATCH", "settings", { memoryMB: 255 }],
    ["settings with nothing to change", "PATCH", "settings", {}],
    ["settings with a hostile name", "PATCH", "settings", { name: "x;reboot" }],
    ["rotate-password with 7 characters", "POST", "rotate-password", { password: "short12" }],
    ["rotate-password with a quote and a space", "POST", "rotate-password", { password: "it's a pass" }],
    ["logs tail 0", "GET", "logs?tail=0", undefined],
    ["logs tail 2001", "GET", "logs?tail=2001", undefined],
    ["logs tail not a number", "GET", "logs?tail=many", undefined],
  ];
  for (const [what, method, path, body] of cases) {
    test(`${what} -> 400`, async () => {
      const response = await server.request(method, `/api/databases/${database.id}/${path}`, { key, body });
      expectErrorEnvelope(response, 400, "VALIDATION_FAILED");
    });
  }

  test("rotating to the current password -> 400", async () => {
    const current = decodeURIComponent(/:([^:@]+)@/.exec(database.connectionString)![1]!);
    const response = await server.request("POST", `/api/databases/${database.id}/rotate-password`, { key, body: { password: current } });
    expectErrorEnvelope(response, 400, "VALIDATION_FAILED");
  });

  test("renaming to a name used in the workspace -> 409 NAME_TAKEN", async () => {
    const second = (await createDatabase(server, key, { name: "second", engine: "redis", memoryMB: 256 })).database;
    await waitForStatus(server, key, second.id, ["running"]);
    const response = await server.request("PATCH", `/api/databases/${second.id}/settings`, { key, body: { name: "shared" } });
    expectErrorEnvelope(response, 409, "NAME_TAKEN");
    expect((await server.request("DELETE", `/api/databases/${second.id}`, { key })).status).toBe(200);
  });
});

describe("apps and databases share names on the workspace network", () => {
  test("creating or renaming a database to the name of an app of the workspace -> 409 NAME_TAKEN", async () => {
    const deployed = await deployZip(server, key, { name: "storefront", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "shop" }));
    expect(deployed.status).toBe(202);
    try {
      const created = await create({ name: "storefront", engine: "redis", memoryMB: 256 });
      expectErrorEnvelope(created, 409, "NAME_TAKEN");
      expect(created.body.error).toContain("app named 'storefront'");
      const renamed = await server.request("PATCH", `/api/databases/${database.id}/settings`, { key, body: { name: "storefront" } });
      expectErrorEnvelope(renamed, 409, "NAME_TAKEN");
      expect((await server.request("GET", "/api/databases/", { key })).body.databases.map((listed: any) => listed.name)).toEqual(["shared"]);
    } finally {
      await waitForAppStatus(server, key, deployed.body.app.id, ["running", "failed"]);
      expect((await server.request("DELETE", `/api/apps/${deployed.body.app.id}`, { key })).status).toBe(202);
      await deleteAllApps(server, key); // the removal goes on after the 202: wait for its end
    }
  });
});

describe("another workspace's database is not found on any route", () => {
  const routes: [string, string, unknown?][] = [
    ["GET", ""],
    ["PATCH", "/settings", { memoryMB: 300 }],
    ["GET", "/stats"],
    ["GET", "/logs"],
    ["POST", "/start"],
    ["POST", "/stop"],
    ["POST", "/rotate-password", { password: "another-password" }],
    ["GET", "/operations"],
    ["DELETE", ""],
  ];
  for (const [method, suffix, body] of routes) {
    test(`${method} /api/databases/{id}${suffix} -> 404`, async () => {
      const response = await server.request(method, `/api/databases/${database.id}${suffix}`, { key: otherKey, body });
      expectErrorEnvelope(response, 404, "NOT_FOUND");
    });
  }

  test("and it is untouched", async () => {
    const { body } = await server.request("GET", `/api/databases/${database.id}`, { key });
    expect(body.database).toMatchObject({ status: "running", memoryMB: 256 });
    expect((await server.request("GET", "/api/databases/", { key: otherKey })).body.databases).toEqual([]);
  });
});

describe("one operation at a time", () => {
  test("an operation sent while another one runs -> 409 BUSY, and the first one completes", async () => {
    const responses = await Promise.all([
      server.request("POST", `/api/databases/${database.id}/rotate-password`, { key, body: { password: "rotated-password-1" } }),
      server.request("PATCH", `/api/databases/${database.id}/settings`, { key, body: { memoryMB: 320 } }),
      server.request("POST", `/api/databases/${database.id}/stop`, { key }),
    ]);
    const busy = responses.filter((response) => response.status === 409);
    expect(busy.length).toBe(2);
    for (const response of busy) expectErrorEnvelope(response, 409, "BUSY");
    await waitForStatus(server, key, database.id, ["running", "stopped"]);
  });

  test("a database still provisioning -> 409 BUSY", async () => {
    const { database: fresh } = await createDatabase(server, key, { name: "fresh", engine: "postgresql", memoryMB: 256 });
    expectErrorEnvelope(await server.request("POST", `/api/databases/${fresh.id}/stop`, { key }), 409, "BUSY");
    await waitForStatus(server, key, fresh.id, ["running"]);
  });
});
