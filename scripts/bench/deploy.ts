// Deploy benchmark of the compiled binary on the real local Docker engine with the stand-in
// images (the same ones test/setup.ts selects):
//   a) time from the start of an upload to the first successful HTTP response through the public
//      proxy, for a small node app with no dependencies (base image present): several first
//      deploys under distinct names, then redeploys of one existing app; median against 3 s.
//   b) the server's RSS (VmRSS, sampled every 50 ms) while a 200 MB archive uploads, as growth
//      over the idle baseline against 50 MB.
//
//   bun scripts/bench/deploy.ts [--rebuild]   (builds ./platform when missing or older than src/)
//
// The 200 MB archive holds one random file and no app: it is accepted (202) after the upload and
// its checks, and its build then fails at detection without involving Docker. Redeploys wait, with
// the docker CLI, until the previous release has retired its old container.
//
// Settings: BENCH_DEPLOYS (default 7), BENCH_REDEPLOYS (default 3), BENCH_UPLOAD_MB (default 200).
// Traffic stays on 127.0.0.1; apps are deleted, the server stopped and temp files removed at the end.
import { statSync } from "node:fs";
import { join } from "node:path";
import { strToU8, zipSync } from "fflate";
import { useStandInImages } from "../../test/helpers/stand-ins";
import { removeTempDirs, tempDir } from "../../test/helpers/temp";
import type { TestServer } from "../../test/helpers/server";
import { ensureBinary, median, residentMegabytes, startBinary, printServerTail, runBenchmark } from "./binary";

useStandInImages();

const DEPLOYS = Number(process.env.BENCH_DEPLOYS ?? 7);
const REDEPLOYS = Number(process.env.BENCH_REDEPLOYS ?? 3);
const UPLOAD_MB = Number(process.env.BENCH_UPLOAD_MB ?? 200);
const DEPLOY_TARGET_MS = 3_000;
const RSS_TARGET_MB = 50;
const RSS_SAMPLE_MS = 50;
const POLL_MS = 20;
const DEPLOY_TIMEOUT_MS = 120_000;

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const ratio = (value: number, target: number) => `${(value / target).toFixed(2)}x of target`;

/** A node app with no dependencies whose answer names its version. */
function nodeApp(version: string): Uint8Array<ArrayBuffer> {
  return zipSync({
    "package.json": strToU8(JSON.stringify({ name: "bench-app", main: "server.js" })),
    "server.js": strToU8(`require("http").createServer((req, res) => res.end(${JSON.stringify(version)})).listen(process.env.PORT);\n`),
  }) as Uint8Array<ArrayBuffer>;
}

/**
 * Writes a ZIP of one stored (uncompressed) entry of `bytes` random bytes, streaming to disk, so
 * the archive is really that large on the wire. It holds no app: a deploy of it fails at detection
 * without sending anything to Docker.
 */
async function writeRandomZip(path: string, bytes: number): Promise<void> {
  const name = strToU8("blob.bin");
  const sink = Bun.file(path).writer({ highWaterMark: 1024 * 1024 });
  // The CRC is known only once the data is written: flag bit 3 puts it (and the sizes) in a
  // data descriptor after the data, and in the central directory.
  const local = new DataView(new ArrayBuffer(30));
  local.setUint32(0, 0x04034b50, true);
  local.setUint16(4, 20, true);
  local.setUint16(6, 0x0008, true);
  local.setUint16(26, name.length, true);
  sink.write(new Uint8Array(local.buffer));
  sink.write(name);
  let crc = 0;
  const chunk = new Uint8Array(64 * 1024);
  for (let written = 0; written < bytes; written += chunk.length) {
    const part = chunk.subarray(0, Math.min(chunk.length, bytes - written));
    crypto.getRandomValues(part);
    crc = Bun.hash.crc32(part, crc);
    sink.write(part);
    if (written % (8 * 1024 * 1024) === 0) await sink.flush();
  }
  const descriptor = new DataView(new ArrayBuffer(16));
  descriptor.setUint32(0, 0x08074b50, true);
  descriptor.setUint32(4, crc >>> 0, true);
  descriptor.setUint32(8, bytes, true);
  descriptor.setUint32(12, bytes, true);
  sink.write(new Uint8Array(descriptor.buffer));
  const centralOffset = 30 + name.length + bytes + 16;
  const central = new DataView(new ArrayBuffer(46));
  central.setUint32(0, 0x02014b50, true);
  central.setUint16(4, (3 << 8) | 20, true);
  central.setUint16(6, 20, true);
  central.setUint16(8, 0x0008, true);
  central.setUint32(16, crc >>> 0, true);
  central.setUint32(20, bytes, true);
  central.setUint32(24, bytes, true);
  central.setUint16(28, name.length, true);
  central.setUint32(38, (0o100644 << 16) >>> 0, true);
  sink.write(new Uint8Array(central.buffer));
  sink.write(name);
  const end = new DataView(new ArrayBuffer(22));
  end.setUint32(0, 0x06054b50, true);
  end.setUint16(8, 1, true);
  end.setUint16(10, 1, true);
  end.setUint32(12, 46 + name.length, true);
  end.setUint32(16, centralOffset, true);
  sink.write(new Uint8Array(end.buffer));
  await sink.end();
}

