// Redis on the official `redis` image, started as `redis-server <config file>`. The platform
// writes that file before every start: an ACL user named after the database's username holding
// the SHA-256 of the password (the plaintext is never in the container, nor on a command line),
// the `default` user switched off, AOF persistence, and maxmemory under the container's limit.
// Needs Redis 6 or newer (ACL users).
import type { Credentials, EngineCommand, EngineDefinition, InventoryCount, Probe } from "./types";
import { asciiOf, userInfo } from "./text";
import { sha256Hex } from "../../crypto/tokens";

const PORT = 6379;
export const REDIS_CONFIG_PATH = "/usr/local/etc/redis/redis.conf";
const DATA_PATH = "/data";
/** Redis' own limit stays below the container's, so it refuses writes instead of being OOM-killed. */
const MAXMEMORY_SHARE = 0.75;

function maxmemoryMB(memoryMB: number): number {
  return Math.max(64, Math.floor(memoryMB * MAXMEMORY_SHARE));
}

/**
 * redis-cli has no timeout of its own before Redis 7.2 (`-t`, refused by 7.0's redis-cli) and
 * waits forever on a server that accepts the connection but never answers; the platform's own
 * time limit cannot stop an exec, so short commands run under `timeout` (coreutils in the Debian
 * images, busybox in the Alpine ones) and end by themselves.
 */
export const REDIS_CLI_TIMEOUT_SECONDS = 10;
/** Where a backup's snapshot is written in the container before it is read out (the container's own /tmp, not the data volume). */
const DUMP_FILE = "/tmp/platform-backup.rdb";
/** The snapshot Redis loads at start when AOF is off (its default `dbfilename`). */
const SNAPSHOT_FILE = "dump.rdb";

/** redis-cli over TCP as the database's user; the password comes from REDISCLI_AUTH. */
function unboundedCli(credentials: Credentials, ...command: string[]): Pick<EngineCommand, "argv" | "env"> {
  return {
    argv: ["redis-cli", "-h", "127.0.0.1", "-p", String(PORT), "--user", credentials.username, "--no-auth-warning", ...command],
    env: { REDISCLI_AUTH: credentials.password },
  };
}

/** redis-cli for a command that answers at once: probes, ACL and CONFIG changes. */
function cli(credentials: Credentials, ...command: string[]): Pick<EngineCommand, "argv" | "env"> {
  const client = unboundedCli(credentials, ...command);
  return { ...client, argv: ["timeout", String(REDIS_CLI_TIMEOUT_SECONDS), ...client.argv] };
}

function probe(credentials: Credentials): Probe {
  return { ...cli(credentials, "PING"), expectOutput: "PONG" };
}

/** INFO persistence says AOF is on and its rewrite from memory has finished. */
export function aofRewritten(info: string): boolean {
  const field = (name: string) => new RegExp(`^${name}:(\\S+)`, "m").exec(info)?.[1];
  return field("aof_enabled") === "1" && field("aof_rewrite_in_progress") === "0" && field("aof_rewrite_scheduled") === "0" && field("aof_last_bgrewrite_status") === "ok";
}

