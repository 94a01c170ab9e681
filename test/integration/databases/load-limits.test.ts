// Loads of uploaded dumps that are queries, not data (issue 32, item 3): a "dump" only needs the
// tool's banner and end marker, so what lies between may print without end or stall. Its client's
// output is bounded and an idle load is stopped: a verify or restore of such a dump fails with the
// reason, the server's memory stays put and it keeps answering, and nothing the load started keeps
// running in the container (a restore restarts the engine; a verify's container is removed). A
// load that trickles (a notice a second, for ever) is stopped at its deadline: the idle time plus
// PLATFORM_BACKUP_LOAD_SECONDS_PER_MB per MiB of the backup file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { TestServer } from "../../helpers/server";
import { deleteAllDatabases, poll, removeWorkspaceNetworks, sqlClient, withSql } from "../../helpers/databases";
import { runningDatabase, uploadDump, waitForOperationOfType } from "../../helpers/backups";
import { dockerCli } from "../../helpers/docker";
import { startLagProbe } from "../../helpers/event-loop-lag";

const IDLE_TIMEOUT_SECONDS = 4;
const MAX_RSS_GROWTH_MB = 50;
const MAX_LAG_MS = 100;
const FLOOD_REASON = "wrote more than 16 MiB of output, more than it may, and was stopped";
const IDLE_REASON = `made no progress (no input read, no output written) for ${IDLE_TIMEOUT_SECONDS} s and was stopped`;
/** A dump of a few hundred bytes: its deadline is the idle time, rounded up to the next second. */
const DEADLINE_REASON = `did not finish within ${IDLE_TIMEOUT_SECONDS + 1} s and was stopped`;

let server: TestServer;
let key: string;
let workspaceId: string;
let postgres: any;
let mysql: any;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_BACKUP_IDLE_TIMEOUT_SECONDS: String(IDLE_TIMEOUT_SECONDS) });
  ({ key, workspaceId } = await server.createKey("load limits"));
  [postgres, mysql] = await Promise.all([runningDatabase(server, key, "flood-pg", "postgresql"), runningDatabase(server, key, "flood-my", "mysql")]);
  await Promise.all([sqlClient.write(postgres.connectionString, "kept-pg"), sqlClient.write(mysql.connectionString, "kept-my")]);
}, 180_000);

afterAll(async () => {
  if (!server) return;
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

const postgresDump = (body: string) => `--\n-- PostgreSQL database dump\n--\n\n${body}\n\n--\n-- PostgreSQL database dump complete\n--\n`;
const mysqlDump = (body: string) => `-- MySQL dump 10.13  Distrib 8.4.0, for Linux (x86_64)\n\n${body}\n\n-- Dump completed on 2026-11-28  0:00:00\n`;

/** The recipe: a terabyte of COPY output, streamed. */
const POSTGRES_FLOOD = postgresDump("COPY (SELECT repeat('x', 1000000) FROM generate_series(1, 1000000)) TO STDOUT;");
/** A megabyte SELECT of REPEAT a million times over, each its own result set (the client holds one at a time). */
const MYSQL_FLOOD = mysqlDump(
  [
    "DELIMITER ;;",
    "CREATE PROCEDURE flood() BEGIN DECLARE i INT DEFAULT 0; WHILE i < 1000000 DO SELECT REPEAT('x', 1000000); SET i = i + 1; END WHILE; END;;",
    "DELIMITER ;",
    "CALL flood();",
  ].join("\n"),
);
const POSTGRES_STALL = postgresDump("SELECT pg_sleep(600);");
const MYSQL_STALL = mysqlDump("SELECT SLEEP(600);");
/** The recipe: about 30 bytes a second of notices, for days; never idle, never much output. */
const POSTGRES_TRICKLE = postgresDump("DO $$BEGIN LOOP PERFORM pg_sleep(1); RAISE NOTICE 'x'; END LOOP; END$$;");

async function uploaded(databaseId: string, dump: string): Promise<string> {
  const answer = await uploadDump(server, key, databaseId, gzipSync(dump), "application/gzip");
  expect(answer.status).toBe(201);
  return answer.body.backup.id;
}

function residentMB(): number {
  const status = readFileSync(`/proc/${server.process!.pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

/**
 * Runs `abuse` under the lag probe while watching the server's RSS: fails as soon as it grew by
 * MAX_RSS_GROWTH_MB (so a server that holds the output fails fast, not after eating the machine).
 */
async function watched<T>(abuse: () => Promise<T>): Promise<{ result: T; growthMB: number; maxLagMs: number; samples: number }> {
  const before = residentMB();
  let growthMB = 0;
  let watching = true;
  const guard = (async () => {
    while (watching) {
      growthMB = Math.max(growthMB, residentMB() - before);
      if (growthMB >= MAX_RSS_GROWTH_MB) throw new Error(`the server's RSS grew by ${Math.round(growthMB)} MB during the load`);
      await Bun.sleep(50);
    }
  })();
  const probe = startLagProbe(server);
  try {
    const result = await Promise.race([abuse(), guard as Promise<never>]);
    return { result, growthMB, maxLagMs: await probe.stop(), samples: probe.latencies.length };
  } finally {
    watching = false;
    await probe.stop().catch(() => 0);
  }
}

