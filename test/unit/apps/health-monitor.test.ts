// The probes of running apps, on a real SQLite file, a fake engine that gives each app a loopback
// address, and loopback servers as the apps: an app that never answers cannot keep another app
// from its probes (one probe per app at a time, the longest overdue first, none past the interval).
import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import type { Socket, TCPSocketListener } from "bun";
import { openDatabase } from "../../../src/db";
import { apps, workspaces } from "../../../src/db/schema";
import type { DockerDriver } from "../../../src/docker/driver";
import { Machines } from "../../../src/machines/service";
import type { AppsContext, Deployer } from "../../../src/apps/deployer";
import { HealthHistory } from "../../../src/apps/health/history";
import { HealthMonitor } from "../../../src/apps/health/monitor";
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
  const monitor = new HealthMonitor(ctx, { busy: () => false } as unknown as Deployer, history, new RestartBackoff(60_000), () => false, () => {});

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
