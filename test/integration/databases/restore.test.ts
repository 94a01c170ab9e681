// Restores on real PostgreSQL and MariaDB: data written, backed up, changed, then restored, reads
// as it was, with the same connection string, a `pre-restore` backup made first and a `restore`
// operation in the history. A corrupt or truncated backup is refused with 422 before anything is
// touched; a Redis backup is not restored through the API yet (409).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { createDatabase, deleteAllDatabases, removeWorkspaceNetworks, sqlClient, waitForStatus } from "../../helpers/databases";
import { waitForBackup, waitForOperationOfType } from "../../helpers/backups";

let server: TestServer;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  server = await TestServer.start();
  ({ key, workspaceId } = await server.createKey("restore tests"));
});

afterAll(async () => {
  if (!server) return;
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

async function runningDatabase(name: string, engine: string) {
  const { database } = await createDatabase(server, key, { name, engine, memoryMB: 256, storageGB: 1 });
  return waitForStatus(server, key, database.id, ["running"]);
}

async function completedBackup(databaseId: string) {
  const started = await server.request("POST", `/api/databases/${databaseId}/backups`, { key });
  expect(started.status).toBe(202);
  const backup = await waitForBackup(server, key, databaseId, started.body.backup.id);
  expect(backup.status).toBe("completed");
  return backup;
}

const fileOf = (backup: { storageKey: string }) => join(server.dataDir, "backups", backup.storageKey);

for (const engine of ["postgresql", "mysql"]) {
  describe(`${engine} restore`, () => {
    test("data changed after a backup reads as it was once restored; a pre-restore backup is made first", async () => {
      const database = await runningDatabase(`restore-${engine}`, engine);
      await sqlClient.write(database.connectionString, "before-1");
      await sqlClient.write(database.connectionString, "before-2");
      const backup = await completedBackup(database.id);
      await sqlClient.write(database.connectionString, "after-backup");

      const restored = await server.request("POST", `/api/databases/${database.id}/restore`, { key, body: { backupId: backup.id } });
      expect(restored.status).toBe(202);
      expect(restored.body.operation.type).toBe("restore");
      const operation = await waitForOperationOfType(server, key, database.id, "restore", 120_000);
      expect({ status: operation.status, error: operation.error }).toEqual({ status: "succeeded", error: null });

      expect(await sqlClient.read(database.connectionString)).toEqual(["before-1", "before-2"]);
      const after = (await server.request("GET", `/api/databases/${database.id}`, { key })).body.database;
      expect(after.connectionString).toBe(database.connectionString);
      const listed = (await server.request("GET", `/api/databases/${database.id}/backups`, { key })).body.backups;
      expect(listed.map((entry: any) => [entry.type, entry.status])).toEqual([
        ["pre-restore", "completed"],
        ["manual", "completed"],
      ]);
      // The pre-restore backup holds what was there just before: the row written after the backup.
      const before = await server.request("GET", `/api/databases/${database.id}/backups/${listed[0].id}/download`, { key });
      expect(before.status).toBe(200);
    }, 180_000);
  });
}

describe("refused before anything is touched", () => {
  let database: any;
  let backup: any;

  beforeAll(async () => {
    database = await runningDatabase("restore-refusals", "postgresql");
    await sqlClient.write(database.connectionString, "kept");
    backup = await completedBackup(database.id);
    await sqlClient.write(database.connectionString, "still-here");
  }, 120_000);

  const refusal = async (backupId: string) => {
    const answer = await server.request("POST", `/api/databases/${database.id}/restore`, { key, body: { backupId } });
    return { status: answer.status, code: answer.body.code };
  };

  test("a corrupt backup (one byte changed) -> 422 BACKUP_CORRUPT, and the data is as it was", async () => {
    const path = fileOf(backup);
    const original = readFileSync(path);
    const corrupt = Buffer.from(original);
    corrupt[Math.floor(corrupt.length / 2)]! ^= 0xff;
    writeFileSync(path, corrupt);
    try {
      expect(await refusal(backup.id)).toEqual({ status: 422, code: "BACKUP_CORRUPT" });
    } finally {
      writeFileSync(path, original);
    }
    expect(await sqlClient.read(database.connectionString)).toEqual(["kept", "still-here"]);
    const operations = (await server.request("GET", `/api/databases/${database.id}/operations`, { key })).body.operations;
    expect(operations.some((operation: any) => operation.type === "restore")).toBe(false);
  });

  test("a truncated backup -> 422 BACKUP_CORRUPT; bytes appended -> 422 too", async () => {
    const path = fileOf(backup);
    const original = readFileSync(path);
    try {
      writeFileSync(path, original.subarray(0, original.length - 20));
      expect(await refusal(backup.id)).toEqual({ status: 422, code: "BACKUP_CORRUPT" });
      writeFileSync(path, original);
      appendFileSync(path, "trailing");
      expect(await refusal(backup.id)).toEqual({ status: 422, code: "BACKUP_CORRUPT" });
    } finally {
      writeFileSync(path, original);
    }
    expect(await sqlClient.read(database.connectionString)).toEqual(["kept", "still-here"]);
  });

  test("an unknown backup, or another database's, -> 404; a Redis backup -> 409 RESTORE_UNSUPPORTED", async () => {
    expect(await refusal("bk_unknown")).toEqual({ status: 404, code: "NOT_FOUND" });
    const redis = await runningDatabase("restore-redis", "redis");
    const redisBackup = await completedBackup(redis.id);
    expect(await refusal(redisBackup.id)).toEqual({ status: 404, code: "NOT_FOUND" });
    const answer = await server.request("POST", `/api/databases/${redis.id}/restore`, { key, body: { backupId: redisBackup.id } });
    expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 409, code: "RESTORE_UNSUPPORTED" });
  }, 120_000);
});
