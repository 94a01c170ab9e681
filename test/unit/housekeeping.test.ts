// Housekeeping on a real SQLite file and data dir: expired sessions go, live ones stay; each app
// keeps its newest builds, its current build and unfinished ones, and loses the rest with their
// log files and (platform) images, except an image a remaining build (a rollback entry) still has.
import { beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { openDatabase, type PlatformDb } from "../../src/db";
import { eq } from "drizzle-orm";
import { apps, builds, sessions, users, workspaces } from "../../src/db/schema";
import type { DockerDriver } from "../../src/docker/driver";
import { Machines } from "../../src/machines/service";
import { runHousekeeping } from "../../src/housekeeping";
import { BuildLogs } from "../../src/apps/build-logs";
import { tempDir } from "../helpers/temp";

const NOW = 1_700_000_000_000;

let db: PlatformDb;
let dataDir: string;
let removedImages: string[];

const logFile = (appId: string, buildId: string) => join(dataDir, "apps", appId, "builds", `${buildId}.log`);

function context() {
  const driver = { removeImage: async (image: string) => (removedImages.push(image), true) } as unknown as DockerDriver;
  return { db, machines: new Machines(new Map([["local", driver]])), buildRetention: 3, removeBuildLog: (appId: string, buildId: string) => new BuildLogs(logFile).remove(appId, buildId), now: () => NOW };
}

function insertApp(id: string, currentBuildId: string | null) {
  db.insert(apps)
    .values({
      id, workspaceId: "ws_1", name: id, runtime: "node", status: "running", memoryMB: 64, startupCommand: "auto",
      autoRestart: true, autoDeploy: false, machineId: "local", currentBuildId, createdAt: 0, updatedAt: 0,
    })
    .run();
}

/** Builds b0 (oldest) .. b<count-1> (newest) of the app, each with a log file. */
function insertBuilds(appId: string, count: number, status: (index: number) => string = () => "succeeded") {
  for (let index = 0; index < count; index++) {
    const id = `${appId}-b${index}`;
    db.insert(builds).values({ id, appId, status: status(index), trigger: "upload", image: `platform-app-${appId}:${id}`, startedAt: NOW - (count - index) * 60_000 }).run();
    mkdirSync(dirname(logFile(appId, id)), { recursive: true });
    writeFileSync(logFile(appId, id), "==> log\n");
  }
}

const buildIds = (appId: string) => db.select().from(builds).all().filter((build) => build.appId === appId).map((build) => build.id).sort();

beforeEach(() => {
  dataDir = tempDir();
  db = openDatabase(join(dataDir, "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  db.insert(users).values({ id: "usr_1", email: "a@example.com", createdAt: 0 }).run();
  removedImages = [];
});

describe("housekeeping", () => {
  test("expired sessions are deleted, live ones kept", async () => {
    db.insert(sessions)
      .values([
        { tokenHash: "expired", userId: "usr_1", expiresAt: NOW - 1, createdAt: 0 },
        { tokenHash: "live", userId: "usr_1", expiresAt: NOW + 3_600_000, createdAt: 0 },
      ])
      .run();
    const report = await runHousekeeping(context());
    expect(report.sessions).toBe(1);
    expect(db.select().from(sessions).all().map((session) => session.tokenHash)).toEqual(["live"]);
  });

  test("builds past the retention go with their logs and images; the current build and unfinished ones stay", async () => {
    insertApp("app_a", "app_a-b0"); // runs its oldest build: kept whatever its age
    insertBuilds("app_a", 6, (index) => (index === 1 ? "building" : "succeeded"));
    insertApp("app_b", "app_b-b1");
    insertBuilds("app_b", 2);

    const report = await runHousekeeping(context());

    // app_a: newest three (b3, b4, b5), the current b0, the unfinished b1; b2 goes.
    expect(buildIds("app_a")).toEqual(["app_a-b0", "app_a-b1", "app_a-b3", "app_a-b4", "app_a-b5"]);
    expect(existsSync(logFile("app_a", "app_a-b2"))).toBe(false);
    expect(existsSync(logFile("app_a", "app_a-b0"))).toBe(true);
    expect(removedImages).toEqual(["platform-app-app_a:app_a-b2"]);
    expect(buildIds("app_b")).toEqual(["app_b-b0", "app_b-b1"]); // within the retention
    expect(report).toEqual({ sessions: 0, builds: 1, images: 1 });

    // A second run finds nothing more to do.
    expect(await runHousekeeping(context())).toEqual({ sessions: 0, builds: 0, images: 0 });
  });

  test("a pruned build's image stays while a remaining rollback entry releases it; an image already removed is not asked for", async () => {
    insertApp("app_a", "app_a-r1");
    insertBuilds("app_a", 5);
    // b0's image was removed to keep only the newest few; the newest entry, serving, is a rollback to b1.
    db.update(builds).set({ imageRemovedAt: NOW }).where(eq(builds.id, "app_a-b0")).run();
    db.insert(builds).values({ id: "app_a-r1", appId: "app_a", status: "succeeded", trigger: "rollback", rollbackOf: "app_a-b1", image: "platform-app-app_a:app_a-b1", startedAt: NOW }).run();

    const report = await runHousekeeping(context());

    expect(buildIds("app_a")).toEqual(["app_a-b3", "app_a-b4", "app_a-r1"]);
    expect(removedImages).toEqual(["platform-app-app_a:app_a-b2"]);
    expect(report).toEqual({ sessions: 0, builds: 3, images: 1 });
  });
});