/** The keys of every database that INFO keyspace lists (`db0:keys=3,expires=0,...`), as one `keys` count. */
export function keysOfKeyspace(info: string): InventoryCount[] {
  if (!/^# Keyspace\r?$/m.test(info)) throw new Error(`INFO keyspace answered ${JSON.stringify(info.trim().slice(0, 200))}`);
  const keys = [...info.matchAll(/^db\d+:keys=(\d+)/gm)].reduce((total, match) => total + Number(match[1]), 0);
  return [{ name: "keys", count: keys }];
}

export function redisConfig(credentials: Credentials, memoryMB: number, options: { appendonly?: boolean } = {}): string {
  const lines = [
    "# Written by the platform before every start; edits here are replaced.",
    "bind * -::*",
    `port ${PORT}`,
    "protected-mode no",
    `dir ${DATA_PATH}`,
    `appendonly ${options.appendonly === false ? "no" : "yes"}`,
    "appendfsync everysec",
    `maxmemory ${maxmemoryMB(memoryMB)}mb`,
    "maxmemory-policy noeviction",
    // A backup's snapshot (redis-cli --rdb) is a diskless sync: start it at once, not after the default 5 s wait for more replicas.
    "repl-diskless-sync-delay 0",
  ];
  if (credentials.username !== "default") lines.push("user default off");
  lines.push(`user ${credentials.username} on #${sha256Hex(credentials.password)} ~* &* +@all`);
  return `${lines.join("\n")}\n`;
}

export const redis: EngineDefinition = {
  engine: "redis",
  title: "Redis",
  defaultVersion: "7",
  officialRepository: "redis",
  port: PORT,
  capabilities: ["CHOWN", "SETUID", "SETGID", "DAC_OVERRIDE", "FOWNER"],

  volumes: () => [{ suffix: "", containerPath: DATA_PATH }],
  environment: () => ({}),
  command: () => ["redis-server", REDIS_CONFIG_PATH],

  configFiles({ credentials, memoryMB }) {
    return { [REDIS_CONFIG_PATH]: redisConfig(credentials, memoryMB) };
  },

  credentialProblems: () => [],

  // Redis has numbered databases rather than named ones: the name is recorded, not part of the URL.
  connectionString(credentials, host, port) {
    return `redis://${userInfo(credentials.username, credentials.password)}@${host}:${port}`;
  },

  readinessProbe: probe,
  passwordProbes: (credentials) => [probe(credentials)],

  // Only the new password's hash goes into the container; the command travels on stdin.
  rotatePassword(credentials, newPassword) {
    return {
      ...cli(credentials),
      stdin: `ACL SETUSER ${credentials.username} resetpass #${sha256Hex(newPassword)}\n`,
      expectOutput: "OK",
    };
  },

  applyMemory(credentials, memoryMB) {
    return { ...cli(credentials, "CONFIG", "SET", "maxmemory", `${maxmemoryMB(memoryMB)}mb`), expectOutput: "OK" };
  },

  // Every numbered database, not only db 0 (which is all DBSIZE would count).
  inventory(credentials) {
    return cli(credentials, "INFO", "keyspace");
  },
  parseInventory: keysOfKeyspace,

  // A snapshot of a large instance takes as long as it takes: no time limit here. Into a file:
  // redis-cli 7.0 writing to stdout (`--rdb -`) leaves the 40-byte EOF marker of the transfer
  // after the RDB, which is then not a valid snapshot.
  dump(credentials) {
    return { ...unboundedCli(credentials, "--rdb", DUMP_FILE), outputFile: DUMP_FILE, outputCheck: ["redis-check-rdb", DUMP_FILE] };
  },

  dumpFormat: "rdb",
  // An RDB file opens with "REDIS" and its version, and ends with the EOF opcode (0xFF) and an
  // 8-byte checksum.
  dumpProblem({ bytes, head, tail }) {
    if (bytes < 18 || !asciiOf(head.subarray(0, 5)).startsWith("REDIS")) return "the output is not a Redis RDB snapshot";
    if (tail[tail.byteLength - 9] !== 0xff) return "the snapshot ended before its EOF marker";
    return null;
  },

  // An RDB snapshot is only read at start, and only without AOF (which would be loaded instead):
  // written as dump.rdb while stopped, booted from once with AOF off, then AOF turned on, which
  // rewrites it from memory; the restore is done once that rewrite has finished. Until then a
  // start with the usual config loads the old AOF, so a cut-off restore leaves the data as it was.
  restore({ credentials, memoryMB }) {
    return {
      mode: "data-file",
      directory: DATA_PATH,
      fileName: SNAPSHOT_FILE,
      bootFiles: { [REDIS_CONFIG_PATH]: redisConfig(credentials, memoryMB, { appendonly: false }) },
      afterStart: [{ ...cli(credentials, "CONFIG", "SET", "appendonly", "yes"), expectOutput: "OK" }],
      settled: { command: cli(credentials, "INFO", "persistence"), isDone: aofRewritten },
    };
  },
};
