// Verifying backups on the real engines with the stand-in images: known data (tables with N rows,
// K keys) backed up, then verified, reports exactly those counts and records `verifiedAt`, while
// the database itself is untouched (what was written after the backup is still there) and no
// throwaway container or volume is left. Then what fails: a backup whose file was changed, a
// backup still running, a second verify while one runs, and a server killed mid-verify.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RedisClient } from "bun";
import { TestServer } from "../../helpers/server";
import { deleteAllDatabases, poll, removeWorkspaceNetworks, waitForStatus, withSql } from "../../helpers/databases";
import { completedBackup, runningDatabase, waitForBackup } from "../../helpers/backups";
import { dockerCli, dockerJson } from "../../helpers/docker";

let server: TestServer;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  server = await TestServer.start();
  ({ key, workspaceId } = await server.createKey("verify tests"));
});

afterAll(async () => {
  if (!server) return;
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

function startVerify(databaseId: string, backupId: string) {
  return server.request("POST", `/api/databases/${databaseId}/backups/${backupId}/verify`, { key });
}

/** GETs the backup until its verification is no longer `running`. */
function verifiedBackup(databaseId: string, backupId: string, timeoutMs = 150_000): Promise<any> {
  return poll(`the verify of ${backupId}`, timeoutMs, async () => {
    const { body } = await server.request("GET", `/api/databases/${databaseId}/backups/${backupId}`, { key });
    return body.backup?.verification?.status === "running" ? undefined : body.backup;
  });
}

/** POST verify (answered at once, `running`), then the backup once the verify has ended. */
async function verify(databaseId: string, backupId: string) {
  const started = await startVerify(databaseId, backupId);
  expect(started.status).toBe(202);
  expect(started.body.backup.verification).toMatchObject({ status: "running", checks: [], error: null, finishedAt: null });
  expect(started.body.operation).toMatchObject({ type: "verify", backupId, actor: { type: "api_key" } });
  return { operationId: started.body.operationId as string, backup: await verifiedBackup(databaseId, backupId) };
}

/** The verify containers and volumes of a backup that Docker still has. */
async function throwawaysOf(backupId: string): Promise<string[]> {
  const containers = await dockerCli("ps", "-a", "--filter", `name=platform-verify-${backupId}`, "--format", "{{.Names}}");
  const volumes = await dockerCli("volume", "ls", "--filter", `name=platform-verify-${backupId}`, "--format", "{{.Name}}");
  return `${containers}\n${volumes}`.split("\n").filter(Boolean);
}

async function operationOf(databaseId: string, operationId: string) {
  const { body } = await server.request("GET", `/api/databases/${databaseId}/operations`, { key });
  return body.operations.find((operation: any) => operation.id === operationId);
}

const fileOf = (backup: { storageKey: string }) => join(server.dataDir, "backups", backup.storageKey);

/** Tables `items` (5 rows), `orders` (3 rows) and `empty_one` (none). */
async function writeTables(url: string) {
  await withSql(url, async (sql) => {
    await sql.unsafe("CREATE TABLE items (id INT PRIMARY KEY, label VARCHAR(50))");
    await sql.unsafe("CREATE TABLE orders (id INT PRIMARY KEY, item INT)");
    await sql.unsafe("CREATE TABLE empty_one (id INT PRIMARY KEY)");
    for (let id = 1; id <= 5; id++) await sql.unsafe(`INSERT INTO items VALUES (${id}, 'item-${id}')`);
    for (let id = 1; id <= 3; id++) await sql.unsafe(`INSERT INTO orders VALUES (${id}, ${id})`);
  });
}

const countOf = (url: string, table: string) => withSql(url, async (sql) => Number((await sql.unsafe(`SELECT COUNT(*) AS c FROM ${table}`))[0].c));

const TABLE_PREFIX: Record<string, string> = { postgresql: "public.", mysql: "" };

for (const engine of ["postgresql", "mysql"]) {
  test(`${engine}: a verify reports each table's exact rows, the database keeps what was written after the backup`, async () => {
    const database = await runningDatabase(server, key, `verify-${engine}`, engine);
    await writeTables(database.connectionString);
    const backup = await completedBackup(server, key, database.id);
    await withSql(database.connectionString, (sql) => sql.unsafe("INSERT INTO items VALUES (6, 'after-the-backup')"));

    const started = await startVerify(database.id, backup.id);
    expect(started.status).toBe(202);
    // The throwaway copy while it runs: no port on the host, no network, the platform's labels.
    const inspected = await poll("the verify container", 60_000, async () => {
      const found = await dockerCli("ps", "-a", "--filter", `name=platform-verify-${backup.id}`, "--format", "{{.ID}}");
      return found ? (await dockerJson("inspect", found.trim()))[0] : undefined;
    });
    expect(inspected.HostConfig.PortBindings ?? {}).toEqual({});
    expect(inspected.HostConfig.NetworkMode).toBe("none");
    expect(inspected.Config.Labels).toMatchObject({ "platform.managed": "true", "platform.workspace": workspaceId, "platform.verify": backup.id });
    expect(inspected.Config.Labels["platform.database"]).toBeUndefined();

    const verified = await verifiedBackup(database.id, backup.id);
    const prefix = TABLE_PREFIX[engine];
    expect(verified.verification).toMatchObject({
      status: "passed",
      error: null,
      checks: [
        { name: `${prefix}empty_one`, count: 0 },
        { name: `${prefix}items`, count: 5 },
        { name: `${prefix}orders`, count: 3 },
      ],
    });
    expect(Date.parse(verified.verifiedAt)).toBeGreaterThanOrEqual(Date.parse(verified.verification.startedAt));
    expect(Date.parse(verified.verification.finishedAt)).toBeGreaterThanOrEqual(Date.parse(verified.verification.startedAt));
    expect(verified.finishedAt).toBe(backup.finishedAt);

    expect(await countOf(database.connectionString, "items")).toBe(6);
    expect(await throwawaysOf(backup.id)).toEqual([]);
    expect(await operationOf(database.id, started.body.operationId)).toMatchObject({ type: "verify", status: "succeeded", backupId: backup.id, error: null });
  }, 240_000);
}

describe("redis", () => {
  let database: any;
  let backup: any;

  /** 5 keys in database 0 and 2 in database 1: the count covers every numbered database. */
  async function writeKeys(url: string) {
    const redis = new RedisClient(url, { autoReconnect: false, connectionTimeout: 5000, enableOfflineQueue: false });
    try {
      await redis.connect();
      for (let index = 1; index <= 5; index++) await redis.send("SET", [`key:${index}`, `value-${index}`]);
      await redis.send("SELECT", ["1"]);
      await redis.send("SET", ["other:1", "x"]);
      await redis.send("SADD", ["other:set", "a", "b", "c"]);
    } finally {
      redis.close();
    }
  }

  async function dbsize(url: string): Promise<number> {
    const redis = new RedisClient(url, { autoReconnect: false, connectionTimeout: 5000, enableOfflineQueue: false });
    try {
      await redis.connect();
      return Number(await redis.send("DBSIZE", []));
    } finally {
      redis.close();
    }
  }

  beforeAll(async () => {
    database = await runningDatabase(server, key, "verify-redis", "redis");
    await writeKeys(database.connectionString);
    backup = await completedBackup(server, key, database.id);
    const redis = new RedisClient(database.connectionString, { autoReconnect: false, connectionTimeout: 5000, enableOfflineQueue: false });
    await redis.connect();
    await redis.send("SET", ["after:backup", "1"]);
    redis.close();
  }, 120_000);

  test("a verify counts the keys of every numbered database; the database keeps the key written after the backup", async () => {
    const { backup: verified, operationId } = await verify(database.id, backup.id);
    expect(verified.verification).toMatchObject({ status: "passed", error: null, checks: [{ name: "keys", count: 7 }] });
    expect(verified.verifiedAt).not.toBeNull();
    expect(await dbsize(database.connectionString)).toBe(6);
    expect(await throwawaysOf(backup.id)).toEqual([]);
    expect(await operationOf(database.id, operationId)).toMatchObject({ type: "verify", status: "succeeded", backupId: backup.id });
  }, 180_000);

  test("a stopped database's backup verifies too: the database is not needed", async () => {
    const stopped = await server.request("POST", `/api/databases/${database.id}/stop`, { key });
    expect(stopped.status).toBe(202);
    await waitForStatus(server, key, database.id, ["stopped"]);
    const { backup: verified } = await verify(database.id, backup.id);
    expect(verified.verification).toMatchObject({ status: "passed", checks: [{ name: "keys", count: 7 }] });
    expect((await server.request("GET", `/api/databases/${database.id}`, { key })).body.database.status).toBe("stopped");
    expect(await throwawaysOf(backup.id)).toEqual([]);
  }, 180_000);
});

describe("what a verify refuses or reports as failed (PostgreSQL)", () => {
  let database: any;
  let backup: any;

  beforeAll(async () => {
    database = await runningDatabase(server, key, "verify-refusals", "postgresql");
    await writeTables(database.connectionString);
    // Enough rows that a dump takes a moment: long enough to ask for a verify while it runs.
    await withSql(database.connectionString, (sql) => sql.unsafe("CREATE TABLE filler AS SELECT g AS id, repeat('x', 1000) AS body FROM generate_series(1, 30000) g"));
    backup = await completedBackup(server, key, database.id);
  }, 120_000);

  test("a backup still running -> 409 BACKUP_NOT_READY; an unknown backup -> 404", async () => {
    const started = await server.request("POST", `/api/databases/${database.id}/backups`, { key });
    expect(started.status).toBe(202);
    const refused = await startVerify(database.id, started.body.backup.id);
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 409, code: "BACKUP_NOT_READY" });
    await waitForBackup(server, key, database.id, started.body.backup.id);
    const unknown = await startVerify(database.id, "bk_unknown");
    expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 404, code: "NOT_FOUND" });
  }, 60_000);

  test("a second verify while one runs -> 409 VERIFY_IN_PROGRESS; the first one passes", async () => {
    const first = await startVerify(database.id, backup.id);
    expect(first.status).toBe(202);
    const second = await startVerify(database.id, backup.id);
    expect({ status: second.status, code: second.body.code }).toEqual({ status: 409, code: "VERIFY_IN_PROGRESS" });
    const verified = await verifiedBackup(database.id, backup.id);
    expect(verified.verification.status).toBe("passed");
    expect(verified.verification.checks).toContainEqual({ name: "public.filler", count: 30000 });
    backup = verified;
  }, 180_000);

  test("a backup file changed since it was made -> failed with the checksum reason, nothing restored, verifiedAt kept", async () => {
    expect(backup.verifiedAt).not.toBeNull();
    const path = fileOf(backup);
    const original = readFileSync(path);
    const changed = Buffer.from(original);
    // Bytes 4-7 of a gzip file are its timestamp: still a valid gzip, but not the file that was recorded.
    changed[4]! ^= 0xff;
    changed[5]! ^= 0xff;
    writeFileSync(path, changed);
    try {
      const { backup: failed, operationId } = await verify(database.id, backup.id);
      expect(failed.verification).toMatchObject({ status: "failed", checks: [] });
      expect(failed.verification.error).toContain("SHA-256 differs");
      expect(failed.verifiedAt).toBe(backup.verifiedAt);
      const operation = await operationOf(database.id, operationId);
      expect(operation).toMatchObject({ type: "verify", status: "failed", backupId: backup.id });
      expect(operation.error).toContain("SHA-256 differs");
      expect(await throwawaysOf(backup.id)).toEqual([]);
    } finally {
      writeFileSync(path, original);
    }
  }, 120_000);

  test("a server killed mid-verify: after the restart the verify is failed as interrupted and its container is gone", async () => {
    const started = await startVerify(database.id, backup.id);
    expect(started.status).toBe(202);
    await poll("the verify container", 60_000, async () => ((await throwawaysOf(backup.id)).length > 0 ? true : undefined));
    await server.stop("SIGKILL");
    expect((await throwawaysOf(backup.id)).length).toBeGreaterThan(0);
    server = await TestServer.start({}, server.dataDir);
    const interrupted = await verifiedBackup(database.id, backup.id, 30_000);
    expect(interrupted.verification.status).toBe("failed");
    expect(interrupted.verification.error).toContain("interrupted");
    expect(interrupted.verifiedAt).toBe(backup.verifiedAt);
    await poll("the leftover verify container to be removed", 30_000, async () => ((await throwawaysOf(backup.id)).length === 0 ? true : undefined));
    expect(await operationOf(database.id, started.body.operationId)).toMatchObject({ type: "verify", status: "failed" });
  }, 180_000);
});
