// A volume restore with the app that mounts it, on the real engine (the services made directly,
// the app's stop and start stood in for by a plain container labelled as the app's): the app is
// stopped before the content changes and started again on the restored volume; a restore that
// fails leaves the old content in use, removes its half-made volume and starts the app again; and
// none begins while the app is being deployed.
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { eq } from "drizzle-orm";
import { loadConfig } from "../../../src/config";
import { openDatabase, type PlatformDb } from "../../../src/db";
import { apps, volumeBackups, volumes, workspaces } from "../../../src/db/schema";
import { Machines } from "../../../src/machines/service";
import { WorkspaceDisk } from "../../../src/quotas/usage";
import { BackupStorage } from "../../../src/backups/storage";
import { BackupFiles } from "../../../src/backups/files";
import { Volumes } from "../../../src/volumes/service";
import { VolumeBackups } from "../../../src/volumes/backups";
import { VolumeRestores, type VolumeApps } from "../../../src/volumes/backup-restore";
import { dockerCli, localDriver, uniqueName } from "../../helpers/docker";
import { sha256Hex } from "../../helpers/backups";
import { engineVolumeExists, inVolume, inventory, removeEngineVolumes, writeTree } from "../../helpers/volume-backups";
import { tempDir } from "../../helpers/temp";

// Set here too: in a run of several files the preload's timeout does not reach every file's tests.
setDefaultTimeout(120_000);

