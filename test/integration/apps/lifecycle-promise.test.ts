// A status is a promise: lifecycle calls are accepted at once whatever runs (202, never 409 BUSY),
// long work goes on in the background, and the app ends in the state asked for. Also: a slow
// start, a stop during a release, a subdomain moved during a release, a delete during a build,
// a quiet followed log kept open by heartbeats, and settings that apply only when their release
// succeeds (checked across a platform restart).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { dockerCli } from "../../helpers/docker";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

let server: TestServer;
let key: string;
let app: any;

/** Answers with its env and container; listens only after DELAY_MS, and logs every request. */
const SLOW_SERVER =
  'const os = require("os");\n' +
  "setTimeout(() => require(\"http\").createServer((req, res) => {\n" +
  '  console.log("request " + req.url);\n' +
  "  res.end(JSON.stringify({ shade: process.env.SHADE ?? null, host: os.hostname() }));\n" +
  "}).listen(process.env.PORT), Number(process.env.DELAY_MS ?? 0));\n";

const source = (build = "true") =>
  appZip({
    "package.json": JSON.stringify({ name: "promise", scripts: { build, start: "node server.js" } }),
    "server.js": SLOW_SERVER,
  });

const call = (method: string, path: string, body?: unknown) => server.request(method, `/api/apps/${app.id}${path}`, { key, body });

async function containers(appId: string, all = false): Promise<string[]> {
  const listed = await dockerCli("ps", ...(all ? ["-a"] : []), "-q", "--no-trunc", "--filter", `label=platform.app=${appId}`);
  return listed.trim().split("\n").filter(Boolean);
}

async function answer(subdomain: string): Promise<{ status: number; body: any }> {
  const response = await viaProxy(server, subdomain);
  return { status: response.status, body: response.status === 200 ? await response.json() : await response.text() };
}

async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!accept(value) && Date.now() < deadline) {
    await Bun.sleep(200);
    value = await probe();
  }
  return value;
}

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("promise")).key;
  const deployed = await deployZip(server, key, { name: "promise", runtime: "node", memoryMB: "96", envVars: JSON.stringify({ SHADE: "red" }) }, source());
  app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
  expect(app.status).toBe("running");
}, 180_000);

afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

