// Restores on real PostgreSQL and MariaDB: data written, backed up, changed, then restored, reads
// as it was, with the same connection string, a `pre-restore` backup made first and a `restore`
// operation in the history. A corrupt or truncated backup is refused with 422 before anything is
// touched. Redis: the snapshot is booted from, and its keys survive a restart.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { deleteAllDatabases, removeWorkspaceNetworks, sqlClient, waitForStatus } from "../../helpers/databases";
import { RedisClient } from "bun";
import { completedBackup, runningDatabase, waitForOperationOfType, writeProbeData } from "../../helpers/backups";

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

const fileOf = (backup: { storageKey: string }) => join(server.dataDir, "backups", backup.storageKey);

for (const engine of ["postgresql", "mysql"]) {
  describe(`${engine} restore`, () => {
    test("data changed after a backup reads as it was once restored; a pre-restore backup is made first", async () => {
      const database = await runningDatabase(server, key, `restore-${engine}`, engine);
      await sqlClient.write(database.connectionString, "before-1");
      await sqlClient.write(database.connectionString, "before-2");
      const backup = await completedBackup(server, key, database.id);
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
    database = await runningDatabase(server, key, "restore-refusals", "postgresql");
    await sqlClient.write(database.connectionString, "kept");
    backup = await completedBackup(server, key, database.id);
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

  test("an unknown backup, or another database's, -> 404", async () => {
    expect(await refusal("bk_unknown")).toEqual({ status: 404, code: "NOT_FOUND" });
    const other = await runningDatabase(server, key, "restore-other", "postgresql");
    const otherBackup = await completedBackup(server, key, other.id);
    expect(await refusal(otherBackup.id)).toEqual({ status: 404, code: "NOT_FOUND" });
    expect(await sqlClient.read(database.connectionString)).toEqual(["kept", "still-here"]);
  }, 120_000);
});

describe("redis restore", () => {
  const read = async (connectionString: string, names: string[]) => {
    const redis = new RedisClient(connectionString, { autoReconnect: false, connectionTimeout: 5000, enableOfflineQueue: false });
    try {
      await redis.connect();
      return await Promise.all(names.map((name) => redis.get(name)));
    } finally {
      redis.close();
    }
  };

  test("keys changed after a backup read as they were once restored, and still after a restart (the AOF was rewritten)", async () => {
    const database = await runningDatabase(server, key, "restore-redis", "redis");
    const probe = await writeProbeData("redis", database.connectionString, "kept");
    const backup = await completedBackup(server, key, database.id);
    const later = await writeProbeData("redis", database.connectionString, "later");

    const restored = await server.request("POST", `/api/databases/${database.id}/restore`, { key, body: { backupId: backup.id } });
    expect(restored.status).toBe(202);
    const operation = await waitForOperationOfType(server, key, database.id, "restore", 120_000);
    expect({ status: operation.status, error: operation.error }).toEqual({ status: "succeeded", error: null });
    expect(await read(database.connectionString, probe.names)).toEqual(probe.values);
    expect(await read(database.connectionString, later.names)).toEqual([null, null, null]);

    // A restart loads the AOF: it must hold the restored keys, not the ones from before the restore.
    expect((await server.request("POST", `/api/databases/${database.id}/stop`, { key })).status).toBe(202);
    await waitForStatus(server, key, database.id, ["stopped"]);
    expect((await server.request("POST", `/api/databases/${database.id}/start`, { key })).status).toBe(202);
    const running = await waitForStatus(server, key, database.id, ["running"]);
    expect(running.connectionString).toBe(database.connectionString);
    expect(await read(database.connectionString, probe.names)).toEqual(probe.values);
    expect(await read(database.connectionString, later.names)).toEqual([null, null, null]);
  }, 240_000);
});