async function verifyToEnd(databaseId: string, backupId: string): Promise<any> {
  const started = await server.request("POST", `/api/databases/${databaseId}/backups/${backupId}/verify`, { key });
  expect(started.status).toBe(202);
  return poll(`the verify of ${backupId}`, 120_000, async () => {
    const { body } = await server.request("GET", `/api/databases/${databaseId}/backups/${backupId}`, { key });
    return body.backup?.verification?.status === "running" ? undefined : body.backup.verification;
  });
}

async function restoreToEnd(databaseId: string, backupId: string): Promise<any> {
  const answer = await server.request("POST", `/api/databases/${databaseId}/restore`, { key, body: { backupId } });
  expect(answer.status).toBe(202);
  return waitForOperationOfType(server, key, databaseId, "restore", 120_000);
}

async function verifyContainersOf(backupId: string): Promise<string[]> {
  const containers = await dockerCli("ps", "-a", "--filter", `label=platform.verify=${backupId}`, "--format", "{{.Names}}");
  const volumes = await dockerCli("volume", "ls", "--filter", `label=platform.verify=${backupId}`, "--format", "{{.Name}}");
  return `${containers}\n${volumes}`.split("\n").filter(Boolean);
}

/** The command lines running in the database's container. */
async function processesOf(databaseId: string): Promise<string[]> {
  return (await dockerCli("exec", `platform-db-${databaseId}`, "ps", "-eo", "args")).split("\n").filter(Boolean);
}

const ACTIVE_QUERIES: Record<string, string> = {
  postgresql: "SELECT query FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND state <> 'idle'",
  mysql: "SELECT INFO AS query FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND NOT IN ('Sleep', 'Daemon')",
};

/** What the engine runs now for other sessions than this one. */
async function activeQueries(database: any): Promise<string[]> {
  return withSql(database.connectionString, async (sql) => (await sql.unsafe(ACTIVE_QUERIES[database.engine]!)).map((row: any) => String(row.query)));
}

/** After a failed restore: the data as before, and neither the client nor its query still running. */
async function expectNothingLeft(database: any, client: string, kept: string) {
  expect(await sqlClient.read(database.connectionString)).toEqual([kept]);
  expect((await processesOf(database.id)).filter((args) => args.split(" ")[0] === client)).toEqual([]);
  expect(await activeQueries(database)).toEqual([]);
}

function expectServerUnharmed(watch: { growthMB: number; maxLagMs: number; samples: number }) {
  expect(watch.growthMB).toBeLessThan(MAX_RSS_GROWTH_MB);
  expect(watch.samples).toBeGreaterThan(0);
  expect(watch.maxLagMs).toBeLessThan(MAX_LAG_MS);
}

interface Case {
  title: string;
  database: () => any;
  /** The client that loads, as its command line begins. */
  client: string;
  dump: string;
  /** What the database held before the restore. */
  kept: string;
}

