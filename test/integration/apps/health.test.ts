// Health-checked releases through the real platform and its public proxy: a new version that never
// passes its health check is not switched to (a client hammering the proxy sees no failure), and a
// request in flight to the old container when a release switches still completes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { dockerCli, dockerJson } from "../../helpers/docker";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

let server: TestServer;
let key: string;

/**
 * A Node app that answers `version`. `healthStatus`: what GET /health answers (500 after GET /sick, until GET /well). GET /slow is held
 * until the file /tmp/release appears in the same container (the test makes it with docker exec: the test host need not reach
 * the engine's bridge network).
 */
const versioned = (version: string, options: { healthStatus?: number; status?: number } = {}) =>
  appZip({
    "package.json": JSON.stringify({ name: "health", scripts: { start: "node server.js" } }),
    "server.js": `
const held = [];
let sick = false;
require("http").createServer((req, res) => {
  if (req.url === "/sick" || req.url === "/well") { sick = req.url === "/sick"; return res.end(req.url); }
  if (req.url === "/health") return res.writeHead(sick ? 500 : ${options.healthStatus ?? 200}).end("${version} health");
  if (req.url === "/slow") return held.push(res);
  res.writeHead(${options.status ?? 200}).end("${version}");
}).listen(process.env.PORT);
setInterval(() => { if (held.length && require("fs").existsSync("/tmp/release")) for (const slow of held.splice(0)) slow.end("${version} slow done"); }, 100);
`,
  });

const fields = (name: string, healthCheck: object) => ({ name, runtime: "node", memoryMB: "96", healthCheck: JSON.stringify(healthCheck) });

/** The build once its release has ended: failed, canceled, or serving. */
async function releasedBuild(appId: string, buildId: string) {
  for (let attempt = 0; attempt < 600; attempt++) {
    const build = (await server.request("GET", `/api/apps/${appId}/builds`, { key })).body.builds.find((entry: any) => entry.id === buildId);
    const app = (await server.request("GET", `/api/apps/${appId}`, { key })).body.app;
    if (["failed", "canceled"].includes(build?.status) || app.currentBuildId === buildId) return build;
    await Bun.sleep(200);
  }
  throw new Error(`the release of build ${buildId} did not end`);
}

