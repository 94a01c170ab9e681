// The probes of running apps, on a real SQLite file, a fake engine that gives each app a loopback
// address, and loopback servers as the apps: an app that never answers cannot keep another app
// from its probes (one probe per app at a time, the longest overdue first, none past the interval);
// an unhealthy app's restart that does not help leaves it unhealthy without a new event, and a
// stop-first app's restart is its own container's, not a release.
import { afterEach, expect, spyOn, test } from "bun:test";
import { join } from "node:path";
import type { Socket, TCPSocketListener } from "bun";
import { openDatabase } from "../../../src/db";
import { apps, workspaces } from "../../../src/db/schema";
import { eq } from "drizzle-orm";
import type { DockerDriver } from "../../../src/docker/driver";
import { Machines } from "../../../src/machines/service";
import type { AppsContext, Deployer } from "../../../src/apps/deployer";
import { HealthHistory } from "../../../src/apps/health/history";
import { HealthMonitor } from "../../../src/apps/health/monitor";
import { PlatformEvents } from "../../../src/platform/events";
import { RestartBackoff } from "../../../src/apps/health/backoff";
import { DEFAULT_HEALTH_CHECK } from "../../../src/apps/health/settings";
import { workspaceNetworkName } from "../../../src/docker/workspace-network";
import { tempDir } from "../../helpers/temp";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

test("an app whose probes never answer holds one probe at a time and does not stop another app's probes", async () => {
  // Accepts and never answers; counts the connections it holds open.
  const held = new Set<Socket<unknown>>();
  let mostHeld = 0;
  const hostile: TCPSocketListener<unknown> = Bun.listen<unknown>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        held.add(socket);
        mostHeld = Math.max(mostHeld, held.size);
      },
      close(socket) {
        held.delete(socket);
      },
      data() {},
    },
  });
  cleanups.push(() => hostile.stop(true));
  const healthy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") });
  cleanups.push(() => healthy.stop(true));

  const db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  const app = { workspaceId: "ws_1", runtime: "node" as const, memoryMB: 64, startupCommand: "auto", autoRestart: false, autoDeploy: false, machineId: "local", status: "running", createdAt: 0, updatedAt: 0 };
  db.insert(apps)
    .values([
      // First in the table: the old pass gave it every slot before reaching the other.
      { ...app, id: "app_hostile", name: "hostile", containerId: "c_hostile", servingPort: hostile.port, healthCheck: { ...DEFAULT_HEALTH_CHECK, path: "/", intervalSeconds: 1, timeoutSeconds: 60, unhealthyThreshold: 20 } },
      { ...app, id: "app_healthy", name: "healthy", containerId: "c_healthy", servingPort: healthy.port, healthCheck: { ...DEFAULT_HEALTH_CHECK, path: "/", intervalSeconds: 1, timeoutSeconds: 1 } },
    ])
    .run();
  const driver = { inspectContainer: async () => ({ networks: { [workspaceNetworkName("ws_1")]: "127.0.0.1" } }) } as unknown as DockerDriver;
  const ctx = { db, machines: new Machines(new Map([["local", driver]])), config: { domain: "apps.test" } } as unknown as AppsContext;
  const history = new HealthHistory();
  const monitor = new HealthMonitor(ctx, { busy: () => false } as unknown as Deployer, history, new RestartBackoff(60_000), () => false, async () => null, async () => {});

  // Twelve passes a second apart (on the monitor's clock), each given the time for a loopback probe.
  const start = Date.now();
  for (let pass = 0; pass < 12; pass++) {
    monitor.tick(start + pass * 1000);
    await Bun.sleep(60);
  }
  expect(history.recent("app_healthy")).toHaveLength(12);
  expect(history.recent("app_healthy").every((probe) => probe.passed)).toBe(true);
  expect(mostHeld).toBe(1);
});

