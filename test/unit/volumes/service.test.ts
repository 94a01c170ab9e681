// The volume records on a real SQLite file with two machines whose engines are never called:
// a list makes, keeps, re-attaches and detaches volumes by name; a volume mounted in another app
// or kept on another machine is refused; an app without a machine of its own goes where its
// volumes are; the default release strategy follows the volumes.
import { beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openDatabase, type PlatformDb } from "../../../src/db";
import { apps, volumes as volumeRows, workspaces } from "../../../src/db/schema";
import type { DockerDriver } from "../../../src/docker/driver";
import { ApiError } from "../../../src/http/errors";
import { Machines } from "../../../src/machines/service";
import { WorkspaceDisk } from "../../../src/quotas/usage";
import { releaseStrategyOf, Volumes } from "../../../src/volumes/service";
import { appVolumeMounts } from "../../../src/volumes/mounts";
import { deleteWorkspace } from "../../../src/organization/members";
import { tempDir } from "../../helpers/temp";
import { errorCodeOf } from "./error-code";

let db: PlatformDb;
let volumes: Volumes;
const driverOf = (machineId: string) => ({ machineId }) as unknown as DockerDriver;
const machines = new Machines(new Map([["local", driverOf("local")], ["far", driverOf("far")]]));

function addApp(id: string, machineId = "local") {
  db.insert(apps)
    .values({ id, workspaceId: "ws_1", name: id.replace("_", "-"), runtime: "node", status: "running", memoryMB: 64, startupCommand: "auto", autoRestart: true, autoDeploy: false, machineId, createdAt: 0, updatedAt: 0 })
    .run();
}

const owner = (appId: string, machineId = "local") => ({ workspaceId: "ws_1", appId, machineId, runtime: "node" });

beforeEach(() => {
  db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  volumes = new Volumes(db, machines, new WorkspaceDisk(), 60, () => 10_240);
  addApp("app_1");
  addApp("app_2");
});

describe("an app's volume list", () => {
  test("a new name makes a volume on the app's machine; leaving it out detaches it; listing it again re-attaches the same one", () => {
    const made = volumes.plan(owner("app_1"), [{ name: "data", mountPath: "/app/data/" }]);
    expect(made.addsVolume).toBe(true);
    expect(made.apply("app_1")).toBe(true);
    const [row] = volumes.ofApp("app_1");
    expect(row).toMatchObject({ name: "data", mountPath: "/app/data", machineId: "local", appId: "app_1", engineVolumeName: `platform-vol-${row!.id.toLowerCase()}` });

    const same = volumes.plan(owner("app_1"), [{ name: "data", mountPath: "/app/data" }]);
    expect([same.addsVolume, same.apply("app_1")]).toEqual([false, false]);

    expect(volumes.plan(owner("app_1"), []).apply("app_1")).toBe(true);
    expect(volumes.ofApp("app_1")).toEqual([]);
    expect(volumes.list("ws_1")).toMatchObject([{ id: row!.id, appId: null, mountPath: "/app/data" }]);

    const again = volumes.plan(owner("app_2"), [{ name: "data", mountPath: "/srv" }]);
    expect(again.addsVolume).toBe(true);
    again.apply("app_2");
    expect(volumes.ofApp("app_2")).toMatchObject([{ id: row!.id, mountPath: "/srv" }]);
  });

  test("a volume another app mounts is refused, and nothing is written", () => {
    volumes.plan(owner("app_1"), [{ name: "data", mountPath: "/app/data" }]).apply("app_1");
    expect(errorCodeOf(() => volumes.plan(owner("app_2"), [{ name: "data", mountPath: "/app/data" }]))).toBe("VOLUME_ATTACHED");
    const attached = volumes.list("ws_1")[0]!;
    expect(errorCodeOf(() => volumes.withAttached({ id: "app_2" }, attached, undefined))).toBe("VOLUME_ATTACHED");
    expect(volumes.ofApp("app_2")).toEqual([]);
  });

  test("a volume lives on one machine: an app elsewhere cannot mount it, and an app placed without a machine goes to it", async () => {
    volumes.plan(owner("app_1"), [{ name: "data", mountPath: "/app/data" }]).apply("app_1");
    db.update(volumeRows).set({ machineId: "far", appId: null }).run();
    expect(errorCodeOf(() => volumes.plan(owner("app_2", "local"), [{ name: "data", mountPath: "/app/data" }]))).toBe("VOLUME_ON_OTHER_MACHINE");
    expect(volumes.machineOfVolumes("ws_1", [{ name: "data", mountPath: "/x" }])).toBe("far");
    expect(volumes.machineOfVolumes("ws_1", [{ name: "new", mountPath: "/x" }])).toBeUndefined();
    expect(volumes.machineOfVolumes("ws_1", undefined)).toBeUndefined();

    // A row moved behind the platform's back still never mounts on the wrong engine.
    db.update(volumeRows).set({ appId: "app_1" }).run();
    const refused = await appVolumeMounts(db, driverOf("local"), { id: "app_1", workspaceId: "ws_1", machineId: "local" }, "image", undefined).catch((error) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused.code).toBe("VOLUME_ON_OTHER_MACHINE");
  });

  test("the release strategy defaults to stop-first with volumes, start-first without; an app's own choice wins", () => {
    expect(releaseStrategyOf(db, { id: "app_1", releaseStrategy: null })).toBe("start-first");
    volumes.plan(owner("app_1"), [{ name: "data", mountPath: "/app/data" }]).apply("app_1");
    expect(releaseStrategyOf(db, { id: "app_1", releaseStrategy: null })).toBe("stop-first");
    expect(releaseStrategyOf(db, { id: "app_1", releaseStrategy: "start-first" })).toBe("start-first");
  });

  test("volumes count against the disk quota at their measured size", async () => {
    const disk = new WorkspaceDisk();
    const measured = new Volumes(db, machines, disk, 60, () => 1);
    measured.plan(owner("app_1"), [{ name: "data", mountPath: "/app/data" }]).apply("app_1");
    db.update(volumeRows).set({ sizeBytes: 2 * 1024 * 1024, sizeMeasuredAt: Date.now() }).run();
    expect((await disk.bytesByKind("ws_1")).volumes).toBe(2 * 1024 * 1024);
    const adding = measured.plan(owner("app_1"), [{ name: "data", mountPath: "/app/data" }, { name: "more", mountPath: "/srv" }]);
    const refused = await measured.assertRoom("ws_1", adding).catch((error) => error);
    expect(refused.code).toBe("QUOTA_EXCEEDED");
    // Keeping what it has is no growth: never refused.
    expect(await measured.assertRoom("ws_1", measured.plan(owner("app_1"), [{ name: "data", mountPath: "/app/data" }]))).toBeUndefined();
  });
});

test("a workspace keeping a detached volume is not deleted: its data would lose its only record", () => {
  volumes.plan(owner("app_1"), [{ name: "data", mountPath: "/app/data" }]).apply("app_1");
  db.delete(apps).run();
  expect(volumes.list("ws_1")).toMatchObject([{ name: "data", appId: null }]);
  expect(errorCodeOf(() => deleteWorkspace(db, "ws_1"))).toBe("WORKSPACE_NOT_EMPTY");
});
