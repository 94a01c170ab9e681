// API benchmark of the compiled binary: throughput and p50/p99 latency of the authenticated
// GET /api/api-keys/ against the unauthenticated GET /api/platform/config as the reference, and the
// idle memory (VmRSS) right after start against the 80 MB target.
//
//   bun scripts/bench/api.ts [--rebuild]     (builds ./platform when missing or older than src/)
//
// Settings: BENCH_REQUESTS (default 20000), BENCH_CONCURRENCY (default 32). Traffic stays on
// 127.0.0.1; the server runs on a temp data dir that is removed at the end.
import { removeTempDirs } from "../../test/helpers/temp";
import type { TestServer } from "../../test/helpers/server";
import { ensureBinary, residentMegabytes, startBinary } from "./binary";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const WARMUP_REQUESTS = 1_000;
const IDLE_SETTLE_MS = 1_000;
const RSS_TARGET_MB = 80;

interface Result {
  label: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failures: number;
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!;
}

async function measure(label: string, url: string, headers: Record<string, string>, requests: number): Promise<Result> {
  const latencies = new Float64Array(requests);
  let next = 0;
  let failures = 0;
  const worker = async () => {
    while (next < requests) {
      const index = next++;
      const started = performance.now();
      const response = await fetch(url, { headers });
      await response.arrayBuffer();
      latencies[index] = performance.now() - started;
      if (response.status !== 200) failures++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - started) / 1000;
  const sorted = Array.from(latencies).sort((a, b) => a - b);
  return { label, requestsPerSecond: requests / seconds, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), failures };
}

const format = (value: number, digits = 2) => value.toFixed(digits).padStart(10);

async function main() {
  await ensureBinary();
  let server: TestServer | undefined;
  process.on("SIGINT", () => {
    server?.process?.kill("SIGKILL");
    removeTempDirs();
    process.exit(130);
  });
  try {
    // The per-key limit would measure the limiter, not the server.
    server = await startBinary({ PLATFORM_API_RATE_BURST: "1000000000", PLATFORM_API_RATE_PER_SECOND: "1000000000" });
    const pid = server.process!.pid;
    await Bun.sleep(IDLE_SETTLE_MS);
    const idleRss = residentMegabytes(pid);
    const { key } = await server.createKey("bench");

    const authenticated = { url: `${server.baseUrl}/api/api-keys/`, headers: { authorization: `Bearer ${key}` } };
    const reference = { url: `${server.baseUrl}/api/platform/config`, headers: {} };
    await measure("warm-up", authenticated.url, authenticated.headers, WARMUP_REQUESTS);
    await measure("warm-up", reference.url, reference.headers, WARMUP_REQUESTS);
    const ours = await measure("GET /api/api-keys/ (Bearer key)", authenticated.url, authenticated.headers, REQUESTS);
    const base = await measure("GET /api/platform/config (public)", reference.url, reference.headers, REQUESTS);
    const loadedRss = residentMegabytes(pid);

    console.log(`\n${REQUESTS} requests per endpoint, ${CONCURRENCY} concurrent, Bun fetch on 127.0.0.1\n`);
    console.log(`${"endpoint".padEnd(36)}${"req/s".padStart(10)}${"p50 ms".padStart(10)}${"p99 ms".padStart(10)}${"non-200".padStart(10)}`);
    for (const result of [ours, base]) {
      console.log(
        `${result.label.padEnd(36)}${format(result.requestsPerSecond, 0)}${format(result.p50Ms)}${format(result.p99Ms)}${String(result.failures).padStart(10)}`,
      );
    }
    console.log(
      `\nauthenticated vs reference: throughput ${(ours.requestsPerSecond / base.requestsPerSecond).toFixed(2)}x, ` +
        `p50 ${(ours.p50Ms / base.p50Ms).toFixed(2)}x, p99 ${(ours.p99Ms / base.p99Ms).toFixed(2)}x`,
    );
    console.log(
      `idle RSS after start: ${idleRss.toFixed(1)} MB of the ${RSS_TARGET_MB} MB target (${(idleRss / RSS_TARGET_MB).toFixed(2)}x, ` +
        `${idleRss < RSS_TARGET_MB ? "under" : "OVER"} target); after the load: ${loadedRss.toFixed(1)} MB`,
    );
    if (ours.failures + base.failures > 0) process.exitCode = 1;
  } finally {
    await server?.stop();
    removeTempDirs();
  }
}

await main();
