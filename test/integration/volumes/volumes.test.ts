// Volumes with a real engine: data written by an app survives redeploys, a rollback, settings
// changes and a platform restart; a delete keeps the volume detached unless deleteVolumes=true; a
// detached volume is reused by name or attached to another app; the release strategy's order of
// stop and start is seen in the volume itself; sizes are measured and the disk quota is enforced.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { dockerCli } from "../../helpers/docker";
import { appZip, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

let server: TestServer;
let key: string;

/**
 * A node app that keeps notes in /app/data (or DATA_DIR): GET /write?text= appends a line, /read answers the
 * file, /fill?mb= writes a file of that many MiB. It writes its version and the time to
 * /app/data/alive every 50 ms, and each start is logged in /app/data/events with whether another
 * version was alive then (its heartbeat moved during the first second): a release's overlap is read back.
 */
const notesApp = (version: string, { crash = false, listenAfterMs = 0 } = {}) =>
  appZip({
    "package.json": JSON.stringify({ name: "notes", scripts: { start: "node server.js" } }),
    "server.js": `
      const fs = require("fs");
      const dir = process.env.DATA_DIR || "/app/data";
      // Without its volume (detached) the folder cannot be made: the app runs on, with nothing to read.
      const quietly = (write) => { try { write(); } catch {} };
      quietly(() => fs.mkdirSync(dir, { recursive: true }));
      const alive = () => { try { return fs.readFileSync(dir + "/alive", "utf8"); } catch { return ""; } };
      const seen = alive();
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
      const other = alive() !== seen ? alive().split(" ")[0] : null;
      quietly(() => fs.appendFileSync(dir + "/events", "start ${version} " + (other ? "while " + other + " runs" : "alone") + "\\n"));
      ${crash ? "process.exit(3);" : ""}
      setInterval(() => quietly(() => { fs.writeFileSync(dir + "/alive.tmp", "${version} " + Date.now()); fs.renameSync(dir + "/alive.tmp", dir + "/alive"); }), 50);
      const server = require("http").createServer((req, res) => {
        const url = new URL(req.url, "http://x");
        const read = (name) => { try { return fs.readFileSync(dir + "/" + name, "utf8"); } catch { return ""; } };
        if (url.pathname === "/write") fs.appendFileSync(dir + "/notes", url.searchParams.get("text") + "\\n");
        if (url.pathname === "/fill") fs.writeFileSync(dir + "/fill", Buffer.alloc(Number(url.searchParams.get("mb")) * 1024 * 1024, 1));
        res.end(JSON.stringify({ version: "${version}", notes: read("notes"), events: read("events") }));
      });
      setTimeout(() => server.listen(process.env.PORT), ${listenAfterMs});
    `,
  });

const NOTES = JSON.stringify([{ name: "notes", mountPath: "/app/data" }]);

async function deployNotes(name: string, version: string, fields: Record<string, string> = {}, options: { crash?: boolean; listenAfterMs?: number } = {}) {
  const deployed = await deployZip(server, key, { name, runtime: "node", memoryMB: "128", volumes: NOTES, ...fields }, notesApp(version, options));
  expect(deployed.status).toBe(202);
  return deployed.body;
}

async function running(appId: string) {
  const app = await waitForStatus(server, key, appId, ["running", "failed"]);
  if (app.status !== "running") throw new Error(`app ${appId} ${app.status}: ${app.statusReason}`);
  return app;
}

/** Waits until the app's current build is `buildId` (a release of it succeeded). */
async function serving(appId: string, buildId: string) {
  for (let attempt = 0; attempt < 480; attempt++) {
    const app = (await server.request("GET", `/api/apps/${appId}`, { key })).body.app;
    if (app.currentBuildId === buildId && app.status === "running") return app;
    if (app.status === "failed") throw new Error(`release failed: ${app.statusReason}`);
    await Bun.sleep(250);
  }
  throw new Error(`build ${buildId} never served`);
}

async function ask(subdomain: string, path = "/read"): Promise<{ version: string; notes: string; events: string }> {
  const answer = await viaProxy(server, subdomain, path);
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${await answer.text()}`);
  return answer.json();
}
const volumeList = async () => (await server.request("GET", "/api/volumes/", { key })).body.volumes as any[];
const engineVolumeExists = async (name: string) => (await dockerCli("volume", "ls", "-q", "--filter", `name=^${name}$`)).trim() === name;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_VOLUME_SIZE_REFRESH_SECONDS: "0" });
  key = (await server.createKey("volumes")).key;
}, 60_000);
afterAll(async () => {
  for (const app of (await server.request("GET", "/api/apps/", { key })).body.apps ?? []) {
    await server.request("DELETE", `/api/apps/${app.id}?deleteVolumes=true`, { key });
  }
  for (let attempt = 0; attempt < 120 && ((await server.request("GET", "/api/apps/", { key })).body.apps ?? []).length > 0; attempt++) await Bun.sleep(250);
  for (const volume of await volumeList()) await server.request("DELETE", `/api/volumes/${volume.id}`, { key });
  await server.stop();
}, 90_000);

describe("volumes", () => {
  let app: any;

  /**
   * The notes app the tests share, running with its two notes: deployed afresh when no earlier test
   * left one running (a test run alone, or after one failed), so one failure does not fail the rest.
   */
  async function sharedNotes() {
    const current = app && (await server.request("GET", `/api/apps/${app.id}`, { key })).body.app;
    if (current?.status === "running") return (app = current);
    const deployed = await deployNotes("notes", "v1");
    app = await serving(deployed.app.id, deployed.buildId);
    if ((await ask(app.subdomain)).notes === "") for (const text of ["kept", "after-rollback"]) await ask(app.subdomain, `/write?text=${text}`);
    return app;
  }

  test("data outlives redeploys, a rollback, a settings change and a platform restart", async () => {
    const first = await deployNotes("notes", "v1");
    app = await running(first.app.id);
    expect(app.volumes).toEqual([{ id: expect.stringMatching(/^vol_/), name: "notes", mountPath: "/app/data", sizeBytes: null }]);
    expect(app.releaseStrategy).toBe("stop-first");
    expect((await ask(app.subdomain, "/write?text=kept")).notes).toBe("kept\n");

    const engineName = `platform-vol-${app.volumes[0].id.toLowerCase()}`;
    const labels = JSON.parse(await dockerCli("volume", "inspect", "-f", "{{json .Labels}}", engineName));
    expect(labels).toMatchObject({ "platform.managed": "true", "platform.workspace": app.workspaceId, "platform.app": app.id, "platform.volume": app.volumes[0].id });

    const second = await deployNotes("notes", "v2");
    await serving(app.id, second.buildId);
    expect(await ask(app.subdomain)).toMatchObject({ version: "v2", notes: "kept\n" });

    const rolledBack = await server.request("POST", `/api/apps/${app.id}/builds/${first.buildId}/rollback`, { key });
    expect(rolledBack.status).toBe(202);
    await serving(app.id, rolledBack.body.build.id);
    expect(await ask(app.subdomain, "/write?text=after-rollback")).toMatchObject({ version: "v1", notes: "kept\nafter-rollback\n" });

    const beforeChange = await containersOf(app.id);
    const changed = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { memoryMB: 144 } });
    expect(changed.body.restarted).toBe(true);
    await waitForRestart(app.id, beforeChange);
    expect((await ask(app.subdomain)).notes).toBe("kept\nafter-rollback\n");

    await server.stop();
    await server.boot();
    await running(app.id);
    // The recovery routes the app again shortly after the server answers.
    for (let attempt = 0; attempt < 120 && (await viaProxy(server, app.subdomain)).status !== 200; attempt++) await Bun.sleep(250);
    expect((await ask(app.subdomain)).notes).toBe("kept\nafter-rollback\n");
  }, 400_000);

  test("stop-first stops the old container before the new one starts, and starts it again when the new one fails", async () => {
    await sharedNotes();
    const before = (await ask(app.subdomain)).events.split("\n").filter(Boolean).length;
    // The new version listens only after 6 s: the crash supervisor (a pass every 2 s, a first restart after 2 s) sees the stopped old container meanwhile.
    const next = await deployNotes("notes", "v3", {}, { listenAfterMs: 6_000 });
    // Clients see the gap as a stopped app (503, Retry-After), never as an app not answering (502).
    const answers = new Set<string>();
    let releasing = true;
    const polling = (async () => {
      while (releasing) {
        const answer = await viaProxy(server, app.subdomain);
        answers.add(`${answer.status}${answer.status === 503 ? ` retry-after ${answer.headers.has("retry-after")}` : ""}`);
        await answer.arrayBuffer();
        await Bun.sleep(20);
      }
    })();
    await serving(app.id, next.buildId);
    releasing = false;
    await polling;
    expect([...answers].sort()).toEqual(["200", "503 retry-after true"]);
    // The old version was never started again during the release (it would have logged its start), and one container is left.
    const events = (await ask(app.subdomain)).events.split("\n").filter(Boolean).slice(before);
    expect(events).toEqual(["start v3 alone"]);
    expect(await containersOf(app.id, { all: true })).toHaveLength(1);
    expect((await ask(app.subdomain)).notes).toBe("kept\nafter-rollback\n");

    const broken = await deployNotes("notes", "v4", {}, { crash: true });
    const failed = await waitForBuildEnd(app.id, broken.buildId);
    expect(failed).toBe("failed");
    const after = await running(app.id);
    expect(after.currentBuildId).toBe(next.buildId);
    expect(await ask(app.subdomain)).toMatchObject({ version: "v3", notes: "kept\nafter-rollback\n" });
  }, 300_000);

  test("start-first, when chosen, starts the new container while the old one still runs", async () => {
    await sharedNotes();
    const changed = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { releaseStrategy: "start-first" } });
    expect(changed.body.app.releaseStrategy).toBe("start-first");
    const before = (await ask(app.subdomain)).events.split("\n").filter(Boolean).length;
    const next = await deployNotes("notes", "v5");
    await serving(app.id, next.buildId);
    const events = (await ask(app.subdomain)).events.split("\n").filter(Boolean).slice(before);
    expect(events).toEqual([expect.stringMatching(/^start v5 while v\d runs$/)]);
  }, 300_000);

  test("settings detach and attach a volume again; a detached one is listed and cannot be taken twice", async () => {
    await sharedNotes();
    const beforeDetach = await containersOf(app.id);
    const detached = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { volumes: [] } });
    expect(detached.status).toBe(200);
    expect(detached.body.app.volumes).toEqual([]);
    expect(detached.body.restarted).toBe(true);
    const listed = (await volumeList()).find((volume) => volume.name === "notes");
    expect(listed).toMatchObject({ detached: true, appId: null, machineId: "local", mountPath: "/app/data" });

    await waitForRestart(app.id, beforeDetach);
    expect((await ask(app.subdomain)).notes).toBe("");
    const beforeAttach = await containersOf(app.id);
    const attached = await server.request("POST", `/api/volumes/${listed.id}/attach`, { key, body: { appId: app.id } });
    expect(attached.status).toBe(200);
    expect(attached.body.volume).toMatchObject({ detached: false, appId: app.id, appName: "notes" });
    await waitForRestart(app.id, beforeAttach);
    expect((await ask(app.subdomain)).notes).toBe("kept\nafter-rollback\n");

    expect((await server.request("POST", `/api/volumes/${listed.id}/attach`, { key, body: { appId: app.id } })).body.code).toBe("VOLUME_ATTACHED");
    const removal = await server.request("DELETE", `/api/volumes/${listed.id}`, { key });
    expect([removal.status, removal.body.code]).toEqual([409, "VOLUME_ATTACHED"]);
    const other = await deployZip(server, key, { name: "thief", runtime: "node", memoryMB: "128", volumes: NOTES }, notesApp("x"));
    expect([other.status, other.body.code]).toEqual([409, "VOLUME_ATTACHED"]);
  }, 300_000);

  test("deleting the app keeps its volume detached; another app of the workspace attaches it, and a new one reuses it by name", async () => {
    await sharedNotes();
    const volumeId = app.volumes[0].id;
    expect((await server.request("DELETE", `/api/apps/${app.id}`, { key })).status).toBe(202);
    await waitGone(app.id);
    const kept = (await volumeList()).find((volume) => volume.id === volumeId);
    expect(kept).toMatchObject({ detached: true, appId: null });
    expect(await engineVolumeExists(`platform-vol-${volumeId.toLowerCase()}`)).toBe(true);

    // Its notes are in a folder of its own until the volume is mounted there.
    const heir = await deployZip(server, key, { name: "heir", runtime: "node", memoryMB: "128", envVars: JSON.stringify({ DATA_DIR: "/tmp/notes" }) }, notesApp("h1"));
    const heirApp = await running(heir.body.app.id);
    expect((await ask(heirApp.subdomain)).notes).toBe("");
    const beforeAttach = await containersOf(heirApp.id);
    const attached = await server.request("POST", `/api/volumes/${volumeId}/attach`, { key, body: { appId: heirApp.id, mountPath: "//tmp/notes/" } });
    expect(attached.status).toBe(200);
    expect(attached.body).toMatchObject({ restarted: true, volume: { appId: heirApp.id, mountPath: "/tmp/notes", detached: false } });
    await waitForRestart(heirApp.id, beforeAttach);
    expect((await ask(heirApp.subdomain)).notes).toBe("kept\nafter-rollback\n");

    expect((await server.request("PUT", `/api/apps/${heirApp.id}/settings`, { key, body: { volumes: [] } })).status).toBe(200);
    const second = await deployNotes("second-heir", "h2");
    expect(second.reattached).toEqual(["notes"]);
    app = await running(second.app.id);
    expect(app.volumes[0].id).toBe(volumeId);
    expect((await ask(app.subdomain)).notes).toBe("kept\nafter-rollback\n");
  }, 300_000);

  test("deleteVolumes=true deletes the volume with the app", async () => {
    await sharedNotes();
    const volumeId = app.volumes[0].id;
    await server.request("DELETE", `/api/apps/${app.id}?deleteVolumes=true`, { key });
    await waitGone(app.id);
    expect((await volumeList()).some((volume) => volume.id === volumeId)).toBe(false);
    expect(await engineVolumeExists(`platform-vol-${volumeId.toLowerCase()}`)).toBe(false);
  }, 120_000);

  test("mount paths over the kernel's folders or the app's code, overlapping paths and bad names are refused", async () => {
    const refused = async (volumes: unknown) => {
      const answer = await deployZip(server, key, { name: "refused", runtime: "node", memoryMB: "128", volumes: JSON.stringify(volumes) }, notesApp("r"));
      return [answer.status, answer.body.code];
    };
    expect(await refused([{ name: "a", mountPath: "/proc/x" }])).toEqual([400, "INVALID_MOUNT_PATH"]);
    expect(await refused([{ name: "a", mountPath: "/app" }])).toEqual([400, "INVALID_MOUNT_PATH"]);
    expect(await refused([{ name: "a", mountPath: "data" }])).toEqual([400, "INVALID_MOUNT_PATH"]);
    expect(await refused([{ name: "a", mountPath: "/app/data/../x" }])).toEqual([400, "INVALID_MOUNT_PATH"]);
    expect(await refused([{ name: "a", mountPath: "/data" }, { name: "b", mountPath: "/data/sub" }])).toEqual([400, "MOUNT_PATHS_OVERLAP"]);
    expect(await refused([{ name: "Bad_Name", mountPath: "/data" }])).toEqual([400, "INVALID_VOLUME_NAME"]);
    expect(await refused({ name: "a" })).toEqual([400, "VALIDATION_FAILED"]);
    expect((await server.request("GET", "/api/apps/", { key })).body.apps.some((listed: any) => listed.name === "refused")).toBe(false);
  });
});

describe("volume sizes and the disk quota", () => {
  let quotaServer: TestServer;
  let quotaKey: string;

  beforeAll(async () => {
    quotaServer = await TestServer.start({ PLATFORM_VOLUME_SIZE_REFRESH_SECONDS: "0", PLATFORM_QUOTA_DISK_MB: "3" });
    quotaKey = (await quotaServer.createKey("volume-quota")).key;
  });
  afterAll(async () => {
    for (const listed of (await quotaServer.request("GET", "/api/apps/", { key: quotaKey })).body.apps ?? []) {
      await quotaServer.request("DELETE", `/api/apps/${listed.id}?deleteVolumes=true`, { key: quotaKey });
    }
    for (let attempt = 0; attempt < 120 && ((await quotaServer.request("GET", "/api/apps/", { key: quotaKey })).body.apps ?? []).length > 0; attempt++) await Bun.sleep(250);
    await quotaServer.stop();
  }, 60_000);

  test("a volume's size is measured, counts against the disk quota, and a volume added past it is refused", async () => {
    const form = { name: "filler", runtime: "node", memoryMB: "128", volumes: NOTES };
    const deployed = await deployZip(quotaServer, quotaKey, form, notesApp("f"));
    expect(deployed.status).toBe(202);
    const filler = await waitForStatus(quotaServer, quotaKey, deployed.body.app.id, ["running", "failed"]);
    expect(filler.status).toBe("running");
    await viaProxy(quotaServer, filler.subdomain, "/fill?mb=4");
    // Measured in the background: a list under load may answer before the measure ends.
    let listed: any[] = [];
    for (let attempt = 0; attempt < 60; attempt++) {
      listed = (await quotaServer.request("GET", "/api/volumes/", { key: quotaKey })).body.volumes;
      if (listed[0].sizeBytes >= 4 * 1024 * 1024) break;
      await Bun.sleep(500);
    }
    expect(listed[0].sizeBytes).toBeGreaterThanOrEqual(4 * 1024 * 1024);
    expect(listed[0].sizeMeasuredAt).not.toBeNull();
    const usage = (await quotaServer.request("GET", "/api/organization/usage", { key: quotaKey })).body.usage;
    expect(usage.disk.volumesBytes).toBeGreaterThanOrEqual(4 * 1024 * 1024);

    const more = await quotaServer.request("PUT", `/api/apps/${filler.id}/settings`, {
      key: quotaKey,
      body: { volumes: [{ name: "notes", mountPath: "/app/data" }, { name: "more", mountPath: "/srv/more" }] },
    });
    expect([more.status, more.body.code]).toEqual([409, "QUOTA_EXCEEDED"]);
    expect(more.body.error).toContain("PLATFORM_QUOTA_DISK_MB");
    const app = (await quotaServer.request("GET", `/api/apps/${filler.id}`, { key: quotaKey })).body.app;
    expect(app.volumes.map((volume: any) => volume.name)).toEqual(["notes"]);
  }, 300_000);
});

async function waitForBuildEnd(appId: string, buildId: string): Promise<string> {
  for (let attempt = 0; attempt < 480; attempt++) {
    const build = (await server.request("GET", `/api/apps/${appId}/builds/${buildId}`, { key })).body.build;
    if (["succeeded", "failed", "canceled"].includes(build?.status) && (await server.request("GET", `/api/apps/${appId}`, { key })).body.app.status !== "starting") {
      return build.status;
    }
    await Bun.sleep(250);
  }
  throw new Error(`build ${buildId} did not end`);
}

/** Ids of the app's running containers. */
/** The app's running containers, or with `all` the stopped ones too. */
async function containersOf(appId: string, { all = false } = {}): Promise<string[]> {
  return (await dockerCli("ps", ...(all ? ["-a"] : []), "-q", "--no-trunc", "--filter", `label=platform.app=${appId}`)).trim().split("\n").filter(Boolean);
}

/** Waits for the restart a change started: one container, not one of `before`, serves and the app runs. */
async function waitForRestart(appId: string, before: string[]) {
  for (let attempt = 0; attempt < 480; attempt++) {
    const serving = await containersOf(appId);
    const app = (await server.request("GET", `/api/apps/${appId}`, { key })).body.app;
    if (app.status === "running" && serving.length === 1 && !before.includes(serving[0]!)) return;
    await Bun.sleep(250);
  }
  throw new Error(`app ${appId} was not restarted`);
}

async function waitGone(appId: string) {
  for (let attempt = 0; attempt < 240; attempt++) {
    const apps = (await server.request("GET", "/api/apps/", { key })).body.apps as any[];
    if (!apps.some((listed) => listed.id === appId)) return;
    await Bun.sleep(250);
  }
  const app = (await server.request("GET", `/api/apps/${appId}`, { key })).body.app;
  throw new Error(`app ${appId} was not removed: ${app?.status} ${app?.statusReason}`);
}
