// Per-workspace quotas with tiny settings: each refusal is a 409 QUOTA_EXCEEDED naming the quota,
// the use and the setting; nothing is made by a refused request; other workspaces are unaffected.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TestServer, type CreatedKey } from "../helpers/server";
import { appZip, deleteAllApps, deployZip } from "../helpers/apps";
import { createDatabase, deleteAllDatabases, removeWorkspaceNetworks } from "../helpers/databases";

// Per file: this Bun reads no timeout from bunfig.toml, and a preload's setting holds for its first file only.
setDefaultTimeout(120_000);

const QUOTAS = {
  PLATFORM_QUOTA_APPS: "2",
  PLATFORM_QUOTA_MEMORY_MB: "1024",
  PLATFORM_QUOTA_DATABASES: "1",
  PLATFORM_QUOTA_DB_PORTS: "5",
  PLATFORM_QUOTA_DISK_MB: "1",
};

let server: TestServer;
let portsServer: TestServer;
const keys: { server: TestServer; key: CreatedKey }[] = [];

async function tenant(on: TestServer, workspace: string) {
  const key = await on.createKey(workspace, workspace);
  keys.push({ server: on, key });
  return key;
}

const site = (text: string) => appZip({ "index.html": text });
/** Incompressible enough that the ZIP is about as big as its tree; `kb` kilobytes of source. */
const bulky = (kb: number) => appZip({ "index.html": "x", "data.txt": Buffer.from(crypto.getRandomValues(new Uint8Array(kb * 512))).toString("hex") });

function expectQuotaRefusal(response: { status: number; body: any }, quotaText: RegExp, setting: string) {
  expect(response.status).toBe(409);
  expect(response.body.success).toBe(false);
  expect(response.body.code).toBe("QUOTA_EXCEEDED");
  expect(response.body.error).toMatch(quotaText);
  expect(response.body.error).toContain(setting);
}

beforeAll(async () => {
  server = await TestServer.start(QUOTAS);
  portsServer = await TestServer.start({ PLATFORM_QUOTA_DATABASES: "5", PLATFORM_QUOTA_DB_PORTS: "1" });
});

afterAll(async () => {
  for (const { server: on, key } of keys) {
    await deleteAllApps(on, key.key);
    await deleteAllDatabases(on, key.key);
  }
  removeWorkspaceNetworks(...keys.map(({ key }) => key.workspaceId));
  await server.stop();
  await portsServer.stop();
});

