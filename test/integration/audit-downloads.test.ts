// Downloads that carry a workspace's data out are in its audit log: an app's files as a ZIP and a
// database's backup, each with who downloaded it and what. A refused download is not recorded.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TestServer, type CreatedKey } from "../helpers/server";
import { appZip, deleteAllApps, deployZip, waitForStatus } from "../helpers/apps";
import { deleteAllDatabases, removeWorkspaceNetworks } from "../helpers/databases";
import { completedBackup, downloadBackup, runningDatabase } from "../helpers/backups";

// Per file: this Bun reads no timeout from bunfig.toml, and a preload's setting holds for its first file only.
setDefaultTimeout(120_000);

let server: TestServer;
let owner: CreatedKey;

beforeAll(async () => {
  server = await TestServer.start();
  owner = await server.createKey("auditor", "audit-downloads");
});

afterAll(async () => {
  await deleteAllApps(server, owner.key);
  await deleteAllDatabases(server, owner.key);
  removeWorkspaceNetworks(owner.workspaceId);
  await server.stop();
});

async function eventsOf(action: string): Promise<any[]> {
  const { status, body } = await server.request("GET", "/api/organization/audit-log?limit=500", { key: owner.key });
  expect(status).toBe(200);
  return body.events.filter((event: any) => event.action === action);
}

describe("downloads in the audit log", () => {
  test("the app's files as a ZIP: app.files_downloaded, with the key that downloaded them and the app", async () => {
    const deployed = await deployZip(server, owner.key, { name: "sources", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "secret sauce" }));
    expect(deployed.status).toBe(202);
    const app = await waitForStatus(server, owner.key, deployed.body.app.id, ["running"]);
    const response = await fetch(`${server.baseUrl}/api/apps/${app.id}/fs/archive`, { headers: { authorization: `Bearer ${owner.key}` } });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const events = await eventsOf("app.files_downloaded");
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actor: { type: "api_key", id: owner.id }, target: `sources (${app.id})` });
  });

  test("a backup: database.backup_downloaded, with the key, the database and the backup; a refused range is not recorded", async () => {
    const database = await runningDatabase(server, owner.key, "ledger", "redis");
    const backup = await completedBackup(server, owner.key, database.id);
    expect((await downloadBackup(server, owner.key, database.id, backup.id)).status).toBe(200);
    const events = await eventsOf("database.backup_downloaded");
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actor: { type: "api_key", id: owner.id }, target: `ledger (${database.id}), backup ${backup.id}` });

    const beyond = await downloadBackup(server, owner.key, database.id, backup.id, { range: `bytes=${backup.sizeBytes + 10}-` });
    expect(beyond.status).toBe(416);
    expect(await eventsOf("database.backup_downloaded")).toHaveLength(1);
  });
});
