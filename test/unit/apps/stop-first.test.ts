// A stop-first release against an engine double, on a real SQLite file: when the engine cannot say
// whether the old container runs, the release fails before a second container starts beside it.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { openDatabase } from "../../../src/db";
import { apps, workspaces } from "../../../src/db/schema";
import type { DockerDriver } from "../../../src/docker/driver";
import { Machines } from "../../../src/machines/service";
import { Deployer, type AppsContext } from "../../../src/apps/deployer";
import { tempDir } from "../../helpers/temp";

test("an old container the engine cannot inspect fails the release: no new container beside it", async () => {
  const db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  db.insert(apps)
    .values({ id: "app_1", workspaceId: "ws_1", name: "one", runtime: "node", status: "running", memoryMB: 64, startupCommand: "auto", autoRestart: true, autoDeploy: false, machineId: "local", containerId: "old", currentBuildId: "bld_1", releaseStrategy: "stop-first", createdAt: 0, updatedAt: 0 })
    .run();
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
