// A backup on a full data disk: the platform runs on a data dir that is a small ext4 file system of
// its own (a loop-mounted image the test makes and removes), filled until a backup's file cannot
// be written. The backup fails saying the disk is full, an upload answers 507, neither leaves a
// partial file or holds anything (room, lock), the process stays up; once space is freed, a backup succeeds.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, readdirSync, rmSync, statfsSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { TestServer } from "../../helpers/server";
import { tempDir } from "../../helpers/temp";
import { deleteAllDatabases, removeWorkspaceNetworks } from "../../helpers/databases";
import { runningDatabase, uploadDump, waitForBackup, waitForOperationOfType } from "../../helpers/backups";
import { randomBytes } from "node:crypto";

const root = tempDir();
const image = join(root, "disk.img");
const dataDir = join(root, "data");
const filler = join(dataDir, "filler");
let mounted = false;
let server: TestServer;
let key: string;
let workspaceId: string;

function run(argv: string[]) {
  const done = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (done.exitCode !== 0) throw new Error(`${argv.join(" ")} exited with ${done.exitCode}: ${done.stderr.toString()}`);
}

beforeAll(async () => {
  mkdirSync(dataDir, { recursive: true });
  run(["truncate", "-s", "64M", image]);
  run(["mkfs.ext4", "-q", image]);
  run(["mount", "-o", "loop", image, dataDir]);
  mounted = true;
  server = await TestServer.start({}, dataDir);
  ({ key, workspaceId } = await server.createKey("backup disk full"));
});

afterAll(async () => {
  try {
    if (server) {
      rmSync(filler, { force: true });
      // A server that ended (the failure this file tests) is started again to delete its databases:
      // its data dir goes with the file system, so nothing else would know what it made.
      if (!(await fetch(server.baseUrl).then(() => true, () => false))) {
        await server.stop("SIGKILL");
        await server.boot();
      }
      try {
        await deleteAllDatabases(server, key);
      } finally {
        await server.stop();
      }
      removeWorkspaceNetworks(workspaceId);
    }
  } finally {
    if (mounted) run(["umount", dataDir]);
    rmSync(root, { recursive: true, force: true });
  }
});

const backupFiles = (databaseId: string) => {
  try {
    return readdirSync(join(dataDir, "backups", databaseId));
  } catch {
    return [];
  }
};

test("a backup that fills the disk fails saying so, leaves no file, and the platform stays up; with space freed the next one completes", async () => {
  const database = await runningDatabase(server, key, "disk-full", "postgresql");
  // About 12 MB of hex text: some 7 MB once gzipped, more than the 3 MB left free below.
  const sql = new SQL(database.connectionString, { max: 1, connectionTimeout: 5 });
  try {
    await sql.unsafe("CREATE TABLE filler AS SELECT n, md5(n::text) || md5((n * 7)::text) AS text FROM generate_series(1, 180000) AS n");
  } finally {
    await sql.close();
  }
  const free = statfsSync(dataDir);
  run(["fallocate", "-l", String(free.bavail * free.bsize - 3 * 1024 * 1024), filler]);

  const started = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
  expect(started.status).toBe(202);
  const failed = await waitForBackup(server, key, database.id, started.body.backup.id);
  expect(failed.status).toBe("failed");
  expect(failed.error).toContain("the disk of the data directory is full");
  expect(backupFiles(database.id)).toEqual([]);
  expect((await waitForOperationOfType(server, key, database.id, "backup")).status).toBe("failed");
  expect(server.process?.exitCode).toBeNull();
  const listed = await server.request("GET", `/api/databases/${database.id}`, { key });
  expect({ status: listed.status, databaseStatus: listed.body.database.status }).toEqual({ status: 200, databaseStatus: "running" });

  // An uploaded dump that does not fit (some 16 MB once gzipped): 507 naming what could not be written, and no file kept.
  const dump = new TextEncoder().encode(`--\n-- PostgreSQL database dump\n--\n${randomBytes(16 * 1024 * 1024).toString("hex")}\n`);
  const uploaded = await uploadDump(server, key, database.id, dump, "application/sql");
  expect({ status: uploaded.status, code: uploaded.body.code, error: uploaded.body.error }).toEqual({ status: 507, code: "INSUFFICIENT_STORAGE", error: expect.stringContaining("the uploaded dump") });
  expect(backupFiles(database.id)).toEqual([]);

  rmSync(filler);
  const again = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
  expect(again.status).toBe(202);
  const completed = await waitForBackup(server, key, database.id, again.body.backup.id);
  expect({ status: completed.status, error: completed.error }).toEqual({ status: "completed", error: null });
  expect(backupFiles(database.id)).toEqual([`${completed.id}.sql.gz`]);
}, 180_000);
