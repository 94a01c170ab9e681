// Builds are bounded, on the real engine: a build that floods its log ends at the timeout with a
// capped log file, one that never ends is canceled (or its app deleted) at once, builds beyond
// the slots wait in line, the build container has no capabilities and its limits, and registry
// credentials never show. An event-loop-lag probe runs during the abusive builds.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { dockerCli, dockerJson } from "../../helpers/docker";
import { startLagProbe } from "../../helpers/event-loop-lag";

const TIMEOUT_SECONDS = 20;
const LOG_CAP = 256 * 1024;
/** A marker line and one appended chunk may pass the cap before the file is rewritten. */
const LOG_SLACK = 16 * 1024;
const REGISTRY_PASSWORD = `reg-pass-${crypto.randomUUID()}`;
// Port 9 on the build container's own loopback: nothing listens, no traffic leaves it.
const REGISTRY = `http://deploy:${REGISTRY_PASSWORD}@127.0.0.1:9/`;

let server: TestServer;
let key: string;
let appCount = 0;

beforeAll(async () => {
  server = await TestServer.start({
    PLATFORM_BUILD_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
    PLATFORM_BUILD_LOG_MAX_BYTES: String(LOG_CAP),
    PLATFORM_BUILDS_PER_WORKSPACE: "1",
    PLATFORM_BUILDS_MAX: "1",
    PLATFORM_BUILD_PIDS_LIMIT: "64",
    PLATFORM_BUILD_CPUS: "0.5",
    PLATFORM_BUILD_NPM_REGISTRY: REGISTRY,
  });
  key = (await server.createKey("build-limits")).key;
});
afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

/** An app whose build script is `build` (no dependencies: nothing is installed). */
async function deployBuild(build: string) {
  const files = { "package.json": JSON.stringify({ name: "bounded", scripts: { build, start: "node server.js" } }), "server.js": "" };
  const response = await deployZip(server, key, { name: `bounded-${++appCount}`, runtime: "node", memoryMB: "64" }, appZip(files));
  expect(response.status).toBe(202);
  return { appId: response.body.app.id as string, buildId: response.body.buildId as string };
}

const getBuild = async (appId: string, buildId: string, query = "") =>
  (await server.request("GET", `/api/apps/${appId}/builds/${buildId}${query}`, { key })).body;

async function waitForBuild(appId: string, buildId: string, statuses: string[], timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { build } = await getBuild(appId, buildId);
    if (statuses.includes(build.status)) return build;
    if (Date.now() > deadline) throw new Error(`build ${buildId} stayed ${build.status}`);
    await Bun.sleep(200);
  }
}

/** Containers of the app the engine still has, build containers included. */
async function containersOf(appId: string): Promise<string[]> {
  const listed = await dockerCli("ps", "-aq", "--filter", `label=platform.app=${appId}`);
  return listed.split("\n").filter(Boolean);
}

async function imagesOf(appId: string): Promise<string[]> {
  const listed = await dockerCli("images", "-q", "--filter", `label=platform.app=${appId}`);
  return listed.split("\n").filter(Boolean);
}

describe("build timeout and log cap", () => {
  test('"build": "yes" ends at the timeout with a log file no larger than the cap, and the API stays responsive', async () => {
    const probe = startLagProbe(server);
    const { appId, buildId } = await deployBuild("yes");
    const app = await waitForStatus(server, key, appId, ["failed", "running"], (TIMEOUT_SECONDS + 40) * 1000);
    const maxLagMs = await probe.stop();

    expect(app.status).toBe("failed");
    expect(app.statusReason).toBe(`Build ${buildId} failed: timed out after ${TIMEOUT_SECONDS} s`);
    const { build, log, logBytes, logDroppedBytes } = await getBuild(appId, buildId);
    expect(build).toMatchObject({ status: "failed", error: `timed out after ${TIMEOUT_SECONDS} s` });
    expect(build.durationMs).toBeGreaterThanOrEqual(TIMEOUT_SECONDS * 1000);
    const file = join(server.dataDir, "apps", appId, "builds", `${buildId}.log`);
    expect(statSync(file).size).toBeLessThanOrEqual(LOG_CAP + LOG_SLACK);
    expect(logBytes).toBe(statSync(file).size);
    expect(logDroppedBytes).toBeGreaterThan(10 * LOG_CAP); // it really flooded
    expect(log).toContain("y\ny\ny\n");
    expect(log.endsWith(`==> Build failed: timed out after ${TIMEOUT_SECONDS} s\n`)).toBe(true);
    const head = await getBuild(appId, buildId, "?offset=0&limit=32768");
    expect(head.log).toContain("==> Install and build steps in a build container");
    expect(head.log).toMatch(/\n==> \d+ bytes of build output dropped here/);
    expect(await containersOf(appId)).toEqual([]);
    expect(await imagesOf(appId)).toEqual([]);
    expect(maxLagMs).toBeLessThan(100);
  }, (TIMEOUT_SECONDS + 60) * 1000);
});