/** Loopback clients sending requests through the proxy back to back until stopped. */
function hammer(subdomain: string, clients = 4) {
  const answers = new Map<string, number>();
  const failures: string[] = [];
  let running = true;
  const loops = Array.from({ length: clients }, async () => {
    while (running) {
      try {
        const response = await viaProxy(server, subdomain);
        const text = await response.text();
        if (response.status !== 200) failures.push(`${response.status} ${text.slice(0, 100)}`);
        else answers.set(text, (answers.get(text) ?? 0) + 1);
      } catch (error) {
        failures.push(String(error));
      }
      await Bun.sleep(5);
    }
  });
  return {
    answers,
    failures,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

beforeAll(async () => {
  // The hammering clients stay within the proxy's rate limits.
  const unlimited = { PLATFORM_PROXY_IP_BURST: "100000", PLATFORM_PROXY_IP_RPS: "100000", PLATFORM_PROXY_HOST_BURST: "100000", PLATFORM_PROXY_HOST_RPS: "100000" };
  server = await TestServer.start({ PLATFORM_RELEASE_DRAIN_SECONDS: "60", PLATFORM_CRASH_LOOP_EXITS: "3", PLATFORM_CRASH_LOOP_MINUTES: "5", ...unlimited });
  key = (await server.createKey("health")).key;
}, 60_000);
afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

describe("health-checked releases", () => {
  test("a new version that never passes its health check is not switched to: zero failed requests, the old one serves", async () => {
    const check = { path: "/health", startPeriodSeconds: 3, timeoutSeconds: 2, healthyThreshold: 2 };
    const first = await deployZip(server, key, fields("gated", check), versioned("v1"));
    expect(first.status).toBe(202);
    expect(first.body.app.healthCheck).toEqual({ path: "/health", intervalSeconds: 10, timeoutSeconds: 2, healthyThreshold: 2, unhealthyThreshold: 3, startPeriodSeconds: 3 });
    const app = await waitForStatus(server, key, first.body.app.id, ["running", "failed"]);
    expect(app.status).toBe("running");
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("v1");

    const load = hammer(app.subdomain);
    // It listens and answers, but its health check says 503 and every page 500.
    const second = await deployZip(server, key, fields("gated", check), versioned("v2", { healthStatus: 503, status: 500 }));
    expect(second.status).toBe(202);
    const build = await releasedBuild(app.id, second.body.buildId);
    await load.stop();

    expect(load.failures).toEqual([]);
    expect([...load.answers.keys()]).toEqual(["v1"]);
    expect(load.answers.get("v1")!).toBeGreaterThan(20);
    expect(build.status).toBe("failed");
    expect(build.error).toContain("health check");
    expect(build.error).toContain("GET /health: HTTP 503");
    const after = (await server.request("GET", `/api/apps/${app.id}`, { key })).body.app;
    expect(after).toMatchObject({ status: "running", currentBuildId: first.body.buildId });
    expect(after.statusReason).toContain("GET /health: HTTP 503");
    const log = await (await fetch(`${server.baseUrl}/api/apps/${app.id}/builds/${second.body.buildId}/log`, { headers: { authorization: `Bearer ${key}` } })).text();
    expect(log).toContain("probe failed: GET /health: HTTP 503");
    expect(log).toContain("==> Release failed: the app did not pass its health check");

    // Settings: fields given change, the others stay; refused values say which field; null goes back to the defaults.
    const put = (healthCheck: unknown) => server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { healthCheck } });
    const changed = await put({ intervalSeconds: 30 });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ restarted: false, app: { healthCheck: { ...check, intervalSeconds: 30, unhealthyThreshold: 3 } } });
    // Each refusal names the sub-field and its rule, as a deploy's does.
    const refusals: [unknown, string][] = [
      [{ path: "health" }, "'healthCheck.path': a path starting with `/`"],
      [{ path: "/a b" }, "'healthCheck.path': a path starting with `/`"],
      [{ timeoutSeconds: 0 }, "'healthCheck.timeoutSeconds': a whole number from 1 to 60"],
      [{ healthyThreshold: 11 }, "'healthCheck.healthyThreshold': a whole number from 1 to 10"],
      [{ interval: 5 }, "'healthCheck.interval': unknown field"],
      ["fast", "'healthCheck': a JSON object"],
    ];
    for (const [refused, error] of refusals) {
      const response = await put(refused);
      expect({ refused, status: response.status, code: response.body.code }).toEqual({ refused, status: 400, code: "VALIDATION_FAILED" });
      expect(response.body.error).toContain(error);
    }
    expect((await put(null)).body.app.healthCheck).toEqual({ path: null, intervalSeconds: 10, timeoutSeconds: 5, healthyThreshold: 1, unhealthyThreshold: 3, startPeriodSeconds: 60 });
    const badForm = await deployZip(server, key, { ...fields("gated", check), healthCheck: '{"path":"/x\\r\\nInjected: 1"}' }, versioned("v3"));
    expect(badForm.status).toBe(400);
    expect(badForm.body.error).toContain("healthCheck.path");
  }, 240_000);

  test("the old container stops only once its request in flight has finished (drain)", async () => {
    const first = await deployZip(server, key, fields("drained", { path: "/health" }), versioned("v1"));
    const app = await waitForStatus(server, key, first.body.app.id, ["running", "failed"]);
    expect(app.status).toBe("running");
    const oldContainer = (await dockerJson("inspect", await servingContainerOf(app.id)))[0];

    const slow = viaProxy(server, app.subdomain, "/slow").then(async (response) => ({ status: response.status, text: await response.text() }));
    await Bun.sleep(300);
    const second = await deployZip(server, key, fields("drained", { path: "/health" }), versioned("v2"));
    expect(second.status).toBe(202);
    // Switched: new requests reach v2 while the slow one is still held by v1.
    for (let attempt = 0; attempt < 600 && (await (await viaProxy(server, app.subdomain)).text()) !== "v2"; attempt++) await Bun.sleep(200);
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("v2");
    await Bun.sleep(2500);
    expect((await dockerJson("inspect", oldContainer.Id))[0].State.Running).toBe(true);

    await dockerCli("exec", oldContainer.Id, "touch", "/tmp/release");
    expect(await slow).toEqual({ status: 200, text: "v1 slow done" });
    // Drained: the old container goes.
    for (let attempt = 0; attempt < 100 && (await servingContainers(app.id)).length > 1; attempt++) await Bun.sleep(200);
    expect(await servingContainers(app.id)).toHaveLength(1);
  }, 240_000);
});