const workspaceId = `ws_${uniqueName("vrestore").replaceAll("-", "")}`;
const volumeId = `vol_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
let db: PlatformDb;
let backups: VolumeBackups;
let restores: VolumeRestores;
/** What the stand-in app was asked, and whether its container ran when the volume changed. */
const asked: string[] = [];
let appContainer = "";
let appStatus = "running";

function currentEngineVolume(): string {
  return db.select().from(volumes).where(eq(volumes.id, volumeId)).get()!.engineVolumeName;
}

/** The app's container: labelled as the app's, mounting what the volume's record names now. */
async function runAppContainer() {
  appContainer = uniqueName("vrestore-app");
  await dockerCli("run", "-d", "--name", appContainer, "--network", "none", "--label", "platform.managed=true", "--label", `platform.workspace=${workspaceId}`, "--label", "platform.app=app_1", "--label", `platform.volume=${volumeId}`, "-v", `${currentEngineVolume()}:/data`, "platform-test/base:latest", "sleep", "300");
}

// As the apps service does it: stop answers at once and the container stops in the background;
// start releases a new container (with the volume as recorded now) and removes the old one.
const standInApp: VolumeApps = {
  statusOf: () => appStatus,
  stop: () => {
    asked.push("stop");
    void dockerCli("stop", "-t", "1", appContainer);
  },
  start: () => {
    asked.push("start");
    const old = appContainer;
    void runAppContainer().then(() => dockerCli("rm", "-f", old));
  },
};

beforeAll(async () => {
  db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: workspaceId, name: "restores", createdAt: 0 }).run();
  db.insert(apps).values({ id: "app_1", workspaceId, name: "app", runtime: "node", status: "running", memoryMB: 64, startupCommand: "auto", autoRestart: true, autoDeploy: false, machineId: "local", createdAt: 0, updatedAt: 0 }).run();
  const engineVolumeName = `platform-volume-${volumeId}`;
  await dockerCli("volume", "create", "--label", "platform.managed=true", "--label", `platform.workspace=${workspaceId}`, "--label", `platform.volume=${volumeId}`, engineVolumeName);
  db.insert(volumes).values({ id: volumeId, workspaceId, name: "data", appId: "app_1", mountPath: "/data", machineId: "local", engineVolumeName, createdAt: 0, updatedAt: 0 }).run();
  await writeTree(engineVolumeName);
  const config = loadConfig({ ...process.env, PLATFORM_DATA_DIR: tempDir() });
  const storage = new BackupStorage(join(config.dataDir, "backups"));
  const machines = new Machines(new Map([["local", localDriver()]]));
  const disk = new WorkspaceDisk();
  const volumeRecords = new Volumes(db, machines, disk, config.volumeSizeRefreshSeconds, () => config.quotas.diskMB);
  backups = new VolumeBackups({ db, machines, config, files: new BackupFiles(storage, null), disk, volumes: volumeRecords });
  restores = new VolumeRestores(backups, standInApp);
  await runAppContainer();
});

afterAll(async () => {
  if (appContainer) await dockerCli("rm", "-f", appContainer).catch(() => undefined);
  await removeEngineVolumes(volumeId);
});

test("the app is stopped while its volume is replaced, then runs on the restored content; the old volume goes", async () => {
  const backup = await backups.begin(db.select().from(volumes).where(eq(volumes.id, volumeId)).get()!, "manual").done;
  expect(backup.status).toBe("completed");
  const original = await inventory(currentEngineVolume());
  await inVolume(currentEngineVolume(), "cd /data; printf changed > a/b/c/hello.txt; rm -r a/b/c; touch new");
  const replaced = currentEngineVolume();

  const { restore, done } = await restores.restore(workspaceId, volumeId, backup.id, { type: "user", id: "usr_1" });
  await done;
  expect(restores.get(workspaceId, volumeId, restore.id)).toMatchObject({ status: "succeeded", stoppedAppId: "app_1", error: null });
  expect(asked).toEqual(["stop", "start"]);
  const now = currentEngineVolume();
  expect(now).not.toBe(replaced);
  expect(await inventory(now)).toBe(original);
  // The app's new container mounts the restored volume, and the old volume was removed once the old container was gone.
  const mounted = JSON.parse(await dockerCli("inspect", "--format", "{{json .Mounts}}", appContainer));
  expect(mounted.map((mount: { Name: string }) => mount.Name)).toEqual([now]);
  expect(await engineVolumeExists(replaced)).toBe(false);
});

test("a restore whose archive the engine refuses fails: the old content stays in use, the half-made volume is removed, the app starts again", async () => {
  asked.length = 0;
  const volume = db.select().from(volumes).where(eq(volumes.id, volumeId)).get()!;
  const before = await inventory(volume.engineVolumeName);
  // A backup whose file is whole (its checksum matches) but holds no tar.
  const made = await backups.begin(volume, "manual").done;
  const junk = gzipSync(Buffer.from("this is not a tar archive ".repeat(100)));
  await Bun.write(backups.files.storage.pathOf(db.select().from(volumeBackups).where(eq(volumeBackups.id, made.id)).get()!.storageKey), junk);
  db.update(volumeBackups).set({ sizeBytes: junk.byteLength, sha256: sha256Hex(junk) }).where(eq(volumeBackups.id, made.id)).run();

  const { restore, done } = await restores.restore(workspaceId, volumeId, made.id, { type: "user", id: "usr_1" });
  await done.catch(() => undefined);
  const failed = restores.get(workspaceId, volumeId, restore.id);
  expect(failed.status).toBe("failed");
  expect(failed.error).toContain("the volume keeps its old content");
  expect(asked).toEqual(["stop", "start"]);
  expect(currentEngineVolume()).toBe(volume.engineVolumeName);
  expect(await inventory(volume.engineVolumeName)).toBe(before);
  expect(await engineVolumeExists(`platform-volume-${volumeId}-${restore.id}`)).toBe(false);
});

test("while the app is being deployed, a restore is refused (409 BUSY) and nothing is stopped", async () => {
  asked.length = 0;
  const backup = db.select().from(volumeBackups).where(eq(volumeBackups.status, "completed")).get()!;
  appStatus = "building";
  try {
    const refusal = await restores.restore(workspaceId, volumeId, backup.id, { type: "user", id: "usr_1" }).catch((error) => error);
    expect(refusal.code).toBe("BUSY");
    expect(refusal.message).toContain("building");
    expect(asked).toEqual([]);
  } finally {
    appStatus = "running";
  }
});
