// What the benchmarks share: the compiled ./platform (rebuilt when missing, older than src/, or
// with --rebuild), started through the test suite's server helper (same start-up parsing, temp
// data dir, CLI keys), the resident memory of a process, and the median of measurements.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { TestServer } from "../../test/helpers/server";

const ROOT = resolve(import.meta.dir, "../..");
const BINARY = join(ROOT, "platform");

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * A binary older than the sources would measure code that is not there any more. BENCH_BINARY
 * names another build to measure instead (e.g. a copy made right after a good build): not rebuilt.
 */
export async function ensureBinary(): Promise<void> {
  if (process.env.BENCH_BINARY) return;
  const stale = existsSync(BINARY) && newestMtime(join(ROOT, "src")) > statSync(BINARY).mtimeMs;
  if (existsSync(BINARY) && !stale && !process.argv.includes("--rebuild")) return;
  console.log(`building ./platform (bun run build)${stale ? ": it is older than src/" : ""}...`);
  const build = Bun.spawn([process.execPath, "run", "build"], { cwd: ROOT, stdout: "ignore", stderr: "pipe" });
  if ((await build.exited) !== 0) throw new Error(`bun run build failed:\n${await new Response(build.stderr).text()}`);
}

/**
 * `./platform serve` on a temp data dir and free ports, traffic on 127.0.0.1 only. The egress
 * firewall stays off: its iptables rules outlive the process by design, and a benchmark leaves the
 * host as it found it.
 */
export function startBinary(env: Record<string, string>): Promise<TestServer> {
  process.env.PLATFORM_TEST_BINARY = process.env.BENCH_BINARY ? resolve(process.env.BENCH_BINARY) : BINARY;
  return TestServer.start({ PLATFORM_EGRESS_FIREWALL: "off", ...env });
}

export function residentMegabytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((entry) => entry.startsWith("VmRSS:"));
  return Number(/(\d+)/.exec(line ?? "")?.[1] ?? NaN) / 1024;
}

/** For a benchmark that failed: the last lines its server wrote, where the cause usually is. */
export function printServerTail(server: TestServer | undefined) {
  if (server) console.error(`last lines of the server's output:\n${server.output.split("\n").slice(-20).join("\n")}`);
}

/** Runs a benchmark's main: a failure prints its message (not a stack) and makes the exit code 1. */
export async function runBenchmark(main: () => Promise<void>) {
  await main().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