describe("running apps are probed", () => {
  test("failing probes make an app unhealthy, passing ones running again; with autoRestart it gets a fresh container", async () => {
    const check = { path: "/health", intervalSeconds: 1, timeoutSeconds: 1, unhealthyThreshold: 2 };
    const deployed = await deployZip(server, key, { ...fields("probed", check), autoRestart: "false" }, versioned("v1"));
    const app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
    expect(app.status).toBe("running");
    const firstContainer = await servingContainerOf(app.id);
    const health = async () => (await server.request("GET", `/api/apps/${app.id}/health`, { key })).body.health;
    for (let attempt = 0; attempt < 50 && (await health()).lastProbe?.status !== "pass"; attempt++) await Bun.sleep(200);
    expect((await health()).lastProbe).toMatchObject({ status: "pass", httpStatus: 200, error: null });

    expect(await (await viaProxy(server, app.subdomain, "/sick")).text()).toBe("/sick");
    const unhealthy = await waitForStatus(server, key, app.id, ["unhealthy"], 30_000);
    expect(unhealthy.statusReason).toContain("GET /health: HTTP 500");
    expect(unhealthy.health).toMatchObject({ status: "fail", httpStatus: 500 });
    const history = await health();
    expect(history.consecutiveFailures).toBeGreaterThanOrEqual(2);
    expect(history.probes[0]).toMatchObject({ status: "fail", httpStatus: 500 });
    expect(history.probes.some((probe: any) => probe.status === "pass")).toBe(true);
    // Still serving while unhealthy: the proxy keeps its route.
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("v1");
    const events = (await server.request("GET", "/api/platform/status", { key })).body.events ?? [];
    expect(JSON.stringify(events)).toContain("app.unhealthy");

    // Without autoRestart nothing restarts it; it is running again once it passes.
    await viaProxy(server, app.subdomain, "/well");
    const recovered = await waitForStatus(server, key, app.id, ["running"], 30_000);
    expect(recovered.statusReason).toBeNull();
    expect(await servingContainerOf(app.id)).toBe(firstContainer);

    // With autoRestart an unhealthy app gets a fresh container, which passes.
    await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { autoRestart: true } });
    await viaProxy(server, app.subdomain, "/sick");
    await waitForStatus(server, key, app.id, ["unhealthy"], 30_000);
    let restarted = firstContainer;
    for (let attempt = 0; attempt < 200 && restarted === firstContainer; attempt++) {
      await Bun.sleep(200);
      const ids = await servingContainers(app.id);
      if (ids.length === 1) restarted = ids[0]!;
    }
    expect(restarted).not.toBe(firstContainer);
    const after = await waitForStatus(server, key, app.id, ["running"], 30_000);
    expect(after.statusReason).toBeNull();
    expect(await (await viaProxy(server, app.subdomain, "/health")).text()).toBe("v1 health");
  }, 240_000);
});

/** An app that listens, says so, and exits with code 3 a second and a half later. */
const crashing = appZip({
  "package.json": JSON.stringify({ name: "crashing", scripts: { start: "node server.js" } }),
  "server.js": `require("http").createServer((req, res) => res.end("up")).listen(process.env.PORT);\nsetTimeout(() => { console.log("dying now"); process.exit(3); }, 1500);\n`,
});