describe("cancel and delete", () => {
  test("a running build is canceled at once: container killed, 202 canceled, 409 BUILD_FINISHED after", async () => {
    // Also shows the build container's privileges from inside: no capabilities at all (no NET_RAW).
    const { appId, buildId } = await deployBuild("grep CapEff /proc/self/status; sleep infinity");
    await waitForBuild(appId, buildId, ["building"]);
    for (let i = 0; i < 100 && (await containersOf(appId)).length === 0; i++) await Bun.sleep(100);
    const [containerId] = await containersOf(appId);
    const [inspected] = await dockerJson("inspect", containerId!);
    expect(inspected.HostConfig).toMatchObject({ CapDrop: ["ALL"], PidsLimit: 64, NanoCpus: 500_000_000, Memory: 2048 * 1024 * 1024 });
    expect(inspected.HostConfig.CapAdd ?? []).toEqual([]);
    expect(inspected.HostConfig.SecurityOpt).toContain("no-new-privileges:true");
    expect(inspected.Config.Labels).toMatchObject({ "platform.managed": "true", "platform.app": appId, "platform.build": buildId });
    for (let i = 0; i < 300 && !(await getBuild(appId, buildId)).log.includes("CapEff:\t"); i++) await Bun.sleep(100);
    expect((await getBuild(appId, buildId)).log).toContain("CapEff:\t0000000000000000");

    const started = performance.now();
    const canceled = await server.request("POST", `/api/apps/${appId}/builds/${buildId}/cancel`, { key });
    const cancelMs = performance.now() - started;
    expect(canceled.status).toBe(202);
    expect(canceled.body.build).toMatchObject({ id: buildId, status: "canceled", error: "canceled by a user" });
    expect(cancelMs).toBeLessThan(5_000);
    expect(await containersOf(appId)).toEqual([]);
    const app = await waitForStatus(server, key, appId, ["failed"], 10_000);
    expect(app.statusReason).toBe(`Build ${buildId} canceled by a user`);
    expect((await getBuild(appId, buildId)).log).toContain("==> Build canceled by a user");

    const again = await server.request("POST", `/api/apps/${appId}/builds/${buildId}/cancel`, { key });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ success: false, code: "BUILD_FINISHED" });
  }, 90_000);

  test('"build": "sleep infinity" does not hold up DELETE: the build is canceled and the app is gone', async () => {
    const probe = startLagProbe(server);
    const { appId, buildId } = await deployBuild("sleep infinity");
    await waitForBuild(appId, buildId, ["building"]);
    for (let i = 0; i < 100 && (await containersOf(appId)).length === 0; i++) await Bun.sleep(100);
    expect(await containersOf(appId)).toHaveLength(1);
    const started = performance.now();
    const deleted = await server.request("DELETE", `/api/apps/${appId}`, { key });
    expect(deleted.status).toBeLessThan(300);
    for (let i = 0; i < 100 && (await server.request("GET", `/api/apps/${appId}`, { key })).status !== 404; i++) await Bun.sleep(100);
    for (let i = 0; i < 100 && (await containersOf(appId)).length > 0; i++) await Bun.sleep(100);
    const goneMs = performance.now() - started;
    expect((await server.request("GET", `/api/apps/${appId}`, { key })).status).toBe(404);
    expect(await containersOf(appId)).toEqual([]);
    expect(goneMs).toBeLessThan(10_000);
    expect(await probe.stop()).toBeLessThan(100);
  }, 90_000);

  test("a canceled redeploy leaves the previous release serving", async () => {
    const name = `bounded-${++appCount}`;
    const first = await deployZip(server, key, { name, runtime: "node", memoryMB: "64" }, appZip({ "index.html": "release one" }));
    const app = await waitForStatus(server, key, first.body.app.id, ["running", "failed"]);
    expect(app.status).toBe("running");
    const slow = appZip({ "package.json": JSON.stringify({ name, scripts: { build: "sleep infinity", start: "node x.js" } }) });
    const second = await deployZip(server, key, { name, runtime: "node", memoryMB: "64" }, slow);
    await waitForBuild(app.id, second.body.buildId, ["building"]);
    const canceled = await server.request("POST", `/api/apps/${app.id}/builds/${second.body.buildId}/cancel`, { key });
    expect(canceled.status).toBe(202);
    const after = await waitForStatus(server, key, app.id, ["running"], 10_000);
    expect(after.currentBuildId).toBe(first.body.buildId);
    expect(after.statusReason).toContain(`Build ${second.body.buildId} canceled by a user`);
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("release one");
  }, 120_000);
});