async function main() {
  await ensureBinary();
  const bigZip = join(tempDir("platform-bench-deploy-"), "big.zip");
  let server: TestServer | undefined;
  const appIds = new Set<string>();
  const api = (method: string, path: string, body?: FormData) => server!.request(method, path, { key, body });
  let key = "";

  let cleanedUp = false;
  const cleanUp = async () => {
    if (cleanedUp) return;
    cleanedUp = true;
    if (server?.process) {
      for (const appId of appIds) await api("DELETE", `/api/apps/${appId}`).catch(() => {});
      await server.stop();
    }
    removeTempDirs();
  };
  process.on("SIGINT", () => void cleanUp().then(() => process.exit(130)));

  try {
    const uploadLimit = String((UPLOAD_MB + 64) * 1024 * 1024);
    server = await startBinary({ PLATFORM_MAX_UPLOAD_BYTES: uploadLimit, PLATFORM_MAX_UNCOMPRESSED_BYTES: uploadLimit });
    key = (await server.createKey("bench")).key;
    const proxyGet = (subdomain: string) =>
      fetch(`http://127.0.0.1:${server!.proxyPort}/`, { headers: { host: `${subdomain}.localhost` } });

    /** Uploads `zip` and polls the proxy until the app answers `expected`; milliseconds from upload start. */
    const timedDeploy = async (name: string, expected: string): Promise<number> => {
      const form = new FormData();
      form.set("name", name);
      form.set("runtime", "node");
      form.set("memoryMB", "128");
      form.set("file", new File([nodeApp(expected)], "app.zip", { type: "application/zip" }));
      const started = performance.now();
      const deployed = await api("POST", "/api/apps/deploy", form);
      if (deployed.status !== 202) throw new Error(`deploy of ${name} answered ${deployed.status}: ${JSON.stringify(deployed.body)}`);
      const appId: string = deployed.body.app.id;
      const subdomain: string = deployed.body.app.subdomain;
      appIds.add(appId);
      for (let poll = 0; performance.now() - started < DEPLOY_TIMEOUT_MS; poll++) {
        const response = await proxyGet(subdomain).catch(() => null);
        const text = await response?.text();
        if (response?.status === 200 && text === expected) return performance.now() - started;
        if (poll % 25 === 24) {
          const { body } = await api("GET", `/api/apps/${appId}`);
          if (body.app?.status === "failed") throw new Error(`${name} failed: ${body.app.statusReason}`);
        }
        await Bun.sleep(POLL_MS);
      }
      throw new Error(`${name} did not answer within ${DEPLOY_TIMEOUT_MS / 1000} s`);
    };

    // ---- a) upload to first response ----
    console.log(`\na) upload -> first successful response through the proxy (node app, no dependencies; target ${seconds(DEPLOY_TARGET_MS)} median)`);
    const stamp = Date.now().toString(36);
    const warmUp = await timedDeploy(`bench-warmup-${stamp}`, "warm-up");
    console.log(`   warm-up deploy (not counted: first build on this engine after start): ${seconds(warmUp)}`);
    const firstDeploys: number[] = [];
    for (let i = 1; i <= DEPLOYS; i++) {
      const elapsed = await timedDeploy(`bench-${stamp}-${i}`, `first deploy ${i}`);
      firstDeploys.push(elapsed);
      console.log(`   deploy ${i}/${DEPLOYS}: ${seconds(elapsed)}`);
    }
    const firstMedian = median(firstDeploys);
    console.log(`   median of ${DEPLOYS} deploys: ${seconds(firstMedian)} (${ratio(firstMedian, DEPLOY_TARGET_MS)})`);

    // A release retires the previous container a moment after switching (a drain, then a stop),
    // and the app's next deploy queues behind that: each redeploy starts once only one is left.
    const settled = async (appName: string) => {
      const { body } = await api("GET", "/api/apps/");
      const appId = body.apps.find((listed: any) => listed.name === appName)?.id;
      for (let attempt = 0; attempt < 300; attempt++) {
        const listed = Bun.spawnSync(["docker", "ps", "-q", "--filter", `label=platform.app=${appId}`]).stdout.toString();
        const ids = listed.trim().split("\n").filter(Boolean);
        if (ids.length === 1) return;
        await Bun.sleep(100);
      }
      throw new Error(`${appName} kept more than one container`);
    };
    const redeploys: number[] = [];
    for (let i = 1; i <= REDEPLOYS; i++) {
      await settled(`bench-${stamp}-1`);
      const elapsed = await timedDeploy(`bench-${stamp}-1`, `redeploy ${i}`);
      redeploys.push(elapsed);
      console.log(`   redeploy ${i}/${REDEPLOYS} of an existing app: ${seconds(elapsed)}`);
    }
    const redeployMedian = median(redeploys);
    console.log(`   median of ${REDEPLOYS} redeploys: ${seconds(redeployMedian)} (${ratio(redeployMedian, DEPLOY_TARGET_MS)})`);

    // ---- b) memory while a large archive uploads ----
    console.log(`\nb) server RSS while a ${UPLOAD_MB} MB archive uploads (target: growth < ${RSS_TARGET_MB} MB)`);
    await writeRandomZip(bigZip, UPLOAD_MB * 1024 * 1024);
    const zipMegabytes = statSync(bigZip).size / 1024 / 1024;
    const pid = server.process!.pid;
    await Bun.sleep(1_000);
    const idleSamples: number[] = [];
    for (let i = 0; i < 10; i++) {
      idleSamples.push(residentMegabytes(pid));
      await Bun.sleep(RSS_SAMPLE_MS);
    }
    const baseline = median(idleSamples);
    let peak = baseline;
    let samples = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, residentMegabytes(pid));
      samples++;
    }, RSS_SAMPLE_MS);
    const form = new FormData();
    form.set("name", `bench-big-${stamp}`);
    form.set("runtime", "node");
    form.set("memoryMB", "128");
    form.set("file", Bun.file(bigZip, { type: "application/zip" }), "big.zip");
    const started = performance.now();
    let outcome: { status: number; body: any };
    try {
      outcome = await api("POST", "/api/apps/deploy", form);
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, residentMegabytes(pid));
    const took = performance.now() - started;
    if (outcome.status === 202) appIds.add(outcome.body.app.id);
    const answer = outcome.status === 202 ? "202, accepted" : `${outcome.status} ${outcome.body?.code ?? ""}`.trim();
    console.log(`   archive: ${zipMegabytes.toFixed(1)} MB on the wire, answered ${answer} after ${seconds(took)} (${samples} samples)`);
    console.log(`   idle baseline ${baseline.toFixed(1)} MB, peak ${peak.toFixed(1)} MB`);
    console.log(`   growth: ${(peak - baseline).toFixed(1)} MB (${ratio(Math.max(0, peak - baseline), RSS_TARGET_MB)})`);
  } catch (error) {
    printServerTail(server);
    throw error;
  } finally {
    await cleanUp();
  }
}

await runBenchmark(main);
