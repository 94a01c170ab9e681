// The platform killed (SIGKILL) in the middle of a restore, then started again on the same data
// dir: the interrupted operation shows as failed, and the database is whole — put back from its
// pre-restore backup at the next start (MariaDB, whose loads are not transactional; PostgreSQL's
// load is one transaction). A kill mid-backup: ./backup-failures.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
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

const backupFiles = (databaseId: string) => readdirSync(join(server.dataDir, "backups", databaseId));

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
