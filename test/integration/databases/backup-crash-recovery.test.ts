// The platform killed (SIGKILL) right after a backup's finished file took its name and before the
// backup was listed completed (PLATFORM_TEST_PAUSE_AT=backup.placed holds it there), then started
// again on the same data dir: the row and the file agree. The file was checked and its size and
// SHA-256 recorded before the rename, so the restart finds it whole and completes the backup, and
// a restore from it puts the data back; a file that no longer matches is removed and the backup failed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { appendFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { deleteAllDatabases, poll, removeWorkspaceNetworks, sqlClient } from "../../helpers/databases";
import { runningDatabase, sha256Hex, waitForBackup, waitForOperationOfType } from "../../helpers/backups";

let server: TestServer;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  server = await TestServer.start();
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

/** A backup of a new PostgreSQL database holding `note`, killed once its file is renamed into place; the server started again without the pause. */
async function killedAfterRename(name: string, note: string) {
  server.env.PLATFORM_TEST_PAUSE_AT = "backup.placed";
  await server.stop();
  await server.boot();
  const database = await runningDatabase(server, key, name, "postgresql");
  await sqlClient.write(database.connectionString, note);
  const started = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
  expect(started.status).toBe(202);
  await poll("the backup paused after its rename", 60_000, async () => (server.output.includes("test pause at backup.placed") ? true : undefined));
  expect(backupFiles(database.id)).toEqual([`${started.body.backup.id}.sql.gz`]);
  await server.stop("SIGKILL");
  delete server.env.PLATFORM_TEST_PAUSE_AT;
  return { database, backupId: started.body.backup.id as string, file: join(server.dataDir, "backups", database.id, `${started.body.backup.id}.sql.gz`) };
}

test("killed between the rename of a finished dump and its row: after the restart the backup is completed from its file, and restores", async () => {
  const { database, backupId, file } = await killedAfterRename("crash-placed", "in-the-backup");
  await server.boot();

  const backup = await waitForBackup(server, key, database.id, backupId);
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

test("the same kill, and the file changed before the restart: the backup is failed saying why, and its file removed", async () => {
  const { database, backupId, file } = await killedAfterRename("crash-placed-changed", "in-the-backup");
  appendFileSync(file, "more");
  await server.boot();

  const backup = await waitForBackup(server, key, database.id, backupId);
  expect(backup.status).toBe("failed");
  expect(backup.error).toContain("interrupted");
  expect(backup.error).toContain("cut short or added to");
  expect(backupFiles(database.id)).toEqual([]);
}, 240_000);
