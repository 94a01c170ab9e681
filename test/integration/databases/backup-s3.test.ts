// Off-site copies in an S3-compatible bucket (s3rver on loopback), on a real PostgreSQL: a backup
// is `completed` only once its copy is in the bucket and read back with the same SHA-256; a file
// gone from the data dir is downloaded and restored from its copy; deleting a backup (or the
// database) deletes its objects; and with the bucket unreachable the backup is `failed`, its copy
// says why, and the keys appear neither in what the API answers nor in the server's log. One
// server and one database for the file; the tests run in order and build on each other.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { TestS3 } from "../../helpers/s3";
import { createDatabase, deleteAllDatabases, removeWorkspaceNetworks, sqlClient, waitForStatus } from "../../helpers/databases";
import { downloadBackup, sha256Hex, waitForBackup, waitForOperationOfType } from "../../helpers/backups";

const PREFIX = "platform-test/";

let s3: TestS3;
let server: TestServer;
let key: string;
let workspaceId: string;
let database: any;
let backup: any;
/** Every answer of the API in this file, to look for the keys in. */
const answers: unknown[] = [];

beforeAll(async () => {
  s3 = await TestS3.start();
  server = await TestServer.start(s3.settings({ prefix: PREFIX }));
  ({ key, workspaceId } = await server.createKey("s3 backup tests"));
  const created = await createDatabase(server, key, { name: "backup-s3", engine: "postgresql", memoryMB: 256, storageGB: 1 });
  database = await waitForStatus(server, key, created.database.id, ["running"]);
  await sqlClient.write(database.connectionString, "before-1");
  await sqlClient.write(database.connectionString, "before-2");
});

afterAll(async () => {
  if (server) {
    await deleteAllDatabases(server, key);
    await server.stop();
    removeWorkspaceNetworks(workspaceId);
  }
  await s3?.stop();
});

async function request(method: string, path: string, body?: unknown) {
  const answer = await server.request(method, path, { key, body });
  answers.push(answer.body);
  return answer;
}

async function finishedBackup(): Promise<any> {
  const started = await request("POST", `/api/databases/${database.id}/backups`);
  expect(started.status).toBe(202);
  const finished = await waitForBackup(server, key, database.id, started.body.backup.id);
  answers.push(finished);
  return finished;
}

const localFileOf = (storageKey: string) => join(server.dataDir, "backups", storageKey);

/** The backup made by the first test; later tests build on it. */
function completedBackup(): any {
  if (!backup) throw new Error("no completed backup: the test that makes it failed");
  return backup;
}

describe("with a bucket", () => {
  test("a backup completes with its copy in the bucket, confirmed: same SHA-256 as the file downloaded", async () => {
    const finished = await finishedBackup();
    expect({ status: finished.status, error: finished.error }).toEqual({ status: "completed", error: null });
    expect(finished.copies).toEqual([
      { destination: "s3", location: `s3://${s3.bucket}/${PREFIX}${finished.storageKey}`, status: "completed", error: null, confirmedAt: expect.any(String) },
    ]);
    const confirmedAt = Date.parse(finished.copies[0].confirmedAt);
    expect(confirmedAt).toBeGreaterThanOrEqual(Date.parse(finished.createdAt));
    expect(confirmedAt).toBeLessThanOrEqual(Date.parse(finished.finishedAt));
    backup = finished;

    const listed = (await request("GET", `/api/databases/${database.id}/backups`)).body.backups;
    expect(listed[0]).toEqual(finished);

    const downloaded = await downloadBackup(server, key, database.id, finished.id);
    expect(downloaded.status).toBe(200);
    expect(sha256Hex(downloaded.bytes)).toBe(finished.sha256);
    expect(await s3.objectKeys(PREFIX)).toEqual([PREFIX + finished.storageKey]);
    expect(await s3.objectSha256(PREFIX + finished.storageKey)).toBe(finished.sha256);
  });

  test("the local file deleted: the download answers the whole file, fetched back from the bucket, and a restore works", async () => {
    const finished = completedBackup();
    rmSync(localFileOf(finished.storageKey));

    const downloaded = await downloadBackup(server, key, database.id, finished.id);
    expect(downloaded.status).toBe(200);
    expect(Number(downloaded.headers.get("content-length"))).toBe(finished.sizeBytes);
    expect(sha256Hex(downloaded.bytes)).toBe(finished.sha256);
    expect(Bun.gunzipSync(downloaded.bytes).length).toBeGreaterThan(0);
    expect(existsSync(localFileOf(finished.storageKey))).toBe(true);

    await sqlClient.write(database.connectionString, "after-backup");
    rmSync(localFileOf(finished.storageKey));
    const restored = await request("POST", `/api/databases/${database.id}/restore`, { backupId: finished.id });
    expect(restored.status).toBe(202);
    const operation = await waitForOperationOfType(server, key, database.id, "restore", 120_000);
    expect({ status: operation.status, error: operation.error }).toEqual({ status: "succeeded", error: null });
    expect(await sqlClient.read(database.connectionString)).toEqual(["before-1", "before-2"]);

    // The pre-restore backup went to the bucket too.
    const listed = (await request("GET", `/api/databases/${database.id}/backups`)).body.backups;
    const preRestore = listed.find((entry: any) => entry.type === "pre-restore");
    expect(preRestore.status).toBe("completed");
    expect(preRestore.copies.map((copy: any) => copy.status)).toEqual(["completed"]);
    expect(await s3.objectExists(PREFIX + preRestore.storageKey)).toBe(true);
  }, 180_000);

  test("DELETE of a backup removes its object from the bucket", async () => {
    const finished = completedBackup();
    expect(await s3.objectExists(PREFIX + finished.storageKey)).toBe(true);
    const deleted = await request("DELETE", `/api/databases/${database.id}/backups/${finished.id}`);
    expect(deleted.status).toBe(200);
    expect(await s3.objectExists(PREFIX + finished.storageKey)).toBe(false);
    expect(existsSync(localFileOf(finished.storageKey))).toBe(false);
  });
});

describe("with the bucket unreachable", () => {
  test("the backup is failed, its copy says why, no file is kept, and no key shows in answers or the log", async () => {
    await s3.stop();
    let failed: any;
    try {
      failed = await finishedBackup();
    } finally {
      await s3.run();
    }
    expect(failed.status).toBe("failed");
    const location = `s3://${s3.bucket}/${PREFIX}${failed.storageKey}`;
    expect(failed.error).toContain(location);
    expect(failed.copies).toEqual([{ destination: "s3", location, status: "failed", error: expect.stringContaining("ConnectionRefused"), confirmedAt: null }]);
    expect(existsSync(localFileOf(failed.storageKey))).toBe(false);
    expect(await s3.objectExists(PREFIX + failed.storageKey)).toBe(false);

    const operation = await waitForOperationOfType(server, key, database.id, "backup");
    expect(operation.status).toBe("failed");
    answers.push(operation);

    const seen = JSON.stringify(answers) + server.output;
    expect(seen).not.toContain(s3.secretAccessKey);
    expect(seen).not.toContain(s3.accessKeyId);
  });
});

describe("deleting the database", () => {
  test("removes the objects of its remaining backups from the bucket", async () => {
    expect((await s3.objectKeys(PREFIX)).length).toBeGreaterThan(0);
    const deleted = await request("DELETE", `/api/databases/${database.id}`);
    expect(deleted.status).toBe(200);
    expect(await s3.objectKeys(PREFIX)).toEqual([]);
  });
});
