// Per-workspace quotas with tiny settings: each refusal is a 409 QUOTA_EXCEEDED naming the quota,
// the use and the setting; nothing is made by a refused request; other workspaces are unaffected.
// The disk quota counts file-manager folders and empty files (4 KiB each), build logs (a build of
// a workspace at its quota fails) and backup files, and manual and uploaded backups are capped per
// database; GET /api/organization/usage shows the use.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { RedisClient } from "bun";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { TestServer, type CreatedKey } from "../helpers/server";
import { appZip, deleteAllApps, deployZip, waitForStatus } from "../helpers/apps";
import { createDatabase, deleteAllDatabases, removeWorkspaceNetworks } from "../helpers/databases";
import { completedBackup, downloadBackup, runningDatabase, uploadDump, waitForBackup } from "../helpers/backups";

// Per file: this Bun reads no timeout from bunfig.toml, and a preload's setting holds for its first file only.
setDefaultTimeout(120_000);

const QUOTAS = {
  PLATFORM_QUOTA_APPS: "2",
  PLATFORM_QUOTA_MEMORY_MB: "1024",
  PLATFORM_QUOTA_DATABASES: "1",
  PLATFORM_QUOTA_DB_PORTS: "5",
  PLATFORM_QUOTA_DISK_MB: "1",
  PLATFORM_QUOTA_BACKUPS_PER_DATABASE: "2",
};
const MB = 1024 * 1024;

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

