// Which images an app keeps for rollbacks (the newest few successful builds', the serving one,
// unfinished builds'), and their removal on a real SQLite file with a driver that records what it
// is asked to remove: every build that had a removed image says so before the engine is asked, one
// the engine refuses is marked kept again.
import { beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { openDatabase, type PlatformDb } from "../../../src/db";
import { apps, builds, workspaces } from "../../../src/db/schema";
import type { Config } from "../../../src/config";
import type { DockerDriver } from "../../../src/docker/driver";
import { Machines } from "../../../src/machines/service";
import { imagesBeyondRetention, removeImagesBeyondRetention } from "../../../src/apps/image-retention";
import { tempDir } from "../../helpers/temp";

type BuildRow = typeof builds.$inferSelect;

const NOW = 1_700_000_000_000;

/** A build `minutesAgo` old with its own image (or the one given). */
function build(id: string, minutesAgo: number, fields: Partial<BuildRow> = {}): BuildRow {
  return {
    id, appId: "app_1", status: "succeeded", trigger: "upload", image: `platform-app-app_1:${id}`, imageRemovedAt: null, imageDigest: null, pendingImageNames: null,
    commitSha: null, commitMessage: null, rollbackOf: null, error: null, startedAt: NOW - minutesAgo * 60_000, finishedAt: null,
    ...fields,
  };
}

const image = (buildId: string) => `platform-app-app_1:${buildId}`;

describe("imagesBeyondRetention", () => {
  test("the newest `kept` succeeded builds' images stay, older ones go", () => {
    const history = [build("b1", 40), build("b2", 30), build("b3", 20), build("b4", 10)];
    expect(imagesBeyondRetention(history, "b4", 2).sort()).toEqual([image("b1"), image("b2")]);
    expect(imagesBeyondRetention(history, "b4", 4)).toEqual([]);
  });

  test("a rollback entry shares its source build's image: counted once, and that image stays", () => {
    // b1 serves again through the rollback entry r1, the newest build.
    const history = [build("b1", 40), build("b2", 30), build("b3", 20), build("r1", 5, { trigger: "rollback", rollbackOf: "b1", image: image("b1") })];
    expect(imagesBeyondRetention(history, "r1", 2)).toEqual([image("b2")]);
    expect(imagesBeyondRetention(history, "r1", 1).sort()).toEqual([image("b2"), image("b3")]);
    // Still being released (`building`), not yet serving: its image stays all the same.
    const releasing = [...history.slice(0, 3), build("r1", 5, { status: "building", trigger: "rollback", rollbackOf: "b1", image: image("b1") })];
    expect(imagesBeyondRetention(releasing, "b3", 1)).toEqual([image("b2")]);
  });

  test("the serving build's image stays however old; failed builds do not count among the newest", () => {
    const history = [build("b1", 40), build("b2", 30), build("b3", 20, { status: "failed" }), build("b4", 10)];
    expect(imagesBeyondRetention(history, "b1", 1).sort()).toEqual([image("b2"), image("b3")]);
  });

  test("unfinished builds keep theirs; builds without an image or already removed are not listed", () => {
    const history = [
      build("b1", 40, { imageRemovedAt: NOW }),
      build("b2", 30),
      build("b3", 20, { status: "building" }),
      build("b4", 15, { status: "canceled", image: null }),
      build("b5", 10),
    ];
    expect(imagesBeyondRetention(history, "b5", 1)).toEqual([image("b2")]);
  });
});

describe("removeImagesBeyondRetention", () => {
  let db: PlatformDb;
  let removed: string[];
  let refused: Set<string>;

  /** What the builds said of each image while the engine was asked to remove it. */
  let keptDuringRemoval: Record<string, boolean>;

  const driver = {
    removeImage: async (name: string) => {
      keptDuringRemoval[name] = db.select().from(builds).where(eq(builds.image, name)).all().some((row) => row.imageRemovedAt === null);
      await Bun.sleep(1);
      if (refused.has(name)) throw new Error("conflict: image is being used");
      removed.push(name);
      return true;
    },
  } as unknown as DockerDriver;
  const context = (kept: number) => ({ db, machines: new Machines(new Map([["local", driver]])), config: { appImagesKept: kept } as Config });
  const kept = () => Object.fromEntries(db.select().from(builds).all().map((row) => [row.id, row.imageRemovedAt === null]));

  beforeEach(() => {
    db = openDatabase(join(tempDir(), "platform.sqlite"));
    db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
    db.insert(apps)
      .values({
        id: "app_1", workspaceId: "ws_1", name: "app", runtime: "node", status: "running", memoryMB: 64, startupCommand: "auto",
        autoRestart: true, autoDeploy: false, machineId: "local", currentBuildId: "b4", createdAt: 0, updatedAt: 0,
      })
      .run();
    removed = [];
    refused = new Set();
    keptDuringRemoval = {};
  });

  test("older images are removed from the engine and every build that had one is marked, the log says which", async () => {
    db.insert(builds).values([build("b1", 40), build("b2", 30), build("r1", 25, { trigger: "rollback", rollbackOf: "b1", image: image("b1") }), build("b3", 20), build("b4", 10)]).run();
    const lines: string[] = [];
    await removeImagesBeyondRetention(context(2), "app_1", (line) => lines.push(line));
    expect(removed.sort()).toEqual([image("b1"), image("b2")]);
    expect(kept()).toEqual({ b1: false, b2: false, r1: false, b3: true, b4: true });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain("newest 2 builds are kept for rollbacks");

    // Nothing left to remove: the next release asks the engine for nothing.
    await removeImagesBeyondRetention(context(2), "app_1", () => {});
    expect(removed).toHaveLength(2);
  });

  test("the builds say an image is gone before the engine is asked to remove it: a rollback meanwhile does not release it", async () => {
    db.insert(builds).values([build("b1", 40), build("r1", 25, { trigger: "rollback", rollbackOf: "b1", image: image("b1") }), build("b4", 10)]).run();
    const removal = removeImagesBeyondRetention(context(1), "app_1", () => {});
    // Before the first await ends, as a rollback request would read them.
    expect(kept()).toEqual({ b1: false, r1: false, b4: true });
    await removal;
    expect(keptDuringRemoval).toEqual({ [image("b1")]: false });
    expect(removed).toEqual([image("b1")]);
  });

  test("an image the engine refuses to remove stays marked kept, and is tried again next time", async () => {
    db.insert(builds).values([build("b1", 40), build("b2", 30), build("b4", 10)]).run();
    refused.add(image("b1"));
    await removeImagesBeyondRetention(context(1), "app_1", () => {});
    expect(keptDuringRemoval[image("b1")]).toBe(false);
    expect(kept()).toEqual({ b1: true, b2: false, b4: true });
    refused.clear();
    await removeImagesBeyondRetention(context(1), "app_1", () => {});
    expect(kept()).toEqual({ b1: false, b2: false, b4: true });
  });
});
