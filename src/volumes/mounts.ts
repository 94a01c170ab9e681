// The mounts of an app's container: its volumes, each made on first use as a named engine volume
// on the app's machine. A new volume is empty and root-owned; when the app runs as a user of its
// own (PLATFORM_APP_USER), a one-shot container, root with only CHOWN and no network, gives the
// volume's top folder to that user first, so the app can write into it. It runs a platform image
// the machine has (never the app's, which could replace chown) when the user is numeric; a user
// named by the image can only be resolved in the app's own image, still without network.
import { eq } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { volumes } from "../db/schema";
import type { DockerDriver } from "../docker/driver";
import { LABEL_APP, LABEL_MANAGED, LABEL_WORKSPACE, type ContainerSpec } from "../docker/container-spec";
import { randomBase62 } from "../crypto/tokens";
import { ApiError } from "../http/errors";
import type { VolumeRow } from "./service";

export const LABEL_VOLUME = "platform.volume";
/** The longest the ownership step may take before the release fails. */
const PREPARE_TIMEOUT_MS = 30_000;
/** How long a start waits for another app's container (one it was detached from, still stopping) to let go of a volume. */
const IN_USE_WAIT_MS = 15_000;
/** uid or uid:gid. */
const NUMERIC_USER = /^\d+(:\d+)?$/;

interface MountedApp {
  id: string;
  workspaceId: string;
  machineId: string;
}

/**
 * What of the app's mounts goes into its containers' settings digest (src/apps/deployer.ts), so a
 * restart a crash cut short is made at start: nothing for an app without volumes, whose digest
 * stays what it was before volumes existed.
 */
export function mountsDigested(db: PlatformDb, appId: string): { volumes?: [string, string, string][] } {
  const rows = db.select({ id: volumes.id, mountPath: volumes.mountPath, engineVolumeName: volumes.engineVolumeName }).from(volumes).where(eq(volumes.appId, appId)).orderBy(volumes.id).all();
  // The engine volume too: a container on the one a restore swapped out is stale.
  return rows.length ? { volumes: rows.map((row) => [row.id, row.mountPath, row.engineVolumeName]) } : {};
}

/**
 * The container's `volumes`; fails the release (409 VOLUME_ON_OTHER_MACHINE) for a volume on another
 * machine, and (409 VOLUME_IN_USE, after waiting `inUseWaitMs`) for one a running container of
 * another app still mounts: two apps never write one volume at once.
 */
export async function appVolumeMounts(
  db: PlatformDb,
  driver: DockerDriver,
  app: MountedApp,
  image: string,
  user: string | undefined,
  { inUseWaitMs = IN_USE_WAIT_MS, helperImages = [] as string[] } = {},
): Promise<NonNullable<ContainerSpec["volumes"]>> {
  const rows = db.select().from(volumes).where(eq(volumes.appId, app.id)).all();
  const mounts: NonNullable<ContainerSpec["volumes"]> = [];
  for (const row of rows) {
    if (row.machineId !== driver.machineId) {
      throw new ApiError("VOLUME_ON_OTHER_MACHINE", `volume '${row.name}' is on machine '${row.machineId}', the app on '${driver.machineId}'`);
    }
    if (await driver.hasVolume(row.engineVolumeName)) {
      if (row.engineVolumeMadeAt === null) recordMade(db, row);
      await waitUntilNoOtherAppUses(driver, app, row, inUseWaitMs);
    } else if (row.engineVolumeMadeAt !== null) {
      // Removed behind the platform's back (or its engine lost it): starting on an empty folder would look like data loss to the app.
      throw new ApiError("VOLUME_MISSING", `volume '${row.name}' is gone from the engine (${row.engineVolumeName}); restore it from a backup, or remove it from the app's volumes to start without it`);
    } else {
      await makeVolume(driver, app, row, image, user, helperImages);
      recordMade(db, row);
    }
    mounts.push({ volumeName: row.engineVolumeName, containerPath: row.mountPath });
  }
  return mounts;
}

function recordMade(db: PlatformDb, row: VolumeRow) {
  db.update(volumes).set({ engineVolumeMadeAt: Date.now() }).where(eq(volumes.id, row.id)).run();
}

async function waitUntilNoOtherAppUses(driver: DockerDriver, app: MountedApp, row: VolumeRow, waitMs: number) {
  for (const deadline = Date.now() + waitMs; ; await Bun.sleep(250)) {
    const other = (await driver.containersUsingVolume(row.engineVolumeName)).find((container) => container.running && container.labels[LABEL_APP] !== app.id);
    if (!other) return;
    if (Date.now() >= deadline) throw new ApiError("VOLUME_IN_USE", `volume '${row.name}' is still mounted by a running container of another app (${other.name}); the app it was detached from must stop it first`);
  }
}

async function makeVolume(driver: DockerDriver, app: MountedApp, row: VolumeRow, image: string, user: string | undefined, helperImages: string[]) {
  const labels = { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: app.workspaceId, [LABEL_APP]: app.id, [LABEL_VOLUME]: row.id };
  await driver.createVolume(row.engineVolumeName, labels);
  if (!user) return;
  // A volume left root-owned would never be chowned later (it exists): it goes, and the next start makes it again.
  await giveToUser(driver, app, row, await chownImage(driver, image, user, helperImages), user).catch(async (error) => {
    await driver.removeVolume(row.engineVolumeName).catch(() => {});
    throw error;
  });
}

/** A platform image the machine has for a numeric user (its chown needs no name lookup), else the app's own. */
async function chownImage(driver: DockerDriver, appImage: string, user: string, helperImages: string[]): Promise<string> {
  if (!NUMERIC_USER.test(user)) return appImage;
  for (const image of helperImages) if (await driver.hasImage(image)) return image;
  return appImage;
}

async function giveToUser(driver: DockerDriver, app: MountedApp, row: VolumeRow, image: string, user: string) {
  const id = await driver.createContainer({
    name: `platform-volume-owner-${row.id.toLowerCase()}-${randomBase62(6).toLowerCase()}`,
    image,
    entrypoint: ["chown", user, row.mountPath],
    command: [],
    // Not labelled with the app: the reconciler reports it at most, and it is removed below.
    labels: { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: app.workspaceId, [LABEL_VOLUME]: row.id },
    memoryMB: 64,
    cpus: 0.5,
    pidsLimit: 16,
    network: { name: "none", aliases: [] },
    user: "0:0",
    capabilities: ["CHOWN"],
    volumes: [{ volumeName: row.engineVolumeName, containerPath: row.mountPath }],
    keepLogs: false,
  });
  try {
    await driver.startContainer(id);
    const exit = await Promise.race([driver.waitForExit(id), Bun.sleep(PREPARE_TIMEOUT_MS).then(() => null)]);
    if (exit?.exitCode !== 0) throw new ApiError("INTERNAL_ERROR", `could not give volume '${row.name}' to user ${user} (${exit ? `chown exited with ${exit.exitCode}` : "timed out"})`);
  } finally {
    await driver.removeContainer(id).catch(() => {});
  }
}
