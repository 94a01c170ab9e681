// One app through its life: env and settings changes (and which restart it), a zero-downtime
// redeploy under a polling client, a failed redeploy that keeps the old release serving,
// stop/start/restart, and deletion.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { TestServer } from "../../helpers/server";
import { dockerCli, dockerJson } from "../../helpers/docker";
import { appZip, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

let server: TestServer;
let key: string;
let app: any;

const source = (version: string) =>
  appZip({
    "package.json": JSON.stringify({ name: "versioned", scripts: { start: "node server.js" } }),
    "server.js":
      `require("http").createServer((req, res) => { console.log("request " + req.url); res.end(JSON.stringify({ version: "${version}", shade: process.env.SHADE ?? null })); })` +
      ".listen(process.env.PORT);\n",
  });

async function current() {
  return (await server.request("GET", `/api/apps/${app.id}`, { key })).body.app;
}

async function answer(subdomain = app.subdomain) {
  return (await viaProxy(server, subdomain)).json();
}

/** Waits until the app runs a container other than `previous` (a restart happened). */
async function waitForNewContainer(previousContainerId: string) {
  for (let attempt = 0; attempt < 240; attempt++) {
    const containers = await dockerCli("ps", "-q", "--no-trunc", "--filter", `label=platform.app=${app.id}`);
    const ids = containers.trim().split("\n").filter(Boolean);
    const fresh = await current();
    if (fresh.status === "running" && ids.length === 1 && ids[0] !== previousContainerId) return ids[0];
    await Bun.sleep(250);
  }
  throw new Error("no new container");
}

async function servingContainer(): Promise<string> {
  const ids = (await dockerCli("ps", "-q", "--no-trunc", "--filter", `label=platform.app=${app.id}`)).trim().split("\n");
  expect(ids).toHaveLength(1);
  return ids[0]!;
}

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("lifecycle")).key;
  const deployed = await deployZip(server, key, { name: "versioned", runtime: "node", memoryMB: "96", envVars: JSON.stringify({ SHADE: "red" }) }, source("v1"));
  app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
  expect(app.status).toBe("running");
}, 180_000);
afterAll(() => server.stop(), 30_000);