describe("crash loops, without the engine's restart policy", () => {
  test("a container that keeps exiting gets crash-loop with its exit code and last output; stop and start are accepted at once", async () => {
    const deployed = await deployZip(server, key, { name: "crashing", runtime: "node", memoryMB: "96" }, crashing);
    const app = await waitForStatus(server, key, deployed.body.app.id, ["crash-loop", "failed"], 90_000);
    expect(app.status).toBe("crash-loop");
    expect(app.statusReason).toContain("exited 3 times");
    expect(app.statusReason).toContain("code 3");
    expect(app.statusReason).toContain("dying now");
    const [container, ...others] = await servingContainers(app.id, true);
    expect(others).toEqual([]);
    expect((await dockerJson("inspect", container))[0].HostConfig.RestartPolicy.Name).toBe("no");
    const events = (await server.request("GET", "/api/platform/status", { key })).body.events;
    expect(events.some((event: any) => event.type === "app.crash-loop" && event.data.appId === app.id && event.data.exitCode === 3)).toBe(true);

    // Restarts go on after the next backoff (the container started again, or a fresh one where it cannot be).
    const loopSeenAt = new Date().toISOString();
    expect(await startedSince(app.id, loopSeenAt)).toBe(true);

    const stop = await server.request("POST", `/api/apps/${app.id}/stop`, { key });
    expect(stop.status).toBe(202);
    expect(stop.body.app.status).toBe("stopping");
    await waitForStatus(server, key, app.id, ["stopped"], 30_000);
    await Bun.sleep(5000);
    expect(await servingContainers(app.id)).toEqual([]);
    expect((await server.request("GET", `/api/apps/${app.id}`, { key })).body.app.status).toBe("stopped");

    // A manual start clears it: a fresh container, `running` until it has crashed often enough again.
    const start = await server.request("POST", `/api/apps/${app.id}/start`, { key });
    expect(start.status).toBe(202);
    const started = await waitForStatus(server, key, app.id, ["running"], 60_000);
    expect(started.statusReason).toBeNull();
    await server.request("DELETE", `/api/apps/${app.id}`, { key });
  }, 240_000);

  test("a container stopped behind the platform's back (as an engine restart leaves it) is started again, also by a platform that was down meanwhile", async () => {
    const deployed = await deployZip(server, key, fields("steady", { path: "/health" }), versioned("steady"));
    const app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
    expect(app.status).toBe("running");
    const stoppedAt = new Date().toISOString();
    await dockerCli("stop", "-t", "1", await servingContainerOf(app.id));
    expect(await startedSince(app.id, stoppedAt)).toBe(true);
    expect(await answerWithin(app.subdomain, "steady")).toBe("steady");
    expect((await server.request("GET", `/api/apps/${app.id}`, { key })).body.app.status).toBe("running");

    // The platform is down while the engine stops the container: at its start it brings the app back.
    await server.stop();
    const downAt = new Date().toISOString();
    await dockerCli("stop", "-t", "1", await servingContainerOf(app.id));
    await server.boot();
    expect(await startedSince(app.id, downAt)).toBe(true);
    expect(await answerWithin(app.subdomain, "steady")).toBe("steady");
    expect((await server.request("GET", `/api/apps/${app.id}`, { key })).body.app.status).toBe("running");
  }, 120_000);
});

/** What the app answers through the proxy, polled for 10 s until it is `expected`. */
async function answerWithin(subdomain: string, expected: string): Promise<string> {
  let answer = "";
  for (let attempt = 0; attempt < 50 && answer !== expected; attempt++) {
    answer = await viaProxy(server, subdomain).then((response) => response.text(), () => "");
    if (answer !== expected) await Bun.sleep(200);
  }
  return answer;
}

/**
 * Whether a container of the app started after `since` (within 30 s): the stopped one again, or a
 * fresh one where it cannot start (a test run elsewhere on the shared engine may remove the
 * workspace network under a stopped container).
 */
async function startedSince(appId: string, since: string): Promise<boolean> {
  for (let attempt = 0; attempt < 150; attempt++) {
    for (const id of await servingContainers(appId)) {
      const [inspected] = await dockerJson("inspect", id).catch(() => [null]);
      if (inspected?.State.Running && inspected.State.StartedAt > since) return true;
    }
    await Bun.sleep(200);
  }
  return false;
}

/** The app's running containers (`all`: stopped ones too). */
async function servingContainers(appId: string, all = false): Promise<string[]> {
  return (await dockerCli("ps", ...(all ? ["-a"] : []), "-q", "--no-trunc", "--filter", `label=platform.app=${appId}`)).trim().split("\n").filter(Boolean);
}

async function servingContainerOf(appId: string): Promise<string> {
  const ids = await servingContainers(appId);
  expect(ids).toHaveLength(1);
  return ids[0]!;
}