/** The build once it succeeded or failed (with its log). */
async function finishedBuild(on: TestServer, key: string, appId: string, buildId: string) {
  for (let attempt = 0; attempt < 240; attempt++) {
    const { build, log } = (await on.request("GET", `/api/apps/${appId}/builds/${buildId}`, { key })).body;
    if (["succeeded", "failed"].includes(build?.status)) return { ...build, log };
    await Bun.sleep(250);
  }
  throw new Error(`build ${buildId} did not finish`);
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
    await finishedBuild(server, key, redeploy.body.app.id, redeploy.body.buildId);
    await server.stop();
    await server.boot();
    // At once: recovery moves leftover uploads aside before a new one can arrive.
    const afterRestart = await deployZip(server, key, { name: "heavier", runtime: "node", memoryMB: "64" }, bulky(400));
    expectQuotaRefusal(afterRestart, /quota for disk exceeded: 0\.7 MB in use of 1 MB, this needs 0\.4 MB more/, "PLATFORM_QUOTA_DISK_MB");
  });

  test("disk: file-manager folders and empty files count 4 KiB each; thousands of them hit the quota, and a refused request makes nothing", async () => {
    const { key } = await tenant(server, "quota-fs");
    const deployed = await deployZip(server, key, { name: "tree", runtime: "node", memoryMB: "64" }, site("tree"));
    expect(deployed.status).toBe(202);
    const app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
    const fs = (path: string, body: unknown) => server.request("POST", `/api/apps/${app.id}/fs/${path}`, { key, body });
    const sourceDir = join(server.dataDir, "apps", app.id, "source");

    // 64 folders a request: 1 MB holds 256 entries of 4 KiB, so the refusal comes long before 50 requests (3,200 folders).
    let refused: { status: number; body: any } | null = null;
    let chains = 0;
    for (; chains < 50 && !refused; chains++) {
      const made = await fs("folder", { path: `chain${chains}/${"d/".repeat(62)}d` });
      if (made.status !== 201) refused = made;
    }
    expect(refused).not.toBeNull();
    expectQuotaRefusal(refused!, /quota for disk exceeded: 0\.\d MB in use of 1 MB, this needs 0\.3 MB more/, "PLATFORM_QUOTA_DISK_MB");
    expect(chains).toBeLessThanOrEqual(4);
    expect(existsSync(join(sourceDir, `chain${chains - 1}`))).toBe(false);
    const usage = (await server.request("GET", "/api/organization/usage", { key })).body.usage;
    expect(usage.disk.appSourcesBytes).toBeGreaterThanOrEqual((chains - 1) * 64 * 4096);
    expect(usage.disk.limitBytes).toBe(MB);
    expect(usage.disk.buildLogsBytes).toBeGreaterThan(0);

    // Room again, then empty files until the quota: each counts 4 KiB, none is free.
    for (let chain = 0; chain < chains - 1; chain++) expect((await fs("delete", { path: `chain${chain}` })).status).toBe(200);
    let files = 0;
    refused = null;
    for (; files < 400 && !refused; files++) {
      const made = await fs("file", { path: `empty/${files}.txt`, content: "" });
      if (made.status !== 201) refused = made;
    }
    expect(refused).not.toBeNull();
    expectQuotaRefusal(refused!, /quota for disk exceeded: .* this needs 4 KB more/, "PLATFORM_QUOTA_DISK_MB");
    expect(files).toBeLessThanOrEqual(256);
    expect(existsSync(join(sourceDir, "empty", `${files - 1}.txt`))).toBe(false);
    // At the quota, a path that is taken is still told apart: it exists, whatever the room.
    const again = await fs("file", { path: "empty/0.txt", content: "" });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("FILE_EXISTS");
    const folderAgain = await fs("folder", { path: "empty" });
    expect(folderAgain.status).toBe(409);
    expect(folderAgain.body.code).toBe("FILE_EXISTS");

    // Build logs count too: a build of a workspace at its quota fails at its start, saying why.
    const redeploy = await server.request("POST", `/api/apps/${app.id}/redeploy`, { key });
    expect(redeploy.status).toBe(202);
    const build = await finishedBuild(server, key, app.id, redeploy.body.buildId);
    expect(build.status).toBe("failed");
    expect(build.error).toMatch(/^QUOTA_EXCEEDED: Workspace quota for disk exceeded: .* this needs 4 KB more .*PLATFORM_QUOTA_DISK_MB/);
    expect(build.log).toContain("==> Build failed: QUOTA_EXCEEDED: Workspace quota for disk exceeded");
    expect((await server.request("GET", `/api/apps/${app.id}`, { key })).body.app.status).toBe("running");
  });

  test("disk: a backup's file shows in the usage and counts; a backup or an upload past the quota is refused and keeps no file", async () => {
    const { key } = await tenant(server, "quota-backups");
    const database = await runningDatabase(server, key, "cache", "redis");
    // Random bytes as base64: ~0.7 MB once gzipped, so one backup fits in 1 MB and two do not.
    const redis = new RedisClient(database.connectionString, { autoReconnect: false, connectionTimeout: 5000, enableOfflineQueue: false });
    try {
      await redis.connect();
      await redis.send("SET", ["bulk", Buffer.from(crypto.getRandomValues(new Uint8Array(700 * 1024))).toString("base64")]);
    } finally {
      redis.close();
    }
    const first = await completedBackup(server, key, database.id);
    expect(first.sizeBytes).toBeGreaterThan(0.6 * MB);
    const usage = (await server.request("GET", "/api/organization/usage", { key })).body.usage;
    expect(usage.disk).toMatchObject({ backupsBytes: first.sizeBytes, usedBytes: first.sizeBytes, limitBytes: MB });

    const second = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
    expect(second.status).toBe(202);
    const failed = await waitForBackup(server, key, database.id, second.body.backup.id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatch(/quota for disk exceeded.*PLATFORM_QUOTA_DISK_MB/);

    const dump = (await downloadBackup(server, key, database.id, first.id)).bytes;
    const upload = await uploadDump(server, key, database.id, dump, "application/gzip");
    expectQuotaRefusal(upload, /quota for disk exceeded/, "PLATFORM_QUOTA_DISK_MB");
    expect(readdirSync(join(server.dataDir, "backups", database.id))).toEqual([first.storageKey.split("/")[1]]);
    expect((await server.request("GET", "/api/organization/usage", { key })).body.usage.disk).toMatchObject({ backupsBytes: first.sizeBytes, inProgressBytes: 0 });
  });

  test("backups: a database keeps at most PLATFORM_QUOTA_BACKUPS_PER_DATABASE manual and uploaded backups", async () => {
    const { key } = await tenant(server, "quota-backup-cap");
    const database = await runningDatabase(server, key, "store", "redis");
    const first = await completedBackup(server, key, database.id);
    await completedBackup(server, key, database.id);
    const third = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
    expectQuotaRefusal(third, /quota for manual and uploaded backups of one database exceeded: 2 backups in use of 2 backups/, "PLATFORM_QUOTA_BACKUPS_PER_DATABASE");
    const dump = (await downloadBackup(server, key, database.id, first.id)).bytes;
    const upload = await uploadDump(server, key, database.id, dump, "application/gzip");
    expectQuotaRefusal(upload, /2 backups in use of 2 backups/, "PLATFORM_QUOTA_BACKUPS_PER_DATABASE");
    expect((await server.request("GET", `/api/databases/${database.id}/backups`, { key })).body.backups).toHaveLength(2);
    // Deleting one makes room.
    expect((await server.request("DELETE", `/api/databases/${database.id}/backups/${first.id}`, { key })).status).toBe(200);
    expect((await uploadDump(server, key, database.id, dump, "application/gzip")).status).toBe(201);
  });
});
