// Which containers the reconciliation retires for apps, on a real SQLite file with a fake engine
// that records what it is asked to stop and remove: an app keeps its serving container, one a
// release in progress holds, an unfinished build's, and every container of an app being deleted
// (its deletion removes them); the rest are stopped and removed.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { openDatabase } from "../../../src/db";
import { apps, builds, workspaces } from "../../../src/db/schema";
import type { DockerDriver } from "../../../src/docker/driver";
import { LABEL_APP, LABEL_BUILD } from "../../../src/docker/container-spec";
import { Machines } from "../../../src/machines/service";
import type { ManagedContainer } from "../../../src/machines/reconciler";
import { AppRecovery } from "../../../src/apps/recovery";
import type { AppsContext, Deployer } from "../../../src/apps/deployer";
import { tempDir } from "../../helpers/temp";

function container(id: string, appId: string, buildId?: string): ManagedContainer {
  return { machineId: "local", id, name: `app-${id}`, state: "running", labels: { [LABEL_APP]: appId, ...(buildId && { [LABEL_BUILD]: buildId }) } };
}

test("retire keeps the serving, held, unfinished build's and deleting app's containers, and stops and removes the rest", async () => {
  const db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  const app = { workspaceId: "ws_1", runtime: "node" as const, memoryMB: 64, startupCommand: "auto", autoRestart: true, autoDeploy: false, machineId: "local", createdAt: 0, updatedAt: 0 };
  db.insert(apps)
    .values([
      { ...app, id: "app_1", name: "one", status: "running", containerId: "serving", currentBuildId: "bld_served" },
      { ...app, id: "app_2", name: "two", status: "deleting", containerId: "gone-soon" },
    ])
    .run();
  const build = { appId: "app_1", trigger: "upload", startedAt: 0 };
  db.insert(builds)
    .values([
      { ...build, id: "bld_served", status: "succeeded" },
      { ...build, id: "bld_running", status: "building" },
      { ...build, id: "bld_old", status: "succeeded" },
    ])
    .run();
  const asked: string[] = [];
  const driver = {
    stopContainer: async (id: string) => void asked.push(`stop ${id}`),
    removeContainer: async (id: string) => void asked.push(`remove ${id}`),
  } as unknown as DockerDriver;
  const ctx = { db, machines: new Machines(new Map([["local", driver]])) } as unknown as AppsContext;
  const deployer = { inHand: (appId: string, held: { id: string }) => appId === "app_1" && held.id === "releasing" } as unknown as Deployer;
  const recovery = new AppRecovery(ctx, deployer, async () => {});

  const removed = await recovery.retire([
    container("serving", "app_1", "bld_served"),
    container("releasing", "app_1", "bld_old"),
    container("building", "app_1", "bld_running"),
    container("old-release", "app_1", "bld_old"),
    container("unlabelled-build", "app_1"),
    container("gone-soon", "app_2"),
    container("other-of-deleting", "app_2", "bld_x"),
  ]);
  expect(removed.map((each) => each.id)).toEqual(["old-release", "unlabelled-build"]);
  expect(asked).toEqual(["stop old-release", "remove old-release", "stop unlabelled-build", "remove unlabelled-build"]);
});