describe("a status is a promise", () => {
  test("the recipe: PUT /env then at once stop, and later restart: 202 each, never BUSY, and the app ends as asked", async () => {
    const put = await call("PUT", "/env", { envVars: { SHADE: "blue" } });
    expect(put.body.restarted).toBe(true);
    const stopped = await call("POST", "/stop");
    expect(stopped.status).toBe(202);
    expect(stopped.body.app.status).toBe("stopping");
    expect((await waitForStatus(server, key, app.id, ["stopped"], 30_000)).status).toBe("stopped");
    expect(await containers(app.id)).toEqual([]); // the preempted release's container is gone too
    expect((await viaProxy(server, app.subdomain)).status).toBe(503); // a stopped app is "not running", not "no such app"

    const started = await call("POST", "/start");
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ app: { status: "starting" }, queued: false });
    await waitForStatus(server, key, app.id, ["running"], 60_000);
    expect((await answer(app.subdomain)).body.shade).toBe("blue");

    await call("PUT", "/env", { envVars: { SHADE: "green" } });
    const restarted = await call("POST", "/restart");
    expect(restarted.status).toBe(202);
    expect(restarted.body.queued).toBe(true); // behind the release the env change started
    const served = await eventually(() => answer(app.subdomain), (latest) => latest.body?.shade === "green");
    expect(served.body.shade).toBe("green");
    const settled = await waitForStatus(server, key, app.id, ["running"]);
    expect(settled.statusReason).toBeNull();
    expect(await eventually(() => containers(app.id), (ids) => ids.length === 1)).toHaveLength(1);
  }, 120_000);

  test("running means running: a stop sent the moment the status says running is accepted", async () => {
    await call("PUT", "/env", { envVars: { SHADE: "amber" } });
    await eventually(() => call("GET", ""), (latest) => latest.body.app.status === "starting", 10_000);
    await waitForStatus(server, key, app.id, ["running"]);
    // The release is still retiring the old container here: it used to hold the app for ~1.4 s and answer 409 BUSY.
    const stopped = await call("POST", "/stop");
    expect(stopped.status).toBe(202);
    await waitForStatus(server, key, app.id, ["stopped"], 30_000);
    expect(await containers(app.id)).toEqual([]);
  }, 90_000);

  test("an app that listens only after 15 s: start answers 202 at once and the app reaches running", async () => {
    await call("PUT", "/env", { envVars: { DELAY_MS: "15000" } }); // stopped: changes nothing until the next start
    const before = performance.now();
    const started = await call("POST", "/start");
    const took = performance.now() - before;
    expect(started.status).toBe(202);
    expect(started.body.app.status).toBe("starting");
    expect(took).toBeLessThan(2_000);
    await Bun.sleep(5_000);
    expect((await call("GET", "")).body.app.status).toBe("starting");
    const running = await waitForStatus(server, key, app.id, ["running", "failed"], 60_000);
    expect(running.status).toBe("running");
    expect((await answer(app.subdomain)).status).toBe(200);
  }, 90_000);

  test("a quiet followed log is not cut: heartbeats keep it open past the old 10 s idle timeout", async () => {
    const opened = performance.now();
    // Nothing to send at first (tail=0, a quiet app): the answer's first bytes may be the first heartbeat.
    const response = await fetch(`${server.baseUrl}/api/apps/${app.id}/logs?follow=true&tail=0`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    let text = "";
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return "closed";
        text += new TextDecoder().decode(value);
        if (text.includes("request /after-the-quiet")) return "line";
      }
    })();
    await Bun.sleep(Math.max(0, 18_000 - (performance.now() - opened)));
    expect(text).toContain("\n"); // at least one heartbeat, and nothing else: the app was quiet
    expect(text.trim()).toBe("");
    await viaProxy(server, app.subdomain, "/after-the-quiet");
    expect(await Promise.race([reading, Bun.sleep(10_000).then(() => "timeout")])).toBe("line");
    await reader.cancel();
  }, 60_000);

  test("a subdomain moved during a release routes at once to the serving container, and to the new one after the switch", async () => {
    const [oldContainer] = await containers(app.id);
    const restarted = await call("POST", "/restart"); // 15 s until the new container listens
    expect(restarted.status).toBe(202);
    const moved = await call("PUT", "/settings", { subdomain: "promise-moved" });
    expect(moved.status).toBe(200);
    expect(moved.body.restarted).toBe(false);
    const during = await eventually(() => answer("promise-moved"), (latest) => latest.status === 200, 5_000);
    expect(during.body.host).toBe(oldContainer!.slice(0, 12));
    expect((await viaProxy(server, app.subdomain)).status).toBe(404);
    await waitForStatus(server, key, app.id, ["running"], 60_000);
    const after = await eventually(() => answer("promise-moved"), (latest) => latest.status === 200 && latest.body.host !== during.body.host, 5_000);
    expect(after.status).toBe(200);
    expect(after.body.host).not.toBe(oldContainer!.slice(0, 12));
    app = (await call("GET", "")).body.app;
  }, 90_000);

  test("a stop during a release preempts it: the new container is removed, the app ends stopped", async () => {
    const [serving] = await containers(app.id);
    expect((await call("POST", "/restart")).status).toBe(202);
    await eventually(() => containers(app.id), (ids) => ids.length === 2, 10_000); // the new one is up, not yet listening
    const stopped = await call("POST", "/stop");
    expect(stopped.status).toBe(202);
    expect(stopped.body.app.status).toBe("stopping");
    await waitForStatus(server, key, app.id, ["stopped"], 30_000);
    expect(await containers(app.id)).toEqual([]);
    expect(await containers(app.id, true)).toEqual([serving!]); // only the old one, stopped
    const builds = (await call("GET", "/builds")).body.builds;
    expect(builds[0].status).toBe("succeeded");
  }, 60_000);

  test("a delete during a build answers at once; the build is cancelled and nothing of the app remains", async () => {
    const doomed = await deployZip(server, key, { name: "doomed", runtime: "node", memoryMB: "64" }, source("sleep 120"));
    expect(doomed.status).toBe(202);
    const doomedId = doomed.body.app.id;
    for (let attempt = 0; attempt < 300; attempt++) {
      const build = await server.request("GET", `/api/apps/${doomedId}/builds/${doomed.body.buildId}`, { key });
      if (build.body.log?.includes("sleep 120")) break;
      await Bun.sleep(200);
    }
    const before = performance.now();
    const deleted = await server.request("DELETE", `/api/apps/${doomedId}`, { key });
    expect(performance.now() - before).toBeLessThan(2_000);
    expect(deleted.status).toBe(202);
    expect(deleted.body.app.status).toBe("deleting");
    expect((await server.request("GET", `/api/apps/${doomedId}`, { key })).status).toBe(404);
    const images = () => dockerCli("images", "-q", "--filter", `label=platform.app=${doomedId}`).then((out) => out.trim());
    expect(await eventually(() => containers(doomedId, true), (ids) => ids.length === 0, 30_000)).toEqual([]);
    expect(await eventually(images, (out) => out === "", 30_000)).toBe("");
    // Listed as `deleting` until the removal is done, then gone: within seconds, so the build (sleep 120) was cancelled.
    const listedIds = () => server.request("GET", "/api/apps/", { key }).then((listed) => listed.body.apps.map((one: any) => one.id));
    expect(await eventually(listedIds, (ids) => !ids.includes(doomedId), 10_000)).not.toContain(doomedId);
  }, 90_000);
});

describe("settings apply when their release succeeds", () => {
  test("the recipe: a redeploy asking for port 8080 whose build fails keeps serving on 3000, also after a platform restart", async () => {
    const ported = await deployZip(server, key, { name: "ported", runtime: "node", memoryMB: "64" }, source());
    const running = await waitForStatus(server, key, ported.body.app.id, ["running", "failed"]);
    expect(running).toMatchObject({ status: "running", exposePort: 3000, servingPort: 3000 });

    const broken = await deployZip(server, key, { name: "ported", runtime: "node", memoryMB: "64", exposePort: "8080" }, source("exit 1"));
    expect(broken.status).toBe(202);
    await eventually(
      () => server.request("GET", `/api/apps/${running.id}/builds/${broken.body.buildId}`, { key }),
      (build) => build.body.build?.status === "failed",
    );
    const after = await waitForStatus(server, key, running.id, ["running"]);
    expect(after).toMatchObject({ exposePort: 8080, servingPort: 3000 });
    expect(after.statusReason).toContain("failed");
    expect((await viaProxy(server, after.subdomain)).status).toBe(200);

    await server.stop();
    await server.boot();
    const answered = await eventually(() => viaProxy(server, after.subdomain).then((response) => response.status), (status) => status === 200, 10_000);
    expect(answered).toBe(200); // the route points at 3000, where the container listens (it was 8080: 502)
  }, 120_000);
});
