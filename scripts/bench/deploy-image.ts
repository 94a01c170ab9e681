// Image deploy benchmark of the compiled binary on the real local engine: the time from
// POST /api/apps/deploy-image to the first 200 through the public proxy, with the image already on
// the engine, against `docker run` of the same image by hand to its first 200 on a published port
// (goal: within 1.2x). The image is a tiny web server (busybox httpd) pushed to a registry on
// loopback (test/helpers/registry.ts), so the deploy's pull asks a real registry and finds the
// layers present, as a redeploy of an unchanged tag does.
//
//   bun scripts/bench/deploy-image.ts [--rebuild]   (builds ./platform when missing or older than src/)
//
// Settings: BENCH_RUNS (default 7). Traffic stays on 127.0.0.1; containers, apps, images, the
// registry and temp files are removed at the end.
import { removeImagesFrom, startRegistry, type TestRegistry } from "../../test/helpers/registry";
import { freePort } from "../../test/helpers/ports";
import { removeTempDirs } from "../../test/helpers/temp";
import type { TestServer } from "../../test/helpers/server";
import { ensureBinary, median, printServerTail, runBenchmark, startBinary } from "./binary";

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const GOAL = 1.2;
const POLL_MS = 10;
const TIMEOUT_MS = 60_000;
const TEXT = "bench image";

const seconds = (ms: number) => `${(ms / 1000).toFixed(3)} s`;

/** Polls `url` (with `host`) until it answers 200 with TEXT; milliseconds since `started`. */
async function firstOk(url: string, started: number, host?: string): Promise<number> {
  while (performance.now() - started < TIMEOUT_MS) {
    const response = await fetch(url, { headers: host ? { host } : {} }).catch(() => null);
    if (response?.status === 200 && (await response.text()) === TEXT) return performance.now() - started;
    await Bun.sleep(POLL_MS);
  }
  throw new Error(`${url} did not answer within ${TIMEOUT_MS / 1000} s`);
}

function docker(...args: string[]): string {
  const result = Bun.spawnSync(["docker", ...args], { stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`docker ${args.join(" ")} failed: ${result.stderr.toString()}`);
  return result.stdout.toString().trim();
}

/** `docker run` by hand: the CLI started, the port published on loopback, polled until 200. */
async function byHand(image: string, run: number): Promise<number> {
  const port = freePort();
  const name = `bench-image-by-hand-${process.pid}-${run}`;
  const started = performance.now();
  const child = Bun.spawn(["docker", "run", "-d", "--name", name, "-m", "64m", "-e", "PORT=8080", "-p", `127.0.0.1:${port}:8080`, image], { stdout: "ignore", stderr: "pipe" });
  try {
    const elapsed = await firstOk(`http://127.0.0.1:${port}/`, started);
    if ((await child.exited) !== 0) throw new Error(`docker run failed: ${await new Response(child.stderr).text()}`);
    return elapsed;
  } finally {
    await child.exited;
    Bun.spawnSync(["docker", "rm", "-f", name], { stdout: "ignore", stderr: "ignore" });
  }
}

async function main() {
  await ensureBinary();
  let registry: TestRegistry | undefined;
  let server: TestServer | undefined;
  let key = "";
  const appIds: string[] = [];
  const api = async (method: string, path: string, body?: unknown) => server!.request(method, path, { key, body });
  try {
    registry = await startRegistry();
    await registry.pushWebImage("bench/web", "1", { text: TEXT });
    const image = `${registry.host}/bench/web:1`;
    // Present on the engine under its own name, as after a `docker pull`: both sides start from there.
    docker("pull", "-q", image);
    server = await startBinary({ PLATFORM_BUILD_REGISTRIES: registry.host });
    key = (await server.createKey("bench")).key;

    const viaPlatform = async (run: number): Promise<number> => {
      const started = performance.now();
      const deployed = await api("POST", "/api/apps/deploy-image", { name: `bench-image-${run}`, image, memoryMB: 64, exposePort: 8080 });
      if (deployed.status !== 202) throw new Error(`deploy-image answered ${deployed.status}: ${JSON.stringify(deployed.body)}`);
      appIds.push(deployed.body.app.id);
      return firstOk(`http://127.0.0.1:${server!.proxyPort}/`, started, `${deployed.body.app.subdomain}.localhost`);
    };

    console.log(`deploy-image -> first 200 through the proxy, against docker run -> first 200 (image present; goal ${GOAL}x)`);
    await byHand(image, 0);
    await viaPlatform(0);
    console.log("   warm-up of each (not counted) done");
    const manual: number[] = [];
    const platform: number[] = [];
    for (let run = 1; run <= RUNS; run++) {
      manual.push(await byHand(image, run));
      platform.push(await viaPlatform(run));
      console.log(`   run ${run}/${RUNS}: docker run ${seconds(manual.at(-1)!)}, deploy-image ${seconds(platform.at(-1)!)}`);
    }
    const [manualMedian, platformMedian] = [median(manual), median(platform)];
    const ratio = platformMedian / manualMedian;
    console.log(`   median docker run:   ${seconds(manualMedian)}`);
    console.log(`   median deploy-image: ${seconds(platformMedian)}`);
    console.log(`   ratio: ${ratio.toFixed(2)}x (goal ${GOAL}x: ${ratio <= GOAL ? "met" : "not met"})`);
  } catch (error) {
    printServerTail(server);
    throw error;
  } finally {
    if (server) {
      for (const appId of appIds) await api("DELETE", `/api/apps/${appId}`).catch(() => {});
      for (let waited = 0; waited < 30_000 && ((await api("GET", "/api/apps/")).body.apps ?? []).length > 0; waited += 200) await Bun.sleep(200);
      await server.stop();
    }
    if (registry) {
      removeImagesFrom(registry.host);
      await registry.stop();
    }
    removeTempDirs();
  }
}

await runBenchmark(main);
