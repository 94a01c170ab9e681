// Manual backups on the real engines with the stand-in images (issue 12, first slice): a backup
// of a database holding recognisable data completes in the background, is listed, downloads as a
// valid gzip whose bytes match its recorded size and SHA-256 and whose dump holds that data,
// resumes with Range, and shows in the operations history. Then the refusals and the cleanup on
// delete, on PostgreSQL. One server and three databases (made in parallel) for the whole file;
// the tests of an engine share its backup and run in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { expectErrorEnvelope } from "../../helpers/auth-matrix";
import { createDatabase, deleteAllDatabases, removeWorkspaceNetworks, waitForStatus } from "../../helpers/databases";
import {
  downloadBackup,
  filesOfStorageKey,
  sha256Hex,
  waitForBackup,
  waitForOperationOfType,
  writeProbeData,
  type BackupEngine,
  type ProbeData,
} from "../../helpers/backups";

const ENGINES: BackupEngine[] = ["postgresql", "mysql", "redis"];
const FORMAT: Record<BackupEngine, string> = { postgresql: "sql", mysql: "sql", redis: "rdb" };

let server: TestServer;
let key: string;
let workspaceId: string;
const databases = {} as Record<BackupEngine, any>;
const probes = {} as Record<BackupEngine, ProbeData>;
const backups = {} as Record<BackupEngine, any>;

/** The completed backup of the engine's first test; later tests build on it. */
function completedBackupOf(engine: BackupEngine): any {
  const backup = backups[engine];
  if (!backup) throw new Error(`no completed ${engine} backup: the test that makes it failed`);
  return backup;
}

beforeAll(async () => {
  server = await TestServer.start();
  ({ key, workspaceId } = await server.createKey("backup tests"));
  const marker = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
  await Promise.all(
    ENGINES.map(async (engine) => {
      const { database } = await createDatabase(server, key, { name: `backup-${engine}`, engine, memoryMB: 256, storageGB: 1 });
      databases[engine] = await waitForStatus(server, key, database.id, ["running"]);
      probes[engine] = await writeProbeData(engine, databases[engine].connectionString, marker);
    }),
  );
});

