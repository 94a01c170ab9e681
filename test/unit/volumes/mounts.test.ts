// The mounts of an app's container against an engine double: a volume another app's running
// container still mounts is refused (after a bounded wait) rather than shared by two writers; the
// volumes an old container mounts that its app no longer lists are told apart for a stop-first release.
import { beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openDatabase, type PlatformDb } from "../../../src/db";
import { apps, volumes as volumeRows, workspaces } from "../../../src/db/schema";
import type { DockerDriver } from "../../../src/docker/driver";
import type { ContainerSpec } from "../../../src/docker/container-spec";
import { Machines } from "../../../src/machines/service";
import { WorkspaceDisk } from "../../../src/quotas/usage";
import { Volumes, volumesLeaving } from "../../../src/volumes/service";
import { appVolumeMounts, mountsDigested } from "../../../src/volumes/mounts";
import { tempDir } from "../../helpers/temp";

let db: PlatformDb;
let volumes: Volumes;
/** The containers the double's engine says mount each volume. */
let users: Record<string, { id: string; name: string; running: boolean; image: string; labels: Record<string, string> }[]>;
const driver = {
  machineId: "local",
  hasVolume: async () => true,
  containersUsingVolume: async (name: string) => users[name] ?? [],
} as unknown as DockerDriver;
const app = { id: "app_2", workspaceId: "ws_1", machineId: "local" };

function addApp(id: string) {
  db.insert(apps)
    .values({ id, workspaceId: "ws_1", name: id.replace("_", "-"), runtime: "node", status: "running", memoryMB: 64, startupCommand: "auto", autoRestart: true, autoDeploy: false, machineId: "local", createdAt: 0, updatedAt: 0 })
    .run();
}

beforeEach(() => {
  db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  volumes = new Volumes(db, new Machines(new Map([["local", driver]])), new WorkspaceDisk(), 60, () => 10_240);
  addApp("app_1");
  addApp("app_2");
  users = {};
});

const container = (appId: string, running: boolean) => ({ id: `c-${appId}`, name: `app-${appId}`, running, image: "x", labels: { "platform.app": appId } });

describe("a volume detached from one app and attached to another", () => {
  test("is not mounted while a running container of the app it left still uses it", async () => {
    volumes.plan({ workspaceId: "ws_1", appId: "app_1", machineId: "local", runtime: "node" }, [{ name: "data", mountPath: "/app/data" }]).apply("app_1");
    const [row] = volumes.ofApp("app_1");
    volumes.plan({ workspaceId: "ws_1", appId: "app_1", machineId: "local", runtime: "node" }, []).apply("app_1");
    volumes.plan({ workspaceId: "ws_1", appId: "app_2", machineId: "local", runtime: "node" }, [{ name: "data", mountPath: "/app/data" }]).apply("app_2");

    users[row!.engineVolumeName] = [container("app_1", true)];
    const refused = await appVolumeMounts(db, driver, app, "image", undefined, { inUseWaitMs: 300 }).catch((error) => error);
    expect(refused.code).toBe("VOLUME_IN_USE");

    // Its own old container, or a stopped one of another app, is no second writer.
    users[row!.engineVolumeName] = [container("app_2", true), container("app_1", false)];
    expect(await appVolumeMounts(db, driver, app, "image", undefined, { inUseWaitMs: 300 })).toEqual([{ volumeName: row!.engineVolumeName, containerPath: "/app/data" }]);
  });

  test("the old container's volumes the app no longer lists are leaving", () => {
    const owner = { workspaceId: "ws_1", appId: "app_1", machineId: "local", runtime: "node" };
    volumes.plan(owner, [{ name: "data", mountPath: "/app/data" }, { name: "kept", mountPath: "/srv" }]).apply("app_1");
    const names = volumes.ofApp("app_1").map((row) => row.engineVolumeName);
    expect(volumesLeaving(db, "app_1", [...names, "someone-elses"])).toEqual([]);
    volumes.plan(owner, [{ name: "kept", mountPath: "/srv" }]).apply("app_1");
    expect(volumesLeaving(db, "app_1", names)).toEqual(["data"]);
  });
});