describe("app lifecycle", () => {
  test("env vars: GET decrypted, PUT merges and restarts the app with them", async () => {
    expect((await server.request("GET", `/api/apps/${app.id}/env`, { key })).body.envVars).toEqual({ SHADE: "red" });
    const before = await servingContainer();
    const put = await server.request("PUT", `/api/apps/${app.id}/env`, { key, body: { envVars: { SHADE: "blue", SIZE: "xl" } } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ envVars: { SHADE: "blue", SIZE: "xl" }, restarted: true });
    await waitForNewContainer(before);
    expect(await answer()).toEqual({ version: "v1", shade: "blue" });
    const same = await server.request("PUT", `/api/apps/${app.id}/env`, { key, body: { envVars: { SHADE: "blue" } } });
    expect(same.body.restarted).toBe(false);
    const badName = await server.request("PUT", `/api/apps/${app.id}/env`, { key, body: { envVars: { "BAD-NAME": "x" } } });
    expect(badName.status).toBe(400);
    expect(badName.body.code).toBe("VALIDATION_FAILED");
  }, 120_000);

  test("settings: memoryMB restarts with the new limit; name alone does not restart", async () => {
    const before = await servingContainer();
    const renamed = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { name: "versioned-app" } });
    expect(renamed.body).toMatchObject({ restarted: false, app: { name: "versioned-app" } });
    expect(await servingContainer()).toBe(before);

    const resized = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { memoryMB: 160 } });
    expect(resized.body).toMatchObject({ restarted: true, app: { memoryMB: 160 } });
    const after = await waitForNewContainer(before);
    const [inspected] = await dockerJson("inspect", after);
    expect(inspected.HostConfig.Memory).toBe(160 * 1024 * 1024);

    const invalid = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { memoryMB: 1, exposePort: 70000 } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatch(/memoryMB|exposePort/);
    const badSubdomain = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { subdomain: "Not_A-Label" } });
    expect(badSubdomain.status).toBe(400);
  }, 120_000);

  test("autoRestart alone restarts nothing; the engine's restart policy stays off (the platform restarts apps itself)", async () => {
    const before = await servingContainer();
    const changed = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { autoRestart: false } });
    expect(changed.body).toMatchObject({ restarted: false, app: { autoRestart: false } });
    expect(await servingContainer()).toBe(before);
    const [inspected] = await dockerJson("inspect", before);
    expect(inspected.HostConfig.RestartPolicy.Name).toBe("no");
    await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { autoRestart: true } });
    expect(await servingContainer()).toBe(before);
    expect((await dockerJson("inspect", before))[0].HostConfig.RestartPolicy.Name).toBe("no");
  }, 120_000);

  test("settings: rateLimits is validated, merged field by field, shown as set and as applied, audited, and restarts nothing", async () => {
    const before = await servingContainer();
    const put = (rateLimits: unknown) => server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { rateLimits } });
    for (const refused of [{ clientBurst: 0 }, { clientRps: 1_000_001 }, { hostBurst: 2.5 }, { hostRps: -1 }, { clientBurst: "many" }, { clientburst: 3 }, {}, 5, "fast"]) {
      const response = await put(refused);
      expect({ refused, status: response.status, code: response.body.code }).toEqual({ refused, status: 400, code: "VALIDATION_FAILED" });
      expect(response.body.error).toMatch(/rateLimits/);
    }
    expect((await current()).rateLimits).toBeNull();

    const set = await put({ clientBurst: 3, clientRps: 1 });
    expect(set.status).toBe(200);
    expect(set.body.restarted).toBe(false);
    expect(set.body.app.rateLimits).toEqual({ clientBurst: 3, clientRps: 1, hostBurst: null, hostRps: null });
    expect(set.body.app.effectiveRateLimits).toEqual({ clientBurst: 3, clientRps: 1, hostBurst: 2000, hostRps: 1000 });
    // A field left out keeps its value; a null one goes back to the platform's.
    const merged = await put({ hostBurst: 50, clientRps: null });
    expect(merged.body.app.rateLimits).toEqual({ clientBurst: 3, clientRps: null, hostBurst: 50, hostRps: null });
    expect((await current()).effectiveRateLimits).toEqual({ clientBurst: 3, clientRps: 100, hostBurst: 50, hostRps: 1000 });
    // What GET shows can be sent back as it is.
    expect((await put((await current()).rateLimits)).body.app.rateLimits).toEqual(merged.body.app.rateLimits);

    const cleared = await put(null);
    expect(cleared.body.app.rateLimits).toBeNull();
    expect(cleared.body.app.effectiveRateLimits).toEqual({ clientBurst: 200, clientRps: 100, hostBurst: 2000, hostRps: 1000 });
    expect(await servingContainer()).toBe(before);

    const audit = await server.request("GET", "/api/organization/audit-log", { key });
    const target = `${(await current()).name} (${app.id})`;
    const changes = audit.body.events.filter((event: any) => event.action === "app.settings_changed" && event.target === target);
    expect(changes.length).toBeGreaterThanOrEqual(4);
  }, 120_000);

  test("logs can be followed live", async () => {
    // tail=1: the answer starts with a line at once (headers go out with the first bytes).
    const response = await fetch(`${server.baseUrl}/api/apps/${app.id}/logs?follow=true&tail=1`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.headers.get("content-type")).toContain("text/plain");
    const reader = response.body!.getReader();
    const marker = `visit-${Date.now()}`;
    const reading = (async () => {
      let text = "";
      while (!text.includes(marker)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      return text;
    })();
    await viaProxy(server, app.subdomain, `/${marker}`); // the app logs every request
    expect(await reading).toContain(`request /${marker}`);
    await reader.cancel();
  }, 120_000);

  test("an app and a database may not share a name: it is their address on the workspace network", async () => {
    const database = await server.request("POST", "/api/databases/", { key, body: { name: "cache", engine: "redis", memoryMB: 256 } });
    expect(database.status).toBe(201);
    const databaseId = database.body.database.id;
    try {
      const clash = await deployZip(server, key, { name: "cache", runtime: "node", memoryMB: "64" }, source("x"));
      expect(clash.status).toBe(409);
      expect(clash.body.code).toBe("NAME_TAKEN");
      const rename = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { name: "cache" } });
      expect(rename.status).toBe(409);
    } finally {
      for (let attempt = 0; attempt < 200; attempt++) {
        const status = (await server.request("GET", `/api/databases/${databaseId}`, { key })).body.database?.status;
        if (status !== "provisioning") break;
        await Bun.sleep(100);
      }
      expect((await server.request("DELETE", `/api/databases/${databaseId}`, { key })).status).toBe(200);
    }
  }, 120_000);

  test("subdomain: moves the route, unique across the platform", async () => {
    const moved = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { subdomain: "shiny" } });
    expect(moved.body.restarted).toBe(false);
    for (let attempt = 0; attempt < 20 && (await viaProxy(server, "shiny")).status !== 200; attempt++) await Bun.sleep(100);
    expect((await answer("shiny")).version).toBe("v1");
    expect((await viaProxy(server, "versioned")).status).toBe(404);
    app = await current();

    const other = await server.createKey("other", "another-workspace");
    const clash = await deployZip(server, other.key, { name: "clash", runtime: "node", memoryMB: "64", subdomain: "shiny" }, source("x"));
    expect(clash.status).toBe(409);
    expect(clash.body.code).toBe("SUBDOMAIN_TAKEN");
  }, 120_000);

  test("a redeploy is zero-downtime while a client polls", async () => {
    let failures = 0;
    let polls = 0;
    const versions = new Set<string>();
    let polling = true;
    const poller = (async () => {
      while (polling) {
        try {
          const response = await viaProxy(server, app.subdomain);
          if (response.status !== 200) failures++;
          else versions.add((await response.json()).version);
        } catch {
          failures++;
        }
        polls++;
        await Bun.sleep(20);
      }
    })();
    const redeployed = await deployZip(server, key, { name: "versioned-app", runtime: "node", memoryMB: "160" }, source("v2"));
    expect(redeployed.status).toBe(202);
    expect(redeployed.body).toMatchObject({ created: false, app: { id: app.id } });
    for (let attempt = 0; attempt < 400 && !versions.has("v2"); attempt++) await Bun.sleep(50);
    await Bun.sleep(1500); // past the old container's retirement
    polling = false;
    await poller;
    expect(versions).toEqual(new Set(["v1", "v2"]));
    expect(polls).toBeGreaterThan(20);
    expect(failures).toBe(0);
    const builds = (await server.request("GET", `/api/apps/${app.id}/builds`, { key })).body.builds;
    expect(builds[0]).toMatchObject({ id: redeployed.body.buildId, status: "succeeded", trigger: "redeploy" });
  }, 120_000);

  test("a failed redeploy leaves the previous release serving", async () => {
    const broken = appZip({ "package.json": JSON.stringify({ name: "versioned", scripts: { build: "exit 1", start: "node server.js" } }) });
    const response = await deployZip(server, key, { name: "versioned-app", runtime: "node", memoryMB: "160" }, broken);
    for (let attempt = 0; attempt < 200; attempt++) {
      const build = (await server.request("GET", `/api/apps/${app.id}/builds`, { key })).body.builds[0];
      if (build.id === response.body.buildId && build.status === "failed") break;
      await Bun.sleep(100);
    }
    const after = await waitForStatus(server, key, app.id, ["running"]);
    expect(after.statusReason).toContain("failed");
    expect((await answer()).version).toBe("v2");
  }, 120_000);

  test("stop, start and restart answer 202 at once; the app reaches the state asked for", async () => {
    const stopStarted = performance.now();
    const stopped = await server.request("POST", `/api/apps/${app.id}/stop`, { key });
    expect(stopped.status).toBe(202);
    expect(stopped.body.app.status).toBe("stopping");
    await waitForStatus(server, key, app.id, ["stopped"], 30_000);
    // The app has no SIGTERM handler; the init process still ends it at once (no 10 s kill timeout).
    expect(performance.now() - stopStarted).toBeLessThan(5_000);
    expect((await viaProxy(server, app.subdomain)).status).toBe(503); // a stopped app is "not running", not "no such app"
    const started = await server.request("POST", `/api/apps/${app.id}/start`, { key });
    expect(started.status).toBe(202);
    expect(started.body.app.status).toBe("starting");
    await waitForStatus(server, key, app.id, ["running"]);
    expect((await answer()).version).toBe("v2");
    const before = await servingContainer();
    const restarted = await server.request("POST", `/api/apps/${app.id}/restart`, { key });
    expect(restarted.status).toBe(202);
    // Queued while the start's release still retires the old container; then the status is still that release's.
    expect(restarted.body.app.status).toBe(restarted.body.queued ? "running" : "starting");
    expect(await waitForNewContainer(before)).not.toBe(before);
    expect((await answer()).version).toBe("v2");
  }, 120_000);

  test("delete answers 202 at once; containers, images, files and builds go; 404 afterwards", async () => {
    const deleted = await server.request("DELETE", `/api/apps/${app.id}`, { key });
    expect(deleted.status).toBe(202);
    expect(deleted.body.app.status).toBe("deleting");
    expect((await server.request("GET", `/api/apps/${app.id}`, { key })).status).toBe(404);
    expect((await server.request("GET", `/api/apps/${app.id}/builds`, { key })).status).toBe(404);
    for (let attempt = 0; attempt < 100 && existsSync(`${server.dataDir}/apps/${app.id}`); attempt++) await Bun.sleep(100);
    expect((await dockerCli("ps", "-aq", "--filter", `label=platform.app=${app.id}`)).trim()).toBe("");
    expect((await dockerCli("images", "-q", "--filter", `label=platform.app=${app.id}`)).trim()).toBe("");
    expect(existsSync(`${server.dataDir}/apps/${app.id}`)).toBe(false);
    expect(readdirSync(`${server.dataDir}/uploads`)).toEqual([]);
    expect((await viaProxy(server, app.subdomain)).status).toBe(404);
    // It was the workspace's last app: its network (one of the engine's few address pools) is given back.
    const networks = (await dockerCli("network", "ls", "-q", "--filter", `label=platform.workspace=${app.workspaceId}`)).trim();
    expect(networks).toBe("");
  }, 120_000);
});