const FLOODS: Case[] = [
  { title: "PostgreSQL, the COPY recipe", database: () => postgres, client: "psql", dump: POSTGRES_FLOOD, kept: "kept-pg" },
  { title: "MySQL, a megabyte REPEAT selected a million times", database: () => mysql, client: "mysql", dump: MYSQL_FLOOD, kept: "kept-my" },
];
const STALLS: Case[] = [
  { title: "PostgreSQL, pg_sleep(600)", database: () => postgres, client: "psql", dump: POSTGRES_STALL, kept: "kept-pg" },
  { title: "MySQL, SLEEP(600)", database: () => mysql, client: "mysql", dump: MYSQL_STALL, kept: "kept-my" },
];

describe("a dump that prints without end", () => {
  for (const { title, database, client, dump, kept } of FLOODS) {
    test(`${title}, verified: fails saying ${client} printed too much; the server's RSS and loop stay put`, async () => {
      const backupId = await uploaded(database().id, dump);
      const watch = await watched(() => verifyToEnd(database().id, backupId));
      expect(watch.result).toMatchObject({ status: "failed", checks: [], error: `loading the backup failed: ${client} ${FLOOD_REASON}` });
      expectServerUnharmed(watch);
      expect(await verifyContainersOf(backupId)).toEqual([]);
    }, 180_000);

    test(`${title}, restored: fails with the reason, the data is put back, nothing runs on; the server's RSS and loop stay put`, async () => {
      const backupId = await uploaded(database().id, dump);
      const watch = await watched(() => restoreToEnd(database().id, backupId));
      expect(watch.result.status).toBe("failed");
      expect(watch.result.error).toStartWith(`${client} ${FLOOD_REASON}; the database was put back as it was, from the pre-restore backup bk_`);
      expectServerUnharmed(watch);
      await expectNothingLeft(database(), client, kept);
    }, 180_000);
  }
});

describe(`a dump that stalls (PLATFORM_BACKUP_IDLE_TIMEOUT_SECONDS=${IDLE_TIMEOUT_SECONDS})`, () => {
  for (const { title, database, client, dump, kept } of STALLS) {
    test(`${title}, restored: stopped after the idle time, the data put back, no ${client} and no query left in the container`, async () => {
      const backupId = await uploaded(database().id, dump);
      const operation = await restoreToEnd(database().id, backupId);
      expect(operation.status).toBe("failed");
      expect(operation.error).toStartWith(`${client} ${IDLE_REASON}; the database was put back as it was, from the pre-restore backup bk_`);
      await expectNothingLeft(database(), client, kept);
    }, 180_000);

    test(`${title}, verified: fails with the reason and its container is gone`, async () => {
      const backupId = await uploaded(database().id, dump);
      const verification = await verifyToEnd(database().id, backupId);
      expect(verification).toMatchObject({ status: "failed", error: `loading the backup failed: ${client} ${IDLE_REASON}` });
      expect(await verifyContainersOf(backupId)).toEqual([]);
    }, 180_000);
  }
});

describe("a dump that trickles a notice a second without end (its deadline: the idle time plus PLATFORM_BACKUP_LOAD_SECONDS_PER_MB per MiB)", () => {
  test("PostgreSQL, restored: stopped at its deadline, the data put back, no psql and no query left in the container", async () => {
    const backupId = await uploaded(postgres.id, POSTGRES_TRICKLE);
    const started = performance.now();
    const operation = await restoreToEnd(postgres.id, backupId);
    expect(operation.status).toBe("failed");
    expect(operation.error).toStartWith(`psql ${DEADLINE_REASON}; the database was put back as it was, from the pre-restore backup bk_`);
    expect(performance.now() - started).toBeLessThan(90_000);
    await expectNothingLeft(postgres, "psql", "kept-pg");
  }, 180_000);

  test("PostgreSQL, verified: fails at its deadline and its container is gone", async () => {
    const backupId = await uploaded(postgres.id, POSTGRES_TRICKLE);
    const verification = await verifyToEnd(postgres.id, backupId);
    expect(verification).toMatchObject({ status: "failed", error: `loading the backup failed: psql ${DEADLINE_REASON}` });
    expect(await verifyContainersOf(backupId)).toEqual([]);
  }, 180_000);
});
