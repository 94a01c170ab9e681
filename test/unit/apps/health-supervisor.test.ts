// The crash supervisor after a platform restart, on a real SQLite file and a fake engine: the
// exits it counted were in memory, yet an app it finds in `crash-loop` stays there and its next
// restart waits the backoff's ceiling, not 2 s.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { openDatabase } from "../../../src/db";
import { apps, workspaces } from "../../../src/db/schema";
import type { DockerDriver } from "../../../src/docker/driver";
import { Machines } from "../../../src/machines/service";
import type { AppsContext, Deployer } from "../../../src/apps/deployer";
import { RestartBackoff } from "../../../src/apps/health/backoff";
import { CrashSupervisor } from "../../../src/apps/health/supervisor";
import { tempDir } from "../../helpers/temp";

const CEILING_MS = 300_000;

/** A fresh supervisor (as at a platform start) for a crash-loop app whose container is `state`. */
function supervisorAtStart(state: "running" | "exited") {
  const db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  db.insert(apps)
    .values({
      id: "app_loop", name: "loop", workspaceId: "ws_1", runtime: "node", memoryMB: 64, startupCommand: "auto", autoRestart: true, autoDeploy: false, machineId: "local",
      status: "crash-loop", statusReason: "Crash loop: the container exited 5 times within 10 min, last with code 3", containerId: "c_loop", createdAt: 0, updatedAt: 0,
    })
    .run();
  const driver = {
    listContainers: async () => [{ id: "c_loop", state }],
    inspectContainer: async () => ({ restartPolicy: "no", startedAt: "2026-01-01T00:00:00Z", exitCode: state === "running" ? null : 3 }),
    logs: async () => [],
  } as unknown as DockerDriver;
  const ctx = { db, machines: new Machines(new Map([["local", driver]])), config: { health: { crashLoopExits: 5, crashLoopMinutes: 10 } } } as unknown as AppsContext;
  const scheduled: string[] = [];
  const deployer = { busy: () => false, schedule: (appId: string) => void scheduled.push(appId) } as unknown as Deployer;
  const backoff = new RestartBackoff(CEILING_MS);
  const supervisor = new CrashSupervisor(ctx, deployer, backoff, async () => {}, async () => {});
  const status = () => db.select().from(apps).where(eq(apps.id, "app_loop")).get()!.status;
  return { supervisor, backoff, scheduled, status };
}

test("after a platform restart a crash-loop app whose container is up stays crash-loop", async () => {
  const { supervisor, status } = supervisorAtStart("running");
  await supervisor.check();
  expect(status()).toBe("crash-loop");
});

test("after a platform restart a crash-loop app whose container is down waits the ceiling before its restart", async () => {
  const { supervisor, backoff, scheduled, status } = supervisorAtStart("exited");
  await supervisor.check();
  expect(status()).toBe("crash-loop");
  expect(backoff.delayMs("app_loop")).toBe(CEILING_MS);
  expect(scheduled).toEqual([]);
});
