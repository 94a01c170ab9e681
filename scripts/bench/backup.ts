// Database backup benchmark (issue 12), on the compiled binary and the real local Docker engine with
// the stand-in images (the same ones test/setup.ts selects). One PostgreSQL database is created
// through the API and filled with BENCH_BACKUP_MB of table data (md5 text: gzip halves it, no more),
// then, on the same data:
//   backup    ours: POST .../backups, polled until completed (wall time from the POST, and the row's
//             createdAt -> finishedAt); reference: `docker exec pg_dump ... | gzip -6 > file` by hand
//   download  GET .../backups/{id}/download streamed to disk; size, SHA-256 and `gunzip -t` checked
//   restore   ours: POST .../restore, polled until its operation succeeded: the total, the total
//             without the pre-restore backup it makes first (that row's createdAt -> finishedAt), and
//             the load alone; reference: `gunzip -c file | docker exec -i psql -q -1 ...` by hand
// and, during our backup, download and restore, the platform process's VmRSS (sampled every 100 ms),
// its CPU time and the longest event-loop stall it logged.
// Targets: backup and restore (without the pre-restore backup) ours/reference <= 1.10x; peak RSS
// growth < 50 MB in each phase.
//
//   bun run build && bun scripts/bench/backup.ts [--rebuild]
//
// Settings: BENCH_BACKUP_MB (table data to write, default 1024); BENCH_ROUNDS (default 1: backups,
// then restores, ours and the reference in turn, each this many times; the fastest of each is
// compared, as other work on the machine only ever slows a run); BENCH_BINARY=path benchmarks
// another build of the platform instead of ./platform (not rebuilt).
// Traffic goes only to 127.0.0.1 and the bench's own container; the database is deleted through the
// API (its backups with it), the server stopped and temp dirs (dumps, downloads) removed at the end.
import { createWriteStream, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { pipeline } from "node:stream/promises";
import { useStandInImages } from "../../test/helpers/stand-ins";
import { removeTempDirs, tempDir } from "../../test/helpers/temp";
import type { TestServer } from "../../test/helpers/server";
import { createDatabase, poll, removeWorkspaceNetworks, waitForStatus } from "../../test/helpers/databases";
import { ensureBinary, residentMegabytes, startBinary, printServerTail, runBenchmark } from "./binary";

useStandInImages();

const DATA_MB = Number(process.env.BENCH_BACKUP_MB ?? 1024);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const DATABASE_MEMORY_MB = 1024;
const DATABASE_STORAGE_GB = Math.max(5, Math.ceil((DATA_MB * 6) / 1024));
const RATIO_TARGET = 1.1;
const RSS_TARGET_MB = 50;
const RSS_SAMPLE_MS = 100;
const POLL_MS = 100;
// Generous: a dump through gzip runs at tens of MB/s on 2 shared cores.
const PHASE_TIMEOUT_MS = 120_000 + DATA_MB * 1_000;
const SAMPLE_ROWS = 10_000;
const BATCH_ROWS = 1_000_000;
const MB = 1024 * 1024;

/** What the bench needs to reach the engine itself, as the reference does. */
interface Engine {
  containerId: string;
  username: string;
  password: string;
  databaseName: string;
}

interface FillTable {
  name: string;
  columns: string;
  /** One row per `i` of generate_series; distinct md5s, so gzip finds no long repeats. */
  row: string;
}

const FILL_TABLES: FillTable[] = [
  {
    name: "bench_accounts",
    columns: "id bigint PRIMARY KEY, email text NOT NULL, profile text NOT NULL",
    row: "i, md5(i::text) || '@example.test', md5((i * 3)::text) || md5((i * 7)::text) || md5((i * 11)::text)",
  },
  {
    name: "bench_events",
    columns: "id bigint PRIMARY KEY, account_id bigint NOT NULL, at timestamptz NOT NULL, payload text NOT NULL",
    row: "i, i % 100000, timestamptz '2024-01-01' + i * interval '1 second', md5((-i)::text) || md5((i * 13)::text)",
  },
  {
    name: "bench_documents",
    columns: "id bigint PRIMARY KEY, body jsonb NOT NULL",
    row: "i, jsonb_build_object('title', md5((i * 17)::text), 'body', md5((i * 19)::text) || md5((i * 23)::text), 'n', i)",
  },
];

interface RssUse {
  baselineMb: number;
  peakMb: number;
  /** Right after the phase: what stays, against the peak that may be garbage not yet collected. */
  endMb: number;
}

interface Observed<T> {
  result: T;
  ms: number;
  rss: RssUse;
  /** CPU time (user + system) of the platform process during the phase. */
  cpuSeconds: number;
  /** The longest stall of its event loop it reported meanwhile (0: none of 20 ms or more). */
  longestStallMs: number;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const ratio = (ours: number, reference: number) => ours / reference;
const verdict = (value: number, target: number) => (value <= target ? "meets" : "misses");
const elapsed = (from: string, to: string) => Date.parse(to) - Date.parse(from);
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

const CLOCK_TICKS_PER_SECOND = 100;
// What the server logs for each stall of PLATFORM_EVENT_LOOP_WARN_MS or more (20 ms on a test server).
const STALL_REPORT = /\[event-loop\] blocked for (\d+) ms/g;

/** utime + stime from /proc/<pid>/stat (fields 14 and 15; the name in parentheses may hold spaces). */
function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** Runs `work`, sampling the server's VmRSS every RSS_SAMPLE_MS meanwhile, counting its CPU time and reading its stall reports. */
async function observed<T>(server: TestServer, work: () => Promise<T>): Promise<Observed<T>> {
  const pid = server.process!.pid;
  const reportsFrom = server.output.length;
  const cpuBefore = cpuSecondsOf(pid);
  const baselineMb = residentMegabytes(pid);
  let peakMb = baselineMb;
  const sampler = setInterval(() => (peakMb = Math.max(peakMb, residentMegabytes(pid))), RSS_SAMPLE_MS);
  const started = performance.now();
  try {
    const result = await work();
    const ms = performance.now() - started;
    const endMb = residentMegabytes(pid);
    const cpuSeconds = cpuSecondsOf(pid) - cpuBefore;
    // A stall is reported by the first timer after it: that timer gets its turn.
    await Bun.sleep(200);
    const longestStallMs = Math.max(0, ...[...server.output.slice(reportsFrom).matchAll(STALL_REPORT)].map((match) => Number(match[1])));
    return { result, ms, rss: { baselineMb, peakMb: Math.max(peakMb, endMb), endMb }, cpuSeconds, longestStallMs };
  } finally {
    clearInterval(sampler);
  }
}

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await work();
  return { result, ms: performance.now() - started };
}

/** Calls `read` every POLL_MS (finer than the test helpers' poll: it bounds the timing error) until it answers. */
async function waitUntil<T>(what: string, read: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + PHASE_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const value = await read();
    if (value !== undefined) return value;
    await Bun.sleep(POLL_MS);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Runs a command on the host; answers its stdout, throws with its stderr when it fails. */
async function run(argv: string[], options: { env?: Record<string, string>; stdin?: string } = {}): Promise<string> {
  const child = Bun.spawn(argv, {
    env: { ...process.env, ...options.env },
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(`${argv.slice(0, 4).join(" ")}... exited with ${code}: ${stderr.trim().slice(-2000)}`);
  return stdout;
}

/** A bash pipeline with `$1`.. bound to `args` (no quoting of values into the script); PGPASSWORD comes from the environment. */
function runPipeline(engine: Engine, script: string, args: string[]): Promise<string> {
  return run(["bash", "-c", `set -o pipefail; ${script}`, "bench", ...args], { env: { PGPASSWORD: engine.password } });
}

function psqlArgv(engine: Engine, ...extra: string[]): string[] {
  return [
    "docker", "exec", "-i", "-e", "PGPASSWORD", engine.containerId,
    "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U", engine.username, "-d", engine.databaseName, ...extra,
  ];
}

/** Statements on stdin: psql runs each one on its own, so VACUUM may be among them. */
async function runSql(engine: Engine, statements: string): Promise<void> {
  await run(psqlArgv(engine), { env: { PGPASSWORD: engine.password }, stdin: statements });
}

async function querySql(engine: Engine, query: string): Promise<string> {
  return (await run(psqlArgv(engine, "-tA", "-c", query), { env: { PGPASSWORD: engine.password } })).trim();
}

function engineOf(database: { id: string; username: string; databaseName: string; connectionString: string }): Engine {
  const listed = Bun.spawnSync(["docker", "ps", "-q", "--filter", `label=platform.database=${database.id}`]);
  const containerId = listed.stdout.toString().trim().split("\n")[0];
  if (!containerId) throw new Error(`no running container of database ${database.id}`);
  const password = decodeURIComponent(new URL(database.connectionString).password);
  if (!password || password.includes("*")) throw new Error("the API answered a masked connection string");
  return { containerId, username: database.username, databaseName: database.databaseName, password };
}

// ---- the data -------------------------------------------------------------------------------

async function insertRows(engine: Engine, table: FillTable, first: number, last: number) {
  await runSql(engine, `INSERT INTO ${table.name} SELECT ${table.row} FROM generate_series(${first}, ${last}) AS i;\n`);
}

/** Rows until the table's heap holds about `targetBytes`: a first sample gives its bytes per row. */
async function fillTable(engine: Engine, table: FillTable, targetBytes: number): Promise<number> {
  await runSql(engine, `CREATE TABLE ${table.name} (${table.columns});\n`);
  await insertRows(engine, table, 1, SAMPLE_ROWS);
  const bytesPerRow = Number(await querySql(engine, `SELECT pg_relation_size('${table.name}')`)) / SAMPLE_ROWS;
  const rows = Math.max(SAMPLE_ROWS, Math.round(targetBytes / bytesPerRow));
  for (let first = SAMPLE_ROWS + 1; first <= rows; first += BATCH_ROWS) {
    await insertRows(engine, table, first, Math.min(rows, first + BATCH_ROWS - 1));
  }
  return rows;
}

/** Fills the tables, then freezes them: hint bits written now are not written by whichever dump reads first. */
async function fill(engine: Engine): Promise<number> {
  let rows = 0;
  for (const table of FILL_TABLES) {
    rows += await fillTable(engine, table, (DATA_MB * MB) / FILL_TABLES.length);
    log(`filled ${table.name}`);
  }
  await runSql(engine, "VACUUM (FREEZE, ANALYZE);\nCHECKPOINT;\n");
  // Gigabytes of data and WAL still being written back to disk would slow whichever phase runs first.
  await run(["sync"]);
  return rows;
}

function tableSizes(engine: Engine): Promise<string> {
  const names = FILL_TABLES.map((table) => `'${table.name}'`).join(", ");
  return querySql(engine, `SELECT sum(pg_relation_size(oid)) || ' ' || sum(pg_total_relation_size(oid)) FROM pg_class WHERE relname IN (${names})`);
}

async function rowCount(engine: Engine): Promise<number> {
  const counts = FILL_TABLES.map((table) => `(SELECT count(*) FROM ${table.name})`).join(" + ");
  return Number(await querySql(engine, `SELECT ${counts}`));
}

async function expectRows(engine: Engine, expected: number, after: string) {
  const found = await rowCount(engine);
  if (found !== expected) throw new Error(`after ${after} the tables hold ${found} rows, not ${expected}`);
}

// ---- the reference --------------------------------------------------------------------------

function referenceBackup(engine: Engine, file: string): Promise<string> {
  const script =
    'docker exec -e PGPASSWORD "$1" pg_dump -h 127.0.0.1 -U "$2" -d "$3" --clean --if-exists --no-owner --no-privileges | gzip -6 > "$4"';
  return runPipeline(engine, script, [engine.containerId, engine.username, engine.databaseName, file]);
}

function referenceRestore(engine: Engine, file: string): Promise<string> {
  const script = 'gunzip -c "$4" | docker exec -i -e PGPASSWORD "$1" psql -X -q -1 -v ON_ERROR_STOP=1 -h 127.0.0.1 -U "$2" -d "$3" > /dev/null';
  return runPipeline(engine, script, [engine.containerId, engine.username, engine.databaseName, file]);
}

/** The size of what a gzip file holds, from its trailer (modulo 4 GiB, as gzip records it). */
async function uncompressedBytes(file: string): Promise<number> {
  const listing = await run(["gzip", "-l", file]);
  return Number(listing.trim().split("\n")[1]!.trim().split(/\s+/)[1]);
}

// ---- ours, through the API ------------------------------------------------------------------

class Platform {
  constructor(
    readonly server: TestServer,
    readonly key: string,
    readonly databaseId: string,
  ) {}

  async call(method: string, path: string, body?: unknown, expected = 200) {
    const answer = await this.server.request(method, `/api/databases/${this.databaseId}${path}`, { key: this.key, body });
    if (answer.status !== expected) throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return answer.body;
  }

  /** POST .../backups until the backup is no longer running; answers it completed. */
  async backup(): Promise<any> {
    const { backup } = await this.call("POST", "/backups", undefined, 202);
    const finished = await waitUntil(`backup ${backup.id}`, async () => {
      const { backup: current } = await this.call("GET", `/backups/${backup.id}`);
      return current.status === "running" ? undefined : current;
    });
    if (finished.status !== "completed") throw new Error(`the backup ${finished.status}: ${finished.error}`);
    return finished;
  }

  /** GET .../download streamed to `file` (never held in memory); answers its size. */
  async download(backupId: string, file: string): Promise<number> {
    const url = `${this.server.baseUrl}/api/databases/${this.databaseId}/backups/${backupId}/download`;
    const response = await fetch(url, { headers: { authorization: `Bearer ${this.key}` } });
    if (response.status !== 200 || !response.body) throw new Error(`download answered ${response.status}: ${await response.text()}`);
    await pipeline(Readable.fromWeb(response.body as unknown as NodeReadableStream), createWriteStream(file));
    return statSync(file).size;
  }

  /** POST .../restore, then its operation until finished; answers the POST's own time and the operation. */
  async restore(backupId: string): Promise<{ answeredMs: number; operation: any }> {
    const { result: accepted, ms: answeredMs } = await timed(() => this.call("POST", "/restore", { backupId }, 202));
    const operation = await waitUntil(`restore operation ${accepted.operationId}`, async () => {
      const { operations } = await this.call("GET", "/operations");
      const current = operations.find((candidate: any) => candidate.id === accepted.operationId);
      return current && ["succeeded", "failed"].includes(current.status) ? current : undefined;
    });
    if (operation.status !== "succeeded") throw new Error(`the restore failed: ${operation.error}`);
    return { answeredMs, operation };
  }

  async newestBackupOfType(type: string): Promise<any> {
    const { backups } = await this.call("GET", "/backups");
    const found = backups.find((backup: any) => backup.type === type);
    if (!found) throw new Error(`no ${type} backup listed`);
    return found;
  }
}

// ---- the run --------------------------------------------------------------------------------

interface OurRestore extends Observed<{ answeredMs: number; operation: any }> {
  preRestore: any;
}

interface Results {
  backups: Observed<any>[];
  referenceBackupsMs: number[];
  download: Observed<number>;
  restores: OurRestore[];
  referenceRestoresMs: number[];
  dumpBytes: number;
  referenceDumpBytes: number;
  referenceGzipBytes: number;
}

/** Ours and the reference one after the other, the reference first in odd rounds: neither always gets the warmer or quieter moment. */
async function inTurn<Ours, Reference>(round: number, ours: () => Promise<Ours>, reference: () => Promise<Reference>): Promise<[Ours, Reference]> {
  if (round % 2 === 0) {
    const oursResult = await ours();
    return [oursResult, await reference()];
  }
  const referenceResult = await reference();
  return [await ours(), referenceResult];
}

async function ourRestore(platform: Platform, engine: Engine, backupId: string, expectedRows: number): Promise<OurRestore> {
  const restore = await observed(platform.server, () => platform.restore(backupId));
  await expectRows(engine, expectedRows, "our restore");
  return { ...restore, preRestore: await platform.newestBackupOfType("pre-restore") };
}

async function timedReferenceRestore(engine: Engine, file: string, expectedRows: number): Promise<number> {
  const { ms } = await timed(() => referenceRestore(engine, file));
  await expectRows(engine, expectedRows, "the reference restore");
  return ms;
}

async function measure(platform: Platform, engine: Engine, workDir: string, expectedRows: number): Promise<Results> {
  const referenceFile = join(workDir, "reference.sql.gz");
  const downloaded = join(workDir, "downloaded.sql.gz");
  const backups: Observed<any>[] = [];
  const referenceBackupsMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    log(`backups, round ${round + 1}/${ROUNDS}: through the API and by hand (docker exec pg_dump | gzip -6)...`);
    const [backup, referenceMs] = await inTurn(
      round,
      () => observed(platform.server, () => platform.backup()),
      async () => (await timed(() => referenceBackup(engine, referenceFile))).ms,
    );
    backups.push(backup);
    referenceBackupsMs.push(referenceMs);
  }
  await run(["gunzip", "-t", referenceFile]);

  log("download...");
  const restored = backups[0]!.result;
  const download = await observed(platform.server, () => platform.download(restored.id, downloaded));
  await checkDownload(downloaded, restored);

  const restores: OurRestore[] = [];
  const referenceRestoresMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    log(`restores, round ${round + 1}/${ROUNDS}: through the API and by hand (gunzip -c | docker exec -i psql -1)...`);
    const [restore, referenceMs] = await inTurn(
      round,
      () => ourRestore(platform, engine, restored.id, expectedRows),
      () => timedReferenceRestore(engine, downloaded, expectedRows),
    );
    restores.push(restore);
    referenceRestoresMs.push(referenceMs);
  }

  return {
    backups,
    referenceBackupsMs,
    download,
    restores,
    referenceRestoresMs,
    dumpBytes: await uncompressedBytes(downloaded),
    referenceDumpBytes: await uncompressedBytes(referenceFile),
    referenceGzipBytes: statSync(referenceFile).size,
  };
}

async function checkDownload(file: string, backup: { sizeBytes: number; sha256: string }) {
  const size = statSync(file).size;
  if (size !== backup.sizeBytes) throw new Error(`the download has ${size} bytes, the backup ${backup.sizeBytes}`);
  const sha256 = (await run(["sha256sum", file])).split(" ")[0];
  if (sha256 !== backup.sha256) throw new Error(`the download's SHA-256 ${sha256} is not the backup's ${backup.sha256}`);
  await run(["gunzip", "-t", file]);
}

const fastest = <T>(runs: T[], msOf: (run: T) => number): T => runs.reduce((best, run) => (msOf(run) < msOf(best) ? run : best));
const allRounds = (runs: number[]) => (runs.length > 1 ? ` (rounds: ${runs.map((ms) => (ms / 1000).toFixed(1)).join(", ")})` : "");

function printComparison(results: Results) {
  const backup = fastest(results.backups, (run) => run.ms);
  const referenceBackupMs = Math.min(...results.referenceBackupsMs);
  const restore = fastest(results.restores, (run) => run.ms);
  const referenceRestoreMs = Math.min(...results.referenceRestoresMs);
  const { preRestore, result: { operation, answeredMs } } = restore;
  const backupRowMs = elapsed(backup.result.createdAt, backup.result.finishedAt);
  const preRestoreMs = elapsed(preRestore.createdAt, preRestore.finishedAt);
  const restoreWithoutPreRestoreMs = restore.ms - preRestoreMs;
  const loadMs = elapsed(preRestore.finishedAt, operation.finishedAt);
  const backupRatio = ratio(backup.ms, referenceBackupMs);
  const restoreRatio = ratio(restoreWithoutPreRestoreMs, referenceRestoreMs);
  const download = results.download;
  const mbps = (download.result / MB / (download.ms / 1000)).toFixed(0);
  const target = (value: number) => `<= ${RATIO_TARGET.toFixed(2)}x: ${verdict(value, RATIO_TARGET)}`;

  console.log(`\n| phase${ROUNDS > 1 ? ` (fastest of ${ROUNDS} rounds)` : ""} | ours | reference | ours/ref | target |`);
  console.log(`|---|---|---|---|---|`);
  console.log(`| backup (POST -> completed) | ${seconds(backup.ms)}${allRounds(results.backups.map((run) => run.ms))} | ${seconds(referenceBackupMs)}${allRounds(results.referenceBackupsMs)} | ${backupRatio.toFixed(2)}x | ${target(backupRatio)} |`);
  console.log(`| - backup row createdAt -> finishedAt | ${seconds(backupRowMs)} | | ${ratio(backupRowMs, referenceBackupMs).toFixed(2)}x | |`);
  console.log(`| download (to disk) | ${seconds(download.ms)} (${mbps} MB/s) | | | |`);
  console.log(`| restore total (POST -> succeeded) | ${seconds(restore.ms)}${allRounds(results.restores.map((run) => run.ms))} | ${seconds(referenceRestoreMs)}${allRounds(results.referenceRestoresMs)} | ${ratio(restore.ms, referenceRestoreMs).toFixed(2)}x | |`);
  console.log(`| - POST restore answered (the file checked first) | ${seconds(answeredMs)} | | | |`);
  console.log(`| - pre-restore backup, row createdAt -> finishedAt | ${seconds(preRestoreMs)} | | | |`);
  console.log(`| restore without the pre-restore backup | ${seconds(restoreWithoutPreRestoreMs)} | ${seconds(referenceRestoreMs)} | ${restoreRatio.toFixed(2)}x | ${target(restoreRatio)} |`);
  console.log(`| - load alone (pre-restore finishedAt -> operation finishedAt) | ${seconds(loadMs)} | ${seconds(referenceRestoreMs)} | ${ratio(loadMs, referenceRestoreMs).toFixed(2)}x | |`);
}

function printProcess(results: Results) {
  const phases: [string, Observed<unknown>][] = [
    ...results.backups.map((run, index) => [`backup #${index + 1}`, run] as [string, Observed<unknown>]),
    ["download", results.download],
    ...results.restores.map((run, index) => [`restore #${index + 1} (with its pre-restore backup)`, run] as [string, Observed<unknown>]),
  ];
  console.log(`\n| platform process | CPU s | longest loop stall ms | RSS baseline MB | peak MB | end MB | peak growth MB | target |`);
  console.log(`|---|---|---|---|---|---|---|---|`);
  for (const [phase, { rss, cpuSeconds, longestStallMs }] of phases) {
    const growth = rss.peakMb - rss.baselineMb;
    console.log(
      `| ${phase} | ${cpuSeconds.toFixed(1)} | ${longestStallMs} | ${rss.baselineMb.toFixed(1)} | ${rss.peakMb.toFixed(1)} | ${rss.endMb.toFixed(1)} | ${growth.toFixed(1)} | < ${RSS_TARGET_MB}: ${growth < RSS_TARGET_MB ? "meets" : "misses"} |`,
    );
  }
}

function printResults(results: Results, sizes: string, loadAverages: string[]) {
  const [heapBytes, totalBytes] = sizes.split(" ").map(Number) as [number, number];
  const megabytes = (bytes: number) => `${(bytes / MB).toFixed(0)} MB`;
  console.log(
    `\ndata: tables ${megabytes(heapBytes)} (with indexes ${megabytes(totalBytes)}), dump ${megabytes(results.dumpBytes)} ` +
      `(reference ${megabytes(results.referenceDumpBytes)}), gzip ours ${megabytes(results.backups[0]!.result.sizeBytes)}, reference ${megabytes(results.referenceGzipBytes)}`,
  );
  // Other work on the machine's 2 cores shows in every timing: the load average says whether there was any.
  console.log(`machine load average (1, 5, 15 min) before the measures: ${loadAverages[0]}; after: ${loadAverages[1]}`);
  printComparison(results);
  printProcess(results);
}

const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

/** Deletes the database through the API (waiting out a running operation), then whatever of it a failed delete left. */
async function deleteDatabase(server: TestServer, key: string, databaseId: string) {
  await poll(`database ${databaseId} to be deleted`, 120_000, async () => {
    const answer = await server.request("DELETE", `/api/databases/${databaseId}`, { key });
    return answer.status === 409 ? undefined : answer;
  }).catch((error) => console.error(`deleting the database through the API failed: ${(error as Error).message}`));
}

function removeLeftovers(databaseId: string) {
  const label = `label=platform.database=${databaseId}`;
  const containers = Bun.spawnSync(["docker", "ps", "-aq", "--filter", label]).stdout.toString().split("\n").filter(Boolean);
  if (containers.length) Bun.spawnSync(["docker", "rm", "-f", ...containers], { stdout: "ignore", stderr: "ignore" });
  const volumes = Bun.spawnSync(["docker", "volume", "ls", "-q", "--filter", label]).stdout.toString().split("\n").filter(Boolean);
  if (volumes.length) Bun.spawnSync(["docker", "volume", "rm", ...volumes], { stdout: "ignore", stderr: "ignore" });
}


async function main() {
  if (!Number.isFinite(DATA_MB) || DATA_MB <= 0) throw new Error(`BENCH_BACKUP_MB must be a positive number, not ${process.env.BENCH_BACKUP_MB}`);
  if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`BENCH_ROUNDS must be a whole number >= 1, not ${process.env.BENCH_ROUNDS}`);
  await ensureBinary();
  let server: TestServer | undefined;
  let key = "";
  let workspaceId = "";
  let databaseId = "";

  let cleanedUp = false;
  const cleanUp = async () => {
    if (cleanedUp) return;
    cleanedUp = true;
    if (server?.process && databaseId) await deleteDatabase(server, key, databaseId);
    await server?.stop();
    if (databaseId) removeLeftovers(databaseId);
    if (workspaceId) removeWorkspaceNetworks(workspaceId);
    removeTempDirs();
  };
  process.on("SIGINT", () => void cleanUp().then(() => process.exit(130)));

  try {
    server = await startBinary({});
    ({ key, workspaceId } = await server.createKey("bench"));
    const workDir = tempDir("platform-bench-backup-");

    const name = `bench-backup-${Date.now().toString(36)}`;
    const created = await createDatabase(server, key, { name, engine: "postgresql", memoryMB: DATABASE_MEMORY_MB, storageGB: DATABASE_STORAGE_GB });
    databaseId = created.database.id;
    const database = await waitForStatus(server, key, databaseId, ["running"]);
    const engine = engineOf(database);
    log(`database ${databaseId} running; filling ${DATA_MB} MB...`);
    const { result: rows, ms: fillMs } = await timed(() => fill(engine));
    log(`filled ${rows} rows in ${seconds(fillMs)}`);

    const loadBefore = loadAverage();
    const results = await measure(new Platform(server, key, databaseId), engine, workDir, rows);
    printResults(results, await tableSizes(engine), [loadBefore, loadAverage()]);
  } catch (error) {
    printServerTail(server);
    throw error;
  } finally {
    await cleanUp();
  }
}

await runBenchmark(main);