describe("build slots", () => {
  test("with one slot a second build waits `queued` with its position, and runs when the first ends", async () => {
    const first = await deployBuild("sleep infinity");
    await waitForBuild(first.appId, first.buildId, ["building"]);
    const second = await deployBuild("sleep infinity");
    const third = await deployBuild("sleep infinity");
    await Bun.sleep(500);
    const listed = (await server.request("GET", `/api/apps/${second.appId}/builds`, { key })).body.builds;
    expect(listed[0]).toMatchObject({ id: second.buildId, status: "queued", queuePosition: 1 });
    expect((await getBuild(third.appId, third.buildId)).build).toMatchObject({ status: "queued", queuePosition: 2 });
    expect((await getBuild(second.appId, second.buildId)).log).toContain("==> Queued (position 1)");
    expect(await containersOf(second.appId)).toEqual([]); // nothing runs for it yet

    // A queued build is dropped from the line.
    const dropped = await server.request("POST", `/api/apps/${third.appId}/builds/${third.buildId}/cancel`, { key });
    expect(dropped.body.build).toMatchObject({ status: "canceled", queuePosition: null });
    await server.request("POST", `/api/apps/${first.appId}/builds/${first.buildId}/cancel`, { key });
    const running = await waitForBuild(second.appId, second.buildId, ["building"], 10_000);
    expect(running.queuePosition).toBeNull();
    await server.request("POST", `/api/apps/${second.appId}/builds/${second.buildId}/cancel`, { key });
    for (const { appId } of [first, second, third]) expect(await containersOf(appId)).toEqual([]);
  }, 90_000);
});

describe("registry credentials", () => {
  test("a registry URL with user:password shows masked in the build log", async () => {
    const { appId, buildId } = await deployBuild('echo "registry is $NPM_CONFIG_REGISTRY"; exit 1');
    await waitForBuild(appId, buildId, ["failed"]);
    const { log } = await getBuild(appId, buildId);
    expect(log).toContain("package registry: http://****@127.0.0.1:9/");
    expect(log).toContain("registry is http://****@127.0.0.1:9/");
    expect(log).not.toContain(REGISTRY_PASSWORD);
    expect(server.output).not.toContain(REGISTRY_PASSWORD);
  }, 60_000);
});

describe("platform restart", () => {
  test("a build container left running by a killed platform is removed when it starts again", async () => {
    const { appId, buildId } = await deployBuild("sleep infinity");
    await waitForBuild(appId, buildId, ["building"]);
    for (let i = 0; i < 100 && (await containersOf(appId)).length === 0; i++) await Bun.sleep(100);
    expect(await containersOf(appId)).toHaveLength(1);
    await server.stop("SIGKILL");
    expect(await containersOf(appId)).toHaveLength(1); // still running: nothing else would ever stop it
    await server.boot();
    expect((await getBuild(appId, buildId)).build).toMatchObject({ status: "failed", error: "interrupted by a platform restart" });
    for (let i = 0; i < 100 && (await containersOf(appId)).length > 0; i++) await Bun.sleep(100);
    expect(await containersOf(appId)).toEqual([]);
  }, 90_000);
});
