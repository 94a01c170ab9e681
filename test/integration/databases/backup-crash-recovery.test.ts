// The platform killed (SIGKILL) right after a backup's finished file took its name and before the
// backup was listed completed (PLATFORM_TEST_PAUSE_AT=backup.placed holds it there), then started
// again on the same data dir: the row and the file agree. The file was checked and its size and
// SHA-256 recorded before the rename, so the restart finds it whole and completes the backup, and
// a restore from it puts the data back.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { deleteAllDatabases, poll, removeWorkspaceNetworks, sqlClient } from "../../helpers/databases";
import { runningDatabase, sha256Hex, waitForBackup, waitForOperationOfType } from "../../helpers/backups";

let server: TestServer;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_TEST_PAUSE_AT: "backup.placed" });
  ({ key, workspaceId } = await server.createKey("backup crash recovery"));
});

afterAll(async () => {
  if (!server) return;
  delete server.env.PLATFORM_TEST_PAUSE_AT;
  if (!server.process) await server.boot();
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

const backupFiles = (databaseId: string) => {
  try {
    return readdirSync(join(server.dataDir, "backups", databaseId));
  } catch {
    return [];
  }
};

test("killed between the rename of a finished dump and its row: after the restart the backup is completed from its file, and restores", async () => {
  const database = await runningDatabase(server, key, "crash-placed", "postgresql");
  await sqlClient.write(database.connectionString, "in-the-backup");
  const started = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
  expect(started.status).toBe(202);
  await poll("the backup paused after its rename", 60_000, async () => (server.output.includes("test pause at backup.placed") ? true : undefined));
  expect(backupFiles(database.id)).toEqual([`${started.body.backup.id}.sql.gz`]);

  await server.stop("SIGKILL");
  delete server.env.PLATFORM_TEST_PAUSE_AT;
  await server.boot();

  const backup = await waitForBackup(server, key, database.id, started.body.backup.id);
  const file = join(server.dataDir, "backups", database.id, `${backup.id}.sql.gz`);
  expect({ status: backup.status, error: backup.error }).toEqual({ status: "completed", error: null });
  expect(backupFiles(database.id)).toEqual([`${backup.id}.sql.gz`]);
  expect(backup.sizeBytes).toBe(statSync(file).size);
  expect(backup.sha256).toBe(sha256Hex(new Uint8Array(await Bun.file(file).arrayBuffer())));

  await sqlClient.write(database.connectionString, "after-the-backup");
  const restoring = await server.request("POST", `/api/databases/${database.id}/restore`, { key, body: { backupId: backup.id } });
  expect(restoring.status).toBe(202);
  expect((await waitForOperationOfType(server, key, database.id, "restore", 120_000)).status).toBe("succeeded");
  expect(await sqlClient.read(database.connectionString)).toEqual(["in-the-backup"]);
}, 240_000);
