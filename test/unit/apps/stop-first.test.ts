// Stop-first releases against an engine double, on a real SQLite file: when the engine cannot say
// whether the old container runs, the release fails before a second container starts beside it; an
// old container that does not serve again leaves the app failed; one stopped by a release the
// platform's death cut short is started again at start.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { openDatabase } from "../../../src/db";
import { apps, workspaces } from "../../../src/db/schema";
import type { DockerDriver } from "../../../src/docker/driver";
import { Machines } from "../../../src/machines/service";
import { Deployer, type AppsContext } from "../../../src/apps/deployer";
import { AppRecovery } from "../../../src/apps/recovery";
import { tempDir } from "../../helpers/temp";

/** A database with one running stop-first app, app_1, serving from container `old`. */
function stopFirstApp() {
  const db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  db.insert(apps)
    .values({ id: "app_1", workspaceId: "ws_1", name: "one", runtime: "node", status: "running", memoryMB: 64, startupCommand: "auto", autoRestart: true, autoDeploy: false, machineId: "local", containerId: "old", currentBuildId: "bld_1", releaseStrategy: "stop-first", createdAt: 0, updatedAt: 0 })
    .run();
  return db;
}

test("an old container the engine cannot inspect fails the release: no new container beside it", async () => {
  const db = stopFirstApp();
  const asked: string[] = [];
  const driver = {
    machineId: "local",
    inspectContainer: async () => {
      throw new Error("engine call timed out");
    },
    stopContainer: async (id: string) => void asked.push(`stop ${id}`),
    createContainer: async () => (asked.push("create"), "new"),
  } as unknown as DockerDriver;
  const ctx = { db, machines: new Machines(new Map([["local", driver]])), config: { buildsPerWorkspace: 1, buildsMax: 1 } } as unknown as AppsContext;
  const lines: string[] = [];
  const failure = await new Deployer(ctx, async () => {}).release("app_1", "bld_2", "image", (line) => lines.push(line));
  expect(failure).toContain("could not tell whether the previous container");
  expect(asked).toEqual([]);
  expect(db.select().from(apps).where(eq(apps.id, "app_1")).get()!.currentBuildId).toBe("bld_1");
});

test("a platform killed between a stop-first release's stop and its switch starts the stopped container again at start", async () => {
  const db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  const row = { workspaceId: "ws_1", runtime: "node" as const, status: "starting", memoryMB: 64, startupCommand: "auto", autoRestart: true, autoDeploy: false, machineId: "local", createdAt: 0, updatedAt: 0 };
  db.insert(apps)
    .values([
      { ...row, id: "app_1", name: "one", containerId: "old", currentBuildId: "bld_1", releasingBuildId: "bld_2", stoppedFirstContainerId: "old" },
      // Stopped by something else than a stop-first release: left as it is.
      { ...row, id: "app_2", name: "two", containerId: "other", currentBuildId: "bld_1" },
    ])
    .run();
  const running = new Set<string>();
  const driver = {
    machineId: "local",
    inspectContainer: async (id: string) => ({ id, running: running.has(id), labels: {}, networks: {}, volumeNames: [] }),
    startContainer: async (id: string) => void running.add(id),
  } as unknown as DockerDriver;
  const ctx = {
    db,
    machines: new Machines(new Map([["local", driver]])),
    config: { uploads: { maxArchiveEntries: 10 } },
    storage: { removeLeftoverUploads: async () => {}, sourceDir: () => tempDir() },
    buildLogs: { append: () => {}, finish: () => {} },
  } as unknown as AppsContext;
  await new AppRecovery(ctx, {} as Deployer, async () => {}).recoverAfterRestart();
  expect([...running]).toEqual(["old"]);
  const recovered = db.select().from(apps).where(eq(apps.id, "app_1")).get()!;
  expect([recovered.status, recovered.stoppedFirstContainerId]).toEqual(["running", null]);
  expect(db.select().from(apps).where(eq(apps.id, "app_2")).get()!.status).toBe("failed");
});

test("a stop-first release whose old container does not serve again leaves the app failed, never running without a route", async () => {
  const db = stopFirstApp();
  const running = new Set(["old"]);
  const driver = {
    machineId: "local",
    // No address on the workspace network: the old container cannot pass its check again.
    inspectContainer: async (id: string) => ({ id, running: running.has(id), labels: {}, networks: {}, volumeNames: [], ports: {} }),
    stopContainer: async (id: string) => void running.delete(id),
    startContainer: async (id: string) => void running.add(id),
    removeContainer: async () => {},
    createContainer: async () => {
      throw new Error("the new container cannot be made");
    },
  } as unknown as DockerDriver;
  const ctx = { db, machines: new Machines(new Map([["local", driver]])), config: { buildsPerWorkspace: 1, buildsMax: 1 }, proxyRoutes: { get: () => undefined, delete: () => {} } } as unknown as AppsContext;
  await new Deployer(ctx, async () => {}).release("app_1", "bld_2", "image");
  const after = db.select().from(apps).where(eq(apps.id, "app_1")).get()!;
  expect(after.status).toBe("failed");
  expect(after.statusReason).toContain("the previous container did not serve again");
  expect(running.has("old")).toBe(false);
});