afterAll(async () => {
  // Leaves nothing behind even when a test failed before the delete test.
  if (!server) return;
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

for (const engine of ENGINES) {
  describe(`${engine} backup`, () => {
    test("POST answers 202 at once with the backup running; it completes in the background", async () => {
      const database = databases[engine];
      const { status, body } = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
      expect(status).toBe(202);
      expect(body.success).toBe(true);
      expect(body.data.backup).toEqual(body.backup);
      const started = body.backup;
      expect(started).toMatchObject({
        databaseId: database.id,
        type: "manual",
        status: "running",
        sizeBytes: 0,
        sha256: null,
        format: FORMAT[engine],
        engine,
        error: null,
        verifiedAt: null,
        finishedAt: null,
      });
      expect(typeof started.id).toBe("string");
      expect(typeof started.storageKey).toBe("string");
      expect(Number.isNaN(Date.parse(started.createdAt))).toBe(false);

      const finished = await waitForBackup(server, key, database.id, started.id);
      expect({ status: finished.status, error: finished.error }).toEqual({ status: "completed", error: null });
      backups[engine] = finished;
    });

    test("the list shows it first, completed, with its size, SHA-256 and finish time", async () => {
      const database = databases[engine];
      const { status, body } = await server.request("GET", `/api/databases/${database.id}/backups`, { key });
      expect(status).toBe(200);
      expect(body.success).toBe(true);
      expect(body.data.backups).toEqual(body.backups);
      const backup = completedBackupOf(engine);
      const [listed] = body.backups;
      expect(listed).toEqual(backup);
      expect(listed).toMatchObject({ id: backup.id, databaseId: database.id, type: "manual", status: "completed", format: FORMAT[engine], engine });
      expect(listed.sizeBytes).toBeGreaterThan(0);
      expect(listed.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(typeof listed.engineVersion).toBe("string");
      expect(listed.engineVersion.length).toBeGreaterThan(0);
      expect(listed.verifiedAt).toBeNull();
      expect(Date.parse(listed.finishedAt)).toBeGreaterThanOrEqual(Date.parse(listed.createdAt));
    });

    test("download: the bytes are the recorded size and SHA-256, valid gzip, and the dump holds the data written", async () => {
      const backup = completedBackupOf(engine);
      const { status, headers, bytes } = await downloadBackup(server, key, databases[engine].id, backup.id);
      expect(status).toBe(200);
      expect(headers.get("content-type")).toBe("application/gzip");
      expect(headers.get("content-disposition")).toMatch(new RegExp(`^attachment; filename="[^"/\\\\]+\\.${FORMAT[engine]}\\.gz"$`));
      expect(headers.get("accept-ranges")).toBe("bytes");
      expect(Number(headers.get("content-length"))).toBe(backup.sizeBytes);
      expect(bytes.length).toBe(backup.sizeBytes);
      expect(sha256Hex(bytes)).toBe(backup.sha256);

      const dump = Bun.gunzipSync(bytes);
      // latin1 keeps every byte as one character: the RDB is binary, the names in it are ASCII.
      const text = Buffer.from(dump).toString("latin1");
      const probe = probes[engine];
      if (engine === "redis") expect(text.startsWith("REDIS")).toBe(true);
      for (const name of probe.names) expect(text).toContain(name);
      for (const value of probe.values) expect(text).toContain(value);
    });

    test("Range: bytes=0-9 answers 206 with the first 10 bytes; a range past the end answers 416", async () => {
      const backup = completedBackupOf(engine);
      const whole = (await downloadBackup(server, key, databases[engine].id, backup.id)).bytes;

      const head = await downloadBackup(server, key, databases[engine].id, backup.id, { range: "bytes=0-9" });
      expect(head.status).toBe(206);
      expect(head.headers.get("content-range")).toBe(`bytes 0-9/${backup.sizeBytes}`);
      expect(Number(head.headers.get("content-length"))).toBe(10);
      expect([...head.bytes]).toEqual([...whole.subarray(0, 10)]);

      const beyond = await downloadBackup(server, key, databases[engine].id, backup.id, { range: `bytes=${backup.sizeBytes}-` });
      expect(beyond.status).toBe(416);
      expect(beyond.headers.get("content-range")).toBe(`bytes */${backup.sizeBytes}`);
    });

    test("the operations history has the backup, succeeded", async () => {
      completedBackupOf(engine);
      const operation = await waitForOperationOfType(server, key, databases[engine].id, "backup");
      expect({ type: operation.type, status: operation.status, error: operation.error }).toEqual({ type: "backup", status: "succeeded", error: null });
      expect(operation.actor.type).toBe("api_key");
      expect(Date.parse(operation.finishedAt)).toBeGreaterThanOrEqual(Date.parse(operation.startedAt));
    });
  });
}

describe("refusals and cleanup (PostgreSQL)", () => {
  test("an unknown backup id -> 404 NOT_FOUND, for the backup and its download", async () => {
    const databaseId = databases.postgresql.id;
    const unknown = "bk_doesnotexist";
    expectErrorEnvelope(await server.request("GET", `/api/databases/${databaseId}/backups/${unknown}`, { key }), 404, "NOT_FOUND");
    expectErrorEnvelope(await server.request("GET", `/api/databases/${databaseId}/backups/${unknown}/download`, { key }), 404, "NOT_FOUND");
  });

  test("a stopped database -> 409 NOT_RUNNING, and no backup is made", async () => {
    const databaseId = databases.postgresql.id;
    const stopped = await server.request("POST", `/api/databases/${databaseId}/stop`, { key });
    expect(stopped.status).toBe(202);
    expect((await waitForStatus(server, key, databaseId, ["stopped", "failed"])).status).toBe("stopped");

    const refused = await server.request("POST", `/api/databases/${databaseId}/backups`, { key });
    expectErrorEnvelope(refused, 409, "NOT_RUNNING");
    const { body } = await server.request("GET", `/api/databases/${databaseId}/backups`, { key });
    expect(body.backups.map((backup: any) => backup.id)).toEqual([completedBackupOf("postgresql").id]);
  });

  test("deleting the database removes its backups: the file goes and the list answers 404", async () => {
    const databaseId = databases.postgresql.id;
    const backup = completedBackupOf("postgresql");
    const storageKey = backup.storageKey;
    // Local storage (the default) keeps the file under the data dir.
    expect(filesOfStorageKey(server.dataDir, storageKey).length).toBe(1);

    const deleted = await server.request("DELETE", `/api/databases/${databaseId}`, { key });
    expect(deleted.status).toBe(200);
    expect(filesOfStorageKey(server.dataDir, storageKey)).toEqual([]);
    expectErrorEnvelope(await server.request("GET", `/api/databases/${databaseId}/backups`, { key }), 404);
    expectErrorEnvelope(await server.request("GET", `/api/databases/${databaseId}/backups/${backup.id}`, { key }), 404);
  });
});
