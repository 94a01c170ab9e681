// The platform killed (SIGKILL) in the middle of a restore, then started again on the same data
// dir: the interrupted operation shows as failed, and the database is whole — put back from its
// pre-restore backup at the next start (MariaDB, whose loads are not transactional; PostgreSQL's
// load is one transaction), and in the middle of an upload. A kill mid-backup: ./backup-failures.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { TestServer } from "../../helpers/server";
import { createDatabase, deleteAllDatabases, poll, removeWorkspaceNetworks, sqlClient, waitForStatus } from "../../helpers/databases";
import { waitForBackup, waitForOperationOfType } from "../../helpers/backups";

/** Rows of about 200 bytes: enough that a dump or a load takes seconds, not milliseconds. */
const BIG_ROWS = 300_000;

let server: TestServer;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  server = await TestServer.start();
  ({ key, workspaceId } = await server.createKey("crash tests"));
});

afterAll(async () => {
  if (!server) return;
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

async function filledDatabase(name: string) {
  const { database } = await createDatabase(server, key, { name, engine: "mysql", memoryMB: 512, storageGB: 2 });
  const running = await waitForStatus(server, key, database.id, ["running"]);
  const sql = new SQL(running.connectionString, { max: 1, connectionTimeout: 5, idleTimeout: 1 });
  try {
    await sql.unsafe("CREATE TABLE digits (d INT)");
    await sql.unsafe("INSERT INTO digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)");
    await sql.unsafe("CREATE TABLE big (id INT, body VARCHAR(250))");
    const n = "a.d + b.d * 10 + c.d * 100 + e.d * 1000";
    const body = `REPEAT(MD5(${n}), 6)`;
    // 10,000 rows per statement, repeated: one statement of them all would hold a lot of memory.
    for (let batch = 0; batch < BIG_ROWS / 10_000; batch++) {
      await sql.unsafe(`INSERT INTO big SELECT ${batch * 10_000} + ${n}, ${body} FROM digits a, digits b, digits c, digits e`);
    }
  } finally {
    await sql.close();
  }
  return running;
}

async function bigRows(connectionString: string): Promise<number> {
  const sql = new SQL(connectionString, { max: 1, connectionTimeout: 5, idleTimeout: 1 });
  try {
    const [row] = await sql.unsafe("SELECT COUNT(*) AS n FROM big");
    return Number(row.n);
  } finally {
    await sql.close();
  }
}

/** The files of the database's backups folder; none before its first backup. */
const backupFiles = (databaseId: string) => {
  const folder = join(server.dataDir, "backups", databaseId);
  return existsSync(folder) ? readdirSync(folder) : [];
};

/** SIGKILL, as a crash or an OOM kill would, then a start on the same data dir. */
async function killAndRestart() {
  await server.stop("SIGKILL");
  await server.boot();
}

describe("killed mid-restore", () => {
  test("after the restart the database is put back from the pre-restore backup: nothing half restored", async () => {
    const database = await filledDatabase("crash-restore");
    await sqlClient.write(database.connectionString, "before-backup");
    const started = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
    expect((await waitForBackup(server, key, database.id, started.body.backup.id, 120_000)).status).toBe("completed");
    await sqlClient.write(database.connectionString, "after-backup");

    const restoring = await server.request("POST", `/api/databases/${database.id}/restore`, { key, body: { backupId: started.body.backup.id } });
    expect(restoring.status).toBe(202);
    // The load begins once the pre-restore backup is complete: killed shortly after, mid-load.
    await poll("the pre-restore backup", 120_000, async () => {
      const listed = (await server.request("GET", `/api/databases/${database.id}/backups`, { key })).body.backups;
      return listed.some((backup: any) => backup.type === "pre-restore" && backup.status === "completed") ? true : undefined;
    });
    await Bun.sleep(300);
    await killAndRestart();

    const interrupted = await poll("the interrupted restore to be dealt with", 240_000, async () => {
      const operations = (await server.request("GET", `/api/databases/${database.id}/operations`, { key })).body.operations;
      const cut = operations.find((operation: any) => operation.id === restoring.body.operationId);
      return cut?.error?.includes("put back as it was") || cut?.error?.includes("failed") ? cut : undefined;
    });
    expect(interrupted.status).toBe("failed");
    expect(interrupted.error).toContain("interrupted");
    expect(interrupted.error).toContain("the database was put back as it was, from the pre-restore backup");
    expect(await sqlClient.read(database.connectionString)).toEqual(["after-backup", "before-backup"]);
    expect(await bigRows(database.connectionString)).toBe(BIG_ROWS);
    expect(backupFiles(database.id).filter((file) => file.endsWith(".partial"))).toEqual([]);
  }, 420_000);
});

describe("killed mid-upload", () => {
  test("after the restart the uploaded backup is failed as interrupted and no partial file is left", async () => {
    const { database } = await createDatabase(server, key, { name: "crash-upload", engine: "mysql", memoryMB: 256, storageGB: 1 });
    // Not while its create operation holds it (409 BUSY).
    await waitForStatus(server, key, database.id, ["running"]);
    // A dump sent slowly, chunk after chunk, that never ends before the kill; random text, so the
    // gzip file grows and is on disk (as .partial) when the kill comes.
    const line = () => `INSERT INTO t VALUES ('${Buffer.from(crypto.getRandomValues(new Uint8Array(48))).toString("hex")}');\n`;
    const endless = new ReadableStream<Uint8Array>({
      start: (controller) => controller.enqueue(new TextEncoder().encode("-- MySQL dump 10.13\n")),
      async pull(controller) {
        await Bun.sleep(20);
        controller.enqueue(new TextEncoder().encode(Array.from({ length: 1000 }, line).join("")));
      },
    });
    const sending = fetch(`${server.baseUrl}/api/databases/${database.id}/backups/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/octet-stream" },
      body: endless,
    }).catch(() => null);
    await poll("the upload's partial file", 60_000, async () => (backupFiles(database.id).some((file) => file.endsWith(".partial")) ? true : undefined));
    await killAndRestart();
    await sending;

    const listed = (await server.request("GET", `/api/databases/${database.id}/backups`, { key })).body.backups;
    expect(listed.map((backup: any) => [backup.type, backup.status])).toEqual([["uploaded", "failed"]]);
    expect(listed[0].error).toContain("interrupted");
    expect(backupFiles(database.id)).toEqual([]);
    const operation = await waitForOperationOfType(server, key, database.id, "upload");
    expect(operation.status).toBe("failed");
  }, 180_000);
});
