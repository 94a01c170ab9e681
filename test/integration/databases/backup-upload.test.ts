// Importing dumps made elsewhere on real PostgreSQL and MariaDB: an uploaded dump (gzip or plain,
// as the body or a multipart form) becomes an `uploaded` backup that restores; anything that is not
// a whole dump of the engine is refused with 422 and the reason, an oversized one with 413, and
// neither keeps a file. A restore whose load fails midway puts the database back from its
// pre-restore backup.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { TestServer } from "../../helpers/server";
import { deleteAllDatabases, removeWorkspaceNetworks, sqlClient } from "../../helpers/databases";
import { completedBackup, downloadBackup, runningDatabase, sha256Hex, uploadDump, waitForOperationOfType } from "../../helpers/backups";

const UPLOAD_MAX_MB = 2;

let server: TestServer;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_BACKUP_UPLOAD_MAX_MB: String(UPLOAD_MAX_MB) });
  ({ key, workspaceId } = await server.createKey("upload tests"));
});

afterAll(async () => {
  if (!server) return;
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

/** The gzip file of a completed backup of `databaseId`. */
async function backupFile(databaseId: string): Promise<Uint8Array> {
  const backup = await completedBackup(server, key, databaseId);
  return (await downloadBackup(server, key, databaseId, backup.id)).bytes;
}

async function restore(databaseId: string, backupId: string) {
  const answer = await server.request("POST", `/api/databases/${databaseId}/restore`, { key, body: { backupId } });
  expect(answer.status).toBe(202);
  return waitForOperationOfType(server, key, databaseId, "restore", 120_000);
}

const filesOf = (databaseId: string) => {
  try {
    return readdirSync(join(server.dataDir, "backups", databaseId));
  } catch {
    return [];
  }
};

describe("PostgreSQL: moving in from another host", () => {
  let source: any;
  let target: any;
  let dump: Uint8Array;

  beforeAll(async () => {
    [source, target] = await Promise.all([runningDatabase(server, key, "upload-source", "postgresql"), runningDatabase(server, key, "upload-target", "postgresql")]);
    await sqlClient.write(source.connectionString, "from-the-old-host");
    await sqlClient.write(target.connectionString, "target-before");
    dump = await backupFile(source.id);
  }, 180_000);

  test("a gzip dump as the body -> 201 `uploaded` and `completed`; restoring it brings the other host's data", async () => {
    const answer = await uploadDump(server, key, target.id, dump, "application/gzip");
    expect(answer.status).toBe(201);
    expect(answer.body.backup).toMatchObject({ type: "uploaded", status: "completed", engine: "postgresql", format: "sql" });
    expect(answer.body.backup.sizeBytes).toBeGreaterThan(0);

    const operation = await restore(target.id, answer.body.backup.id);
    expect({ status: operation.status, error: operation.error }).toEqual({ status: "succeeded", error: null });
    expect(await sqlClient.read(target.connectionString)).toEqual(["from-the-old-host"]);

    const history = (await server.request("GET", `/api/databases/${target.id}/operations`, { key })).body.operations;
    expect(history.find((entry: any) => entry.type === "upload")).toMatchObject({ status: "succeeded", backupId: answer.body.backup.id });
  }, 180_000);

  test("plain SQL as the `file` of a multipart form -> stored gzipped, its download decompresses to the same SQL", async () => {
    const plain = gunzipSync(dump);
    const form = new FormData();
    form.append("file", new Blob([plain]), "dump.sql");
    const answer = await uploadDump(server, key, target.id, form);
    expect(answer.status).toBe(201);
    const downloaded = await downloadBackup(server, key, target.id, answer.body.backup.id);
    expect(sha256Hex(downloaded.bytes)).toBe(answer.body.backup.sha256);
    expect(Buffer.from(gunzipSync(downloaded.bytes)).equals(Buffer.from(plain))).toBe(true);
  });

  test("not a whole pg_dump SQL dump -> 422 INVALID_DUMP saying why, listed failed, no file kept", async () => {
    const plain = gunzipSync(dump);
    const cases: Array<[string, Uint8Array, string]> = [
      ["cut short", gzipSync(plain.subarray(0, plain.length - 200)), "completion line"],
      ["a custom-format archive", Buffer.from("PGDMP\x01\x0f\x00 not a plain dump at all, padding padding"), "custom-format"],
      ["another engine's dump", gzipSync(Buffer.from("-- MySQL dump 10.13  Distrib 8.4\n-- Dump completed on 2026-11-24\n")), "not a pg_dump SQL dump"],
      ["a truncated gzip file", dump.subarray(0, Math.floor(dump.length / 2)), "could not be read"],
    ];
    const before = filesOf(target.id).length;
    for (const [what, body, reason] of cases) {
      const answer = await uploadDump(server, key, target.id, body, "application/octet-stream");
      expect({ what, status: answer.status, code: answer.body.code }).toEqual({ what, status: 422, code: "INVALID_DUMP" });
      expect(answer.body.error).toContain(reason);
    }
    expect(filesOf(target.id).length).toBe(before);
    const listed = (await server.request("GET", `/api/databases/${target.id}/backups`, { key })).body.backups;
    expect(listed.slice(0, cases.length).map((backup: any) => [backup.type, backup.status])).toEqual(cases.map(() => ["uploaded", "failed"]));
    expect(listed[0].error).toContain("could not be read");
  });

  test(`past PLATFORM_BACKUP_UPLOAD_MAX_MB (${UPLOAD_MAX_MB}) -> 413, declared or streamed without a length, no file kept`, async () => {
    const before = filesOf(target.id).length;
    const oversized = new Uint8Array((UPLOAD_MAX_MB + 1) * 1024 * 1024).fill(45);
    const declared = await uploadDump(server, key, target.id, oversized, "application/octet-stream");
    expect({ status: declared.status, code: declared.body.code }).toEqual({ status: 413, code: "PAYLOAD_TOO_LARGE" });

    let sent = 0;
    const chunked = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= oversized.length) return controller.close();
        controller.enqueue(oversized.subarray(sent, sent + 256 * 1024));
        sent += 256 * 1024;
      },
    });
    const streamed = await uploadDump(server, key, target.id, chunked, "application/octet-stream");
    expect({ status: streamed.status, code: streamed.body.code }).toEqual({ status: 413, code: "PAYLOAD_TOO_LARGE" });
    expect(filesOf(target.id).length).toBe(before);
    expect(await sqlClient.read(target.connectionString)).toEqual(["from-the-old-host"]);
  });
});

describe("MySQL: a restore that fails midway", () => {
  test("a dump whose load fails after dropping a table -> restore failed, and the data is as it was (from the pre-restore backup)", async () => {
    const database = await runningDatabase(server, key, "upload-rollback", "mysql");
    await sqlClient.write(database.connectionString, "precious");
    const plain = gunzipSync(await backupFile(database.id)).toString("utf8");
    await sqlClient.write(database.connectionString, "precious-too");
    // mysqldump drops and recreates each table: a bad statement right after the DROP leaves it gone.
    const drop = /DROP TABLE IF EXISTS `[^`]+`;\n/.exec(plain);
    expect(drop).not.toBeNull();
    const broken = plain.replace(drop![0], `${drop![0]}THIS IS NOT SQL;\n`);
    const uploaded = await uploadDump(server, key, database.id, gzipSync(broken), "application/gzip");
    expect(uploaded.status).toBe(201);

    const operation = await restore(database.id, uploaded.body.backup.id);
    expect(operation.status).toBe("failed");
    expect(operation.error).toContain("put back as it was, from the pre-restore backup");
    expect(await sqlClient.read(database.connectionString)).toEqual(["precious", "precious-too"]);
  }, 240_000);
});