describe("per-workspace quotas", () => {
  test("apps: a new app beyond PLATFORM_QUOTA_APPS is refused; redeploying an existing one is not", async () => {
    const { key } = await tenant(server, "quota-apps");
    expect((await deployZip(server, key, { name: "one", runtime: "node", memoryMB: "64" }, site("1"))).status).toBe(202);
    expect((await deployZip(server, key, { name: "two", runtime: "node", memoryMB: "64" }, site("2"))).status).toBe(202);
    const third = await deployZip(server, key, { name: "three", runtime: "node", memoryMB: "64" }, site("3"));
    expectQuotaRefusal(third, /quota for apps exceeded: 2 apps in use of 2 apps/, "PLATFORM_QUOTA_APPS");
    expect((await deployZip(server, key, { name: "one", runtime: "node", memoryMB: "64" }, site("1b"))).status).toBe(202);
    const names = (await server.request("GET", "/api/apps/", { key })).body.apps.map((app: any) => app.name);
    expect(names.sort()).toEqual(["one", "two"]);
    // An app being deleted no longer counts, though DELETE answers before its removal ends.
    const two = (await server.request("GET", "/api/apps/", { key })).body.apps.find((app: any) => app.name === "two");
    expect((await server.request("DELETE", `/api/apps/${two.id}`, { key })).status).toBeLessThan(300);
    expect((await deployZip(server, key, { name: "four", runtime: "node", memoryMB: "64" }, site("4"))).status).toBe(202);
    // Another workspace has its own count.
    const other = await tenant(server, "quota-apps-other");
    expect((await deployZip(server, other.key, { name: "three", runtime: "node", memoryMB: "64" }, site("3"))).status).toBe(202);
  });

  test("memory: apps and databases share PLATFORM_QUOTA_MEMORY_MB, on create and on settings changes", async () => {
    const { key } = await tenant(server, "quota-memory");
    const first = await deployZip(server, key, { name: "big", runtime: "node", memoryMB: "512" }, site("big"));
    expect(first.status).toBe(202);
    const second = await deployZip(server, key, { name: "bigger", runtime: "node", memoryMB: "576" }, site("bigger"));
    expectQuotaRefusal(second, /quota for memory exceeded: 512 MB in use of 1024 MB, this needs 576 MB more/, "PLATFORM_QUOTA_MEMORY_MB");
    const appId = first.body.app.id;
    const tooMuch = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: { memoryMB: 1088 } });
    expectQuotaRefusal(tooMuch, /memory exceeded/, "PLATFORM_QUOTA_MEMORY_MB");
    expect((await server.request("GET", `/api/apps/${appId}`, { key })).body.app.memoryMB).toBe(512);
    const grown = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: { memoryMB: 1024 } });
    expect(grown.status).toBe(200);
    const database = await server.request("POST", "/api/databases/", { key, body: { name: "cache", engine: "redis", memoryMB: 256 } });
    expectQuotaRefusal(database, /memory exceeded: 1024 MB in use of 1024 MB, this needs 256 MB more/, "PLATFORM_QUOTA_MEMORY_MB");
    expect((await server.request("GET", "/api/databases/", { key })).body.databases).toEqual([]);
    // Shrinking frees room for the database; growing the database past the quota is refused.
    expect((await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: { memoryMB: 512 } })).status).toBe(200);
    const made = await createDatabase(server, key, { name: "cache", engine: "redis", memoryMB: 256 });
    const resize = await server.request("PATCH", `/api/databases/${made.database.id}/settings`, { key, body: { memoryMB: 768 } });
    expectQuotaRefusal(resize, /memory exceeded: 768 MB in use of 1024 MB, this needs 512 MB more/, "PLATFORM_QUOTA_MEMORY_MB");
  });

  test("databases: a database beyond PLATFORM_QUOTA_DATABASES is refused", async () => {
    const { key } = await tenant(server, "quota-dbs");
    await createDatabase(server, key, { name: "first", engine: "redis" });
    const second = await server.request("POST", "/api/databases/", { key, body: { name: "second", engine: "redis" } });
    expectQuotaRefusal(second, /quota for databases exceeded: 1 database in use of 1 database/, "PLATFORM_QUOTA_DATABASES");
    expect((await server.request("GET", "/api/databases/", { key })).body.databases.map((db: any) => db.name)).toEqual(["first"]);
  });

  test("database ports: a database beyond PLATFORM_QUOTA_DB_PORTS is refused", async () => {
    const { key } = await tenant(portsServer, "quota-ports");
    await createDatabase(portsServer, key, { name: "first", engine: "redis" });
    const second = await portsServer.request("POST", "/api/databases/", { key, body: { name: "second", engine: "redis" } });
    expectQuotaRefusal(second, /quota for database host ports exceeded: 1 port in use of 1 port/, "PLATFORM_QUOTA_DB_PORTS");
  });

  test("disk: app sources beyond PLATFORM_QUOTA_DISK_MB are refused; a redeploy's old tree does not count", async () => {
    const { key } = await tenant(server, "quota-disk");
    const first = await deployZip(server, key, { name: "heavy", runtime: "node", memoryMB: "64" }, bulky(600));
    expect(first.status).toBe(202);
    const second = await deployZip(server, key, { name: "heavier", runtime: "node", memoryMB: "64" }, bulky(600));
    expectQuotaRefusal(second, /quota for disk exceeded: 0\.\d MB in use of 1 MB, this needs 0\.6 MB more/, "PLATFORM_QUOTA_DISK_MB");
    const redeploy = await deployZip(server, key, { name: "heavy", runtime: "node", memoryMB: "64" }, bulky(700));
    expect(redeploy.status).toBe(202);
    const names = (await server.request("GET", "/api/apps/", { key })).body.apps.map((app: any) => app.name);
    expect(names).toEqual(["heavy"]);
    // After a restart the trees are measured from the files: the 700 KB source is what counts now.
    const buildPath = `/api/apps/${redeploy.body.app.id}/builds/${redeploy.body.buildId}`;
    for (let attempt = 0; attempt < 240; attempt++) {
      if (["succeeded", "failed"].includes((await server.request("GET", buildPath, { key })).body.build?.status)) break;
      await Bun.sleep(250);
    }
    await server.stop();
    await server.boot();
    // At once: recovery moves leftover uploads aside before a new one can arrive.
    const afterRestart = await deployZip(server, key, { name: "heavier", runtime: "node", memoryMB: "64" }, bulky(400));
    expectQuotaRefusal(afterRestart, /quota for disk exceeded: 0\.7 MB in use of 1 MB, this needs 0\.4 MB more/, "PLATFORM_QUOTA_DISK_MB");
  });
});
