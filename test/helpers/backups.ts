// Helpers for the backup tests: recognisable data written with the engines' real clients, waits
// for a backup or an operation to finish, and the raw download (bytes, not text) held to the
// OpenAPI document like every other answer.
import { RedisClient, SQL } from "bun";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { TestServer } from "./server";
import { expect } from "bun:test";
import { createDatabase, poll, waitForStatus } from "./databases";

export type BackupEngine = "postgresql" | "mysql" | "redis";

/** What was written, to be found again in the decompressed dump. */
export interface ProbeData {
  /** The table's name (SQL) or the keys' names (Redis). */
  names: string[];
  /** The rows' values (SQL) or the keys' values (Redis). */
  values: string[];
}

/**
 * Writes a table with rows (SQL) or string keys (Redis) whose names and values appear verbatim in
 * a dump. Redis keys and values are plain strings under 21 bytes: an RDB may store longer strings,
 * and lists, hashes or sets (listpacks), LZF-compressed, and then they could not be found by text.
 */
export async function writeProbeData(engine: BackupEngine, connectionString: string, marker: string): Promise<ProbeData> {
  const suffixes = ["one", "two", "six"];
  if (engine === "redis") {
    const probe = { names: suffixes.map((suffix) => `probe:${marker}:${suffix}`), values: suffixes.map((suffix) => `val-${marker}-${suffix}`) };
    const redis = new RedisClient(connectionString, { autoReconnect: false, connectionTimeout: 5000, enableOfflineQueue: false });
    try {
      await redis.connect();
      for (const [index, name] of probe.names.entries()) await redis.send("SET", [name, probe.values[index]!]);
    } finally {
      redis.close();
    }
    return probe;
  }
  const table = `backup_probe_${marker}`;
  const probe = { names: [table], values: suffixes.map((suffix) => `row-${marker}-${suffix}`) };
  const sql = new SQL(connectionString, { max: 1, connectionTimeout: 5, idleTimeout: 1 });
  try {
    // Names and values are this file's own (a hex marker), so they are spelled into the statements.
    await sql.unsafe(`CREATE TABLE ${table} (id INT PRIMARY KEY, label VARCHAR(100) NOT NULL)`);
    for (const [index, value] of probe.values.entries()) await sql.unsafe(`INSERT INTO ${table} (id, label) VALUES (${index + 1}, '${value}')`);
  } finally {
    await sql.close();
  }
  return probe;
}

/** A new database of `engine`, once running (small: 256 MB, 1 GB). */
export async function runningDatabase(server: TestServer, key: string, name: string, engine: string): Promise<any> {
  const { database } = await createDatabase(server, key, { name, engine, memoryMB: 256, storageGB: 1 });
  return waitForStatus(server, key, database.id, ["running"]);
}

/** POSTs a backup of the database and answers it once completed (the test fails when it is not). */
export async function completedBackup(server: TestServer, key: string, databaseId: string): Promise<any> {
  const started = await server.request("POST", `/api/databases/${databaseId}/backups`, { key });
  expect(started.status).toBe(202);
  const backup = await waitForBackup(server, key, databaseId, started.body.backup.id);
  expect(backup.status).toBe("completed");
  return backup;
}

/** GETs the backup until it is no longer `running`, and answers it (completed or failed). */
export function waitForBackup(server: TestServer, key: string, databaseId: string, backupId: string, timeoutMs = 60_000): Promise<any> {
  return poll(`backup ${backupId} to finish`, timeoutMs, async () => {
    const { status, body } = await server.request("GET", `/api/databases/${databaseId}/backups/${backupId}`, { key });
    if (status !== 200) throw new Error(`GET backup answered ${status}: ${JSON.stringify(body)}`);
    return body.backup?.status === "running" ? undefined : body.backup;
  });
}

/** Waits until the newest operation of `type` has finished (succeeded or failed), and answers it. */
export function waitForOperationOfType(server: TestServer, key: string, databaseId: string, type: string, timeoutMs = 30_000): Promise<any> {
  return poll(`a finished ${type} operation of ${databaseId}`, timeoutMs, async () => {
    const { body } = await server.request("GET", `/api/databases/${databaseId}/operations`, { key });
    const operation = body.operations?.find((candidate: any) => candidate.type === type);
    return operation && ["succeeded", "failed"].includes(operation.status) ? operation : undefined;
  });
}

export interface Download {
  status: number;
  headers: Headers;
  bytes: Uint8Array<ArrayBuffer>;
}

/** GET .../download as bytes (TestServer.request reads text), checked against the OpenAPI document. */
export async function downloadBackup(server: TestServer, key: string, databaseId: string, backupId: string, headers: Record<string, string> = {}): Promise<Download> {
  const path = `/api/databases/${databaseId}/backups/${backupId}/download`;
  const response = await fetch(server.baseUrl + path, { headers: { authorization: `Bearer ${key}`, ...headers } });
  const bytes = new Uint8Array(await response.arrayBuffer());
  let body: unknown = bytes;
  if ((response.headers.get("content-type") ?? "").includes("application/json")) body = JSON.parse(new TextDecoder().decode(bytes));
  await server.assertDocumented("GET", path, { status: response.status, headers: response.headers, body });
  return { status: response.status, headers: response.headers, bytes };
}

export function sha256Hex(bytes: Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
}

/**
 * The files under `dir` (recursively) that hold a backup of local storage: those whose path ends
 * with its storage key.
 */
export function filesOfStorageKey(dir: string, storageKey: string): string[] {
  const suffix = `/${storageKey.replace(/^\/+/, "")}`;
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => path.endsWith(suffix));
}

/** POST .../backups/upload with `body` as it is (bytes, a stream sent chunked, or a multipart form), checked against the OpenAPI document. */
export async function uploadDump(server: TestServer, key: string, databaseId: string, body: Uint8Array | ReadableStream<Uint8Array> | FormData, contentType?: string): Promise<{ status: number; body: any }> {
  const path = `/api/databases/${databaseId}/backups/upload`;
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (contentType) headers["content-type"] = contentType;
  const response = await fetch(server.baseUrl + path, { method: "POST", headers, body: body as BodyInit });
  const answer = { status: response.status, headers: response.headers, body: await response.json() };
  await server.assertDocumented("POST", path, answer);
  return answer;
}
