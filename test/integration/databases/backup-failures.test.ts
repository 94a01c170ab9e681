// Backups that must not be listed as good ones, on a real PostgreSQL: a dump tool that fails is
// recorded `failed` with its own message and leaves no file, and a server killed in the middle of
// a dump shows that backup `failed` after the restart, with no partial file left behind.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { TestServer } from "../../helpers/server";
import { createDatabase, deleteAllDatabases, removeWorkspaceNetworks, waitForStatus } from "../../helpers/databases";
import { waitForBackup } from "../../helpers/backups";

let server: TestServer;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  server = await TestServer.start();
  ({ key, workspaceId } = await server.createKey("backup failures"));
});

afterAll(async () => {
  if (!server) return;
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

/** Every file under the database's backups folder (none when it has none). */
function backupFiles(databaseId: string): string[] {
  try {
    return readdirSync(join(server.dataDir, "backups", databaseId));
  } catch {
    return [];
  }
}

async function runningPostgres(name: string) {
  const { database } = await createDatabase(server, key, { name, engine: "postgresql", memoryMB: 256, storageGB: 1 });
  return waitForStatus(server, key, database.id, ["running"]);
}

test("a dump tool that fails: the backup is failed with the tool's own message, no file, and it cannot be downloaded", async () => {
  const database = await runningPostgres("backup-broken");
  // pg_dump of a database that no longer exists exits 1 with its reason.
  const admin = new SQL(database.connectionString.replace(/\/[^/?]+(\?|$)/, "/postgres$1"), { max: 1, connectionTimeout: 5 });
  try {
    await admin.unsafe(`DROP DATABASE "${database.databaseName}" WITH (FORCE)`);
  } finally {
    await admin.close();
  }
  const started = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
  expect(started.status).toBe(202);
  const backup = await waitForBackup(server, key, database.id, started.body.backup.id);
  expect(backup.status).toBe("failed");
  expect(backup.error).toContain("pg_dump exited with 1");
  expect(backup.error).toContain(database.databaseName);
  expect(backup.error).not.toContain(new URL(database.connectionString).password);
  expect({ sizeBytes: backup.sizeBytes, sha256: backup.sha256 }).toEqual({ sizeBytes: 0, sha256: null });
  expect(backupFiles(database.id)).toEqual([]);
  const download = await server.request("GET", `/api/databases/${database.id}/backups/${backup.id}/download`, { key });
  expect({ status: download.status, code: download.body.code }).toEqual({ status: 409, code: "BACKUP_NOT_READY" });
  const operations = (await server.request("GET", `/api/databases/${database.id}/operations`, { key })).body.operations;
  expect(operations.find((operation: any) => operation.type === "backup")).toMatchObject({ status: "failed" });
}, 120_000);

test("a server killed during a dump: after the restart that backup is failed, and no partial file is left", async () => {
  const database = await runningPostgres("backup-killed");
  // Enough rows that pg_dump is still writing when the server is killed.
  const sql = new SQL(database.connectionString, { max: 1, connectionTimeout: 5 });
  try {
    await sql.unsafe("CREATE TABLE filler AS SELECT n, md5(n::text) || md5((n + 1)::text) AS text FROM generate_series(1, 1500000) AS n");
  } finally {
    await sql.close();
  }
  const started = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
  expect(started.status).toBe(202);
  // Killed once the dump has begun writing its file.
  const deadline = Date.now() + 20_000;
  while (!backupFiles(database.id).some((file) => file.endsWith(".partial")) && Date.now() < deadline) await Bun.sleep(20);
  expect(backupFiles(database.id).some((file) => file.endsWith(".partial"))).toBe(true);
  await server.stop("SIGKILL");
  await server.boot();

  const backup = (await server.request("GET", `/api/databases/${database.id}/backups/${started.body.backup.id}`, { key })).body.backup;
  expect(backup.status).toBe("failed");
  expect(backup.error).toContain("interrupted");
  // The partial file is removed at start, in the background.
  const cleaned = Date.now() + 10_000;
  while (backupFiles(database.id).length && Date.now() < cleaned) await Bun.sleep(50);
  expect(backupFiles(database.id)).toEqual([]);
  // The database itself is fine: a new backup completes.
  await waitForStatus(server, key, database.id, ["running"]);
  const again = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
  expect(again.status).toBe(202);
  expect((await waitForBackup(server, key, database.id, again.body.backup.id, 120_000)).status).toBe("completed");
}, 240_000);