/** An autoRestart app whose health check always answers 500, restarted with no backoff, and the fakes around it. */
function sickApp(releaseStrategy: "start-first" | "stop-first") {
  const warn = spyOn(console, "warn").mockImplementation(() => {});
  cleanups.push(() => warn.mockRestore());
  const sick = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("no", { status: 500 }) });
  cleanups.push(() => sick.stop(true));
  const db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  db.insert(apps)
    .values({
      id: "app_sick", name: "sick", workspaceId: "ws_1", runtime: "node", memoryMB: 64, startupCommand: "auto", autoRestart: true, autoDeploy: false, machineId: "local",
      status: "running", containerId: "c_sick", servingPort: sick.port, releaseStrategy, createdAt: 0, updatedAt: 0,
      healthCheck: { ...DEFAULT_HEALTH_CHECK, path: "/health", intervalSeconds: 1, timeoutSeconds: 1, unhealthyThreshold: 1 },
    })
    .run();
  const engineCalls: string[] = [];
  const driver = {
    inspectContainer: async () => ({ networks: { [workspaceNetworkName("ws_1")]: "127.0.0.1" } }),
    stopContainer: async (id: string) => void engineCalls.push(`stop ${id}`),
    startContainer: async (id: string) => void engineCalls.push(`start ${id}`),
  } as unknown as DockerDriver;
  const events = new PlatformEvents();
  const ctx = { db, machines: new Machines(new Map([["local", driver]])), config: { domain: "apps.test" }, events } as unknown as AppsContext;
  // The app's queue: one task at a time, busy while it runs.
  let queued: Promise<unknown> | null = null;
  const deployer = {
    busy: () => queued !== null,
    schedule: (_appId: string, task: (signal: AbortSignal) => Promise<unknown>) => {
      queued = task(new AbortController().signal).finally(() => (queued = null));
    },
  } as unknown as Deployer;
  // As the deployer's release of a fresh container that fails its health check: `starting`, then `running` on the old container.
  let releases = 0;
  let endRelease = () => {};
  const release = async () => {
    releases++;
    db.update(apps).set({ status: "starting" }).where(eq(apps.id, "app_sick")).run();
    await new Promise<void>((resolve) => (endRelease = resolve));
    db.update(apps).set({ status: "running", statusReason: "Deploy of build bld_1 failed: the app did not pass its health check; still serving build bld_1" }).where(eq(apps.id, "app_sick")).run();
    return "the app did not pass its health check within 3 s (last probe: GET /health: HTTP 500 after 1 ms)";
  };
  const routesRestored: string[] = [];
  const monitor = new HealthMonitor(ctx, deployer, new HealthHistory(), new RestartBackoff(0), () => false, release, async (appId) => void routesRestored.push(appId));
  return {
    monitor,
    engineCalls,
    routesRestored,
    releases: () => releases,
    endRelease: () => endRelease(),
    queueDone: () => queued ?? Promise.resolve(),
    app: () => db.select().from(apps).where(eq(apps.id, "app_sick")).get()!,
    unhealthyEvents: () => events.recent("ws_1").filter((event) => event.type === "app.unhealthy").length,
  };
}

test("an unhealthy app whose fresh container fails too stays unhealthy, with why, and raises app.unhealthy once", async () => {
  const sick = sickApp("start-first");
  sick.monitor.tick();
  await Bun.sleep(100);
  expect(sick.unhealthyEvents()).toBe(1);
  expect(sick.releases()).toBe(1);
  // A pass while the release runs (the app is `starting`).
  sick.monitor.tick();
  sick.endRelease();
  await sick.queueDone();
  expect(sick.app()).toMatchObject({ status: "unhealthy", containerId: "c_sick" });
  expect(sick.app().statusReason).toContain("a fresh container did not pass either: the app did not pass its health check");

  // The next cycle: the old container still fails, another restart does not help either.
  sick.monitor.tick();
  await Bun.sleep(100);
  expect(sick.releases()).toBe(2);
  sick.endRelease();
  await sick.queueDone();
  expect(sick.app().status).toBe("unhealthy");
  expect(sick.unhealthyEvents()).toBe(1);
});

test("a stop-first app's health restart is its container stopped and started again, not a release", async () => {
  const sick = sickApp("stop-first");
  sick.monitor.tick();
  await Bun.sleep(100);
  await sick.queueDone();
  expect(sick.releases()).toBe(0);
  expect(sick.engineCalls).toEqual(["stop c_sick", "start c_sick"]);
  expect(sick.routesRestored).toEqual(["app_sick"]);
  expect(sick.app()).toMatchObject({ status: "unhealthy", containerId: "c_sick" });
});
