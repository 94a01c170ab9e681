// Helpers for database tests: create a database through the API and wait for its status or an
// operation, real clients (Bun's own PostgreSQL, MySQL and Redis clients) for the connection
// strings the API hands out, and the database routes of the shared authentication matrix.
import { RedisClient, SQL } from "bun";
import { join } from "node:path";
import type { TestServer } from "./server";
import type { AuthenticatedRoute, Tenant } from "./auth-matrix";

export async function createDatabase(server: TestServer, key: string, body: Record<string, unknown>) {
  const response = await server.request("POST", "/api/databases/", { key, body });
  if (response.status !== 201) throw new Error(`create failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as { database: any; operationId: string; operation: any };
}

/** Calls `read` every 250 ms until it answers something, or fails after `timeoutMs`. */
export async function poll<T>(what: string, timeoutMs: number, read: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await read();
    if (value !== undefined) return value;
    await Bun.sleep(250);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** GETs the database until its status is one of `statuses`; fails at once on `failed` unless `patient`. */
export function waitForStatus(server: TestServer, key: string, databaseId: string, statuses: string[], options: { patient?: boolean } = {}) {
  return poll(`database ${databaseId} to be ${statuses.join("|")}`, 90_000, async () => {
    const { body } = await server.request("GET", `/api/databases/${databaseId}`, { key });
    const database = body.database;
    if (statuses.includes(database?.status)) return database;
    if (database?.status === "failed" && !options.patient) throw new Error(`database failed: ${database.statusReason}`);
    return undefined;
  });
}

/** Waits until the operation has finished (succeeded or failed) and answers its row. */
export function waitForOperation(server: TestServer, key: string, databaseId: string, operationId: string, timeoutMs = 90_000) {
  return poll(`operation ${operationId}`, timeoutMs, async () => {
    const { body } = await server.request("GET", `/api/databases/${databaseId}/operations`, { key });
    const operation = body.operations?.find((candidate: any) => candidate.id === operationId);
    return operation && ["succeeded", "failed"].includes(operation.status) ? operation : undefined;
  });
}

/** Deletes every database of the key's workspace, waiting out operations still running on them. */
export async function deleteAllDatabases(server: TestServer, key: string) {
  const { body } = await server.request("GET", "/api/databases/", { key });
  for (const { id } of body.databases ?? []) {
    await poll(`database ${id} to be deleted`, 90_000, async () => {
      const response = await server.request("DELETE", `/api/databases/${id}`, { key });
      return response.status === 409 ? undefined : response;
    });
  }
}

/**
 * Workspace networks are made on demand and outlive the test servers; Docker has only about 30
 * address pools, so tests remove the networks of their workspaces (only when nothing is attached).
 */
export function removeWorkspaceNetworks(...workspaceIds: string[]) {
  for (const workspaceId of workspaceIds) {
    const listed = Bun.spawnSync(["docker", "network", "ls", "-q", "--filter", `label=platform.workspace=${workspaceId}`]);
    const ids = listed.stdout.toString().split("\n").filter(Boolean);
    if (ids.length) Bun.spawnSync(["docker", "network", "rm", ...ids], { stdout: "ignore", stderr: "ignore" });
  }
}

// ---- real clients -------------------------------------------------------------------------

/** What the tests do with a database through its connection string, from the host. */
export interface EngineClient {
  write(url: string, value: string): Promise<void>;
  read(url: string): Promise<string[]>;
}

export async function withSql<T>(url: string, use: (sql: SQL) => Promise<T>): Promise<T> {
  const sql = new SQL(url, { max: 1, connectionTimeout: 5, idleTimeout: 1 });
  try {
    return await use(sql);
  } finally {
    await sql.close();
  }
}

export const sqlClient: EngineClient = {
  write: (url, value) =>
    withSql(url, async (sql) => {
      await sql`CREATE TABLE IF NOT EXISTS notes (body VARCHAR(200))`;
      await sql`INSERT INTO notes (body) VALUES (${value})`;
    }),
  read: (url) => withSql(url, async (sql) => (await sql`SELECT body FROM notes ORDER BY body`).map((row: { body: string }) => row.body)),
};

async function withRedis<T>(url: string, use: (redis: RedisClient) => Promise<T>): Promise<T> {
  const redis = new RedisClient(url, { autoReconnect: false, connectionTimeout: 5000, enableOfflineQueue: false });
  try {
    await redis.connect();
    return await use(redis);
  } finally {
    redis.close();
  }
}

export const redisClient: EngineClient = {
  write: (url, value) => withRedis(url, async (redis) => void (await redis.send("RPUSH", ["notes", value]))),
  read: (url) => withRedis(url, async (redis) => ((await redis.send("LRANGE", ["notes", "0", "-1"])) as string[]).sort()),
};

/** The error a client gets with this connection string, or null when it connects. */
export async function connectionError(client: EngineClient, url: string): Promise<string | null> {
  try {
    await client.read(url);
    return null;
  } catch (error) {
    return String((error as Error).message ?? error);
  }
}

// ---- the authentication matrix ------------------------------------------------------------

const matrixDatabases: string[] = [];
const matrixWorkspaces = new Set<string>();
let matrixCount = 0;

/** Removes the containers, volumes and networks the matrix's databases left (call it after the matrix's tests). */
export function removeMatrixDatabases() {
  for (const id of matrixDatabases.splice(0)) {
    Bun.spawnSync(["docker", "rm", "-f", `platform-db-${id}`], { stdout: "ignore", stderr: "ignore" });
    const volumes = Bun.spawnSync(["docker", "volume", "ls", "-q", "--filter", `label=platform.database=${id}`]).stdout.toString().split("\n").filter(Boolean);
    if (volumes.length) Bun.spawnSync(["docker", "volume", "rm", ...volumes], { stdout: "ignore", stderr: "ignore" });
  }
  removeWorkspaceNetworks(...matrixWorkspaces);
  matrixWorkspaces.clear();
}

/** A running Redis database of `owner` (the smallest engine to start, unless said), for routes with a database id. */
const databaseOf = async (server: TestServer, owner: Tenant, engine = "redis") => {
  const { database } = await createDatabase(server, owner.key, { name: `matrix-${++matrixCount}`, engine, memoryMB: 256 });
  matrixDatabases.push(database.id);
  matrixWorkspaces.add(owner.workspaceId);
  await waitForStatus(server, owner.key, database.id, ["running"]);
  return { databaseId: database.id as string };
};

/** A completed backup of a running database of `owner` (Redis unless said), for routes with a backup id. */
const backupOf = async (server: TestServer, owner: Tenant, engine = "redis") => {
  const { databaseId } = await databaseOf(server, owner, engine);
  const made = await server.request("POST", `/api/databases/${databaseId}/backups`, { key: owner.key });
  if (made.status !== 202) throw new Error(`could not back up a database for the auth matrix: ${JSON.stringify(made.body)}`);
  const backupId = made.body.backup.id as string;
  for (let tries = 0; tries < 300; tries++) {
    const backup = (await server.request("GET", `/api/databases/${databaseId}/backups/${backupId}`, { key: owner.key })).body.backup;
    if (backup.status !== "running") break;
    await Bun.sleep(100);
  }
  return { databaseId, backupId };
};

/**
 * A backup whose file was changed since: a verify of it is let in (202) and fails at once on the
 * checksum, before any throwaway container is made that could outlive the matrix's server.
 */
const changedBackupOf = async (server: TestServer, owner: Tenant) => {
  const { databaseId, backupId } = await backupOf(server, owner);
  const { body } = await server.request("GET", `/api/databases/${databaseId}/backups/${backupId}`, { key: owner.key });
  await Bun.write(join(server.dataDir, "backups", body.backup.storageKey), "not the file that was backed up");
  return { databaseId, backupId };
};

/** The smallest whole RDB snapshot (no keys: header, EOF opcode, a zero checksum), as a form's `file`. */
function emptyRdbForm(): FormData {
  const form = new FormData();
  form.append("file", new Blob([new TextEncoder().encode("REDIS0010"), new Uint8Array([0xff, 0, 0, 0, 0, 0, 0, 0, 0])]), "empty.rdb");
  return form;
}

export const DATABASE_ROUTES: AuthenticatedRoute[] = [
  { method: "GET", path: "/api/databases/" },
  // An invalid engine: authentication is what is checked, and nothing gets created.
  { method: "POST", path: "/api/databases/", body: { name: "matrix", engine: "none" } },
  { method: "GET", path: "/api/databases/:databaseId", resource: databaseOf },
  { method: "PATCH", path: "/api/databases/:databaseId/settings", body: { memoryMB: 300 }, resource: databaseOf },
  { method: "GET", path: "/api/databases/:databaseId/stats", resource: databaseOf },
  { method: "GET", path: "/api/databases/:databaseId/logs", resource: databaseOf },
  { method: "POST", path: "/api/databases/:databaseId/start", resource: databaseOf },
  { method: "POST", path: "/api/databases/:databaseId/stop", resource: databaseOf },
  { method: "DELETE", path: "/api/databases/:databaseId", resource: databaseOf },
  { method: "POST", path: "/api/databases/:databaseId/rotate-password", body: { password: "matrix-password-1" }, resource: databaseOf },
  { method: "GET", path: "/api/databases/:databaseId/operations", resource: databaseOf },
  { method: "POST", path: "/api/databases/:databaseId/backups", resource: databaseOf },
  { method: "GET", path: "/api/databases/:databaseId/backups", resource: databaseOf },
  { method: "GET", path: "/api/databases/:databaseId/backups/:backupId", resource: backupOf },
  { method: "POST", path: "/api/databases/:databaseId/backups/upload", body: () => emptyRdbForm(), resource: databaseOf },
  { method: "DELETE", path: "/api/databases/:databaseId/backups/:backupId", resource: backupOf },
  { method: "GET", path: "/api/databases/:databaseId/backups/:backupId/download", resource: backupOf },
  { method: "POST", path: "/api/databases/:databaseId/backups/:backupId/verify", resource: changedBackupOf },
  // A PostgreSQL backup: a restore of it is quick.
  {
    method: "POST",
    path: "/api/databases/:databaseId/restore",
    body: (params: Record<string, string>) => ({ backupId: params.backupId }),
    resource: (server: TestServer, owner: Tenant) => backupOf(server, owner, "postgresql"),
  },
  { method: "GET", path: "/api/databases/:databaseId/backup-schedule", resource: databaseOf },
  // Nightly: nothing runs while the matrix does.
  { method: "PUT", path: "/api/databases/:databaseId/backup-schedule", body: { cron: "0 3 * * *" }, resource: databaseOf },
  { method: "DELETE", path: "/api/databases/:databaseId/backup-schedule", resource: databaseOf },
];