describe("a new volume given to the app's user", () => {
  /** An engine double without the volume: it records the helper container it is asked for. */
  function freshEngine(images: string[]) {
    const made: ContainerSpec[] = [];
    const engine = {
      machineId: "local",
      hasVolume: async () => false,
      createVolume: async () => {},
      removeVolume: async () => true,
      hasImage: async (image: string) => images.includes(image),
      createContainer: async (spec: ContainerSpec) => (made.push(spec), spec.name),
      startContainer: async () => {},
      waitForExit: async () => ({ exitCode: 0, outOfMemory: false }),
      removeContainer: async () => {},
    } as unknown as DockerDriver;
    return { engine, made };
  }

  test("is chowned from a platform image without network and within limits, never by the app's image", async () => {
    volumes.plan({ workspaceId: "ws_1", appId: "app_2", machineId: "local", runtime: "image" }, [{ name: "data", mountPath: "/data" }]).apply("app_2");
    const { engine, made } = freshEngine(["node:22", "busybox-stand-in"]);
    await appVolumeMounts(db, engine, app, "ghcr.io/someone/distroless:1", "1000:1000", { helperImages: ["python:3", "node:22"] });
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({ image: "node:22", entrypoint: ["chown", "1000:1000", "/data"], user: "0:0", capabilities: ["CHOWN"], network: { name: "none" }, cpus: 0.5, memoryMB: 64, pidsLimit: 16 });
  });

  test("a user named by the image is chowned in the app's image, still without network", async () => {
    volumes.plan({ workspaceId: "ws_1", appId: "app_2", machineId: "local", runtime: "image" }, [{ name: "data", mountPath: "/data" }]).apply("app_2");
    const { engine, made } = freshEngine(["node:22"]);
    await appVolumeMounts(db, engine, app, "ghcr.io/someone/app:1", "node", { helperImages: ["node:22"] });
    expect(made[0]).toMatchObject({ image: "ghcr.io/someone/app:1", network: { name: "none" } });
  });
});

test("a container on the engine volume a restore swapped out is stale: the engine volume is in the settings digest", () => {
  volumes.plan({ workspaceId: "ws_1", appId: "app_1", machineId: "local", runtime: "node" }, [{ name: "data", mountPath: "/app/data" }]).apply("app_1");
  const before = JSON.stringify(mountsDigested(db, "app_1"));
  db.update(volumeRows).set({ engineVolumeName: "platform-volume-restored" }).run();
  expect(JSON.stringify(mountsDigested(db, "app_1"))).not.toBe(before);
});

test("a volume once made and gone from the engine fails the start (VOLUME_MISSING) rather than coming back empty", async () => {
  volumes.plan({ workspaceId: "ws_1", appId: "app_2", machineId: "local", runtime: "node" }, [{ name: "data", mountPath: "/app/data" }]).apply("app_2");
  let onEngine = false;
  const made: string[] = [];
  const engine = {
    machineId: "local",
    hasVolume: async () => onEngine,
    createVolume: async (name: string) => void made.push(name),
    containersUsingVolume: async () => [],
  } as unknown as DockerDriver;
  await appVolumeMounts(db, engine, app, "image", undefined);
  expect(made).toHaveLength(1);
  expect(volumes.ofApp("app_2")[0]!.engineVolumeMadeAt).not.toBeNull();

  const refused = await appVolumeMounts(db, engine, app, "image", undefined).catch((error) => error);
  expect(refused.code).toBe("VOLUME_MISSING");
  expect(made).toHaveLength(1);

  // One made before the record existed is recorded the first time it is seen.
  db.update(volumeRows).set({ engineVolumeMadeAt: null }).run();
  onEngine = true;
  await appVolumeMounts(db, engine, app, "image", undefined);
  expect(volumes.ofApp("app_2")[0]!.engineVolumeMadeAt).not.toBeNull();
});
