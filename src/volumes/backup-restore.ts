// Restoring a volume from one of its backups, as a `restore` with a status. The backup's file is
// checked before anything is touched (whole, its SHA-256 the one recorded). Then, in the background:
// the app that mounts the volume is stopped, a `pre-restore` backup of the old content is made, the
// archive is extracted by the engine into a NEW engine volume (a helper container that mounts it;
// the platform never writes paths of the archive itself), and only then is the volume's record
// swapped to the new engine volume and the app started again. The old engine volume is removed
// once the swap is recorded and nothing mounts it any more.
//
// A failed restore removes the half-made volume and starts the app again on the old content,
// untouched. One cut off by a crash or kill is settled at the next start: before the swap was
// recorded, the half-made volume is removed and the old content stays in use; after, the restored
// content is in use and the old volume is removed.
import { and, desc, eq, inArray, isNull, ne } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import { volumeRestores, volumes } from "../db/schema";
import { newId } from "../crypto/tokens";
import { ApiError, notFound } from "../http/errors";
import { LABEL_APP, LABEL_MANAGED, LABEL_WORKSPACE } from "../docker/container-spec";
import type { DockerDriver } from "../docker/driver";
import { pauseForTest } from "../config/test-pause";
import { localImageFor, MOUNT_PATH, withVolumeMounted, ioContainerNameOf, type VolumeBackupRow, type VolumeBackups } from "./backups";
import type { VolumeRow } from "./service";
import { LABEL_VOLUME } from "./mounts";
import type { VolumeRestoreSchema } from "./backup-model";

export type VolumeRestoreRow = typeof volumeRestores.$inferSelect;
export type VolumeRestoreView = Static<typeof VolumeRestoreSchema>;

/** How the restore stops and starts the app that mounts the volume (src/apps). */
export interface VolumeApps {
  /** The app's status (src/apps/model.ts), null when it is gone. */
  statusOf(appId: string): string | null;
  stop(workspaceId: string, appId: string): void;
  start(workspaceId: string, appId: string): void;
}

/** An app in these is not started again after a restore (unless a container of it was running). */
const DOWN_STATUSES = new Set(["stopped", "stopping", "failed", "crashed"]);
/** An app in these is changing: a stop would cancel the deploy or race the delete. */
const CHANGING_STATUSES = new Set(["building", "deleting"]);

/** How long the app's container may take to stop (its own stop timeout is 10 s). */
const STOP_WAIT_MS = 60_000;
/** How long the old volume's removal waits for the app's old container to go after the swap. */
const RELEASE_WAIT_MS = 60_000;
const POLL_MS = 250;
const INTERRUPTED = "interrupted: the platform stopped while this restore ran";

function restoreView(row: VolumeRestoreRow): VolumeRestoreView {
  return {
    id: row.id,
    volumeId: row.volumeId,
    backupId: row.backupId,
    status: row.status as VolumeRestoreView["status"],
    error: row.error,
    actor: { type: row.actorType, id: row.actorId },
    stoppedAppId: row.stoppedAppId,
    startedAt: new Date(row.startedAt).toISOString(),
    finishedAt: row.finishedAt === null ? null : new Date(row.finishedAt).toISOString(),
  };
}

export class VolumeRestores {
  constructor(
    private readonly backups: VolumeBackups,
    private readonly apps: VolumeApps,
  ) {}

  private get db() {
    return this.backups.db;
  }

  private driverOf(volume: { machineId: string }): DockerDriver {
    return this.backups.driverOf(volume.machineId);
  }

  list(workspaceId: string, volumeId: string): VolumeRestoreView[] {
    this.backups.volume(workspaceId, volumeId);
    return this.db.select().from(volumeRestores).where(eq(volumeRestores.volumeId, volumeId)).orderBy(desc(volumeRestores.startedAt)).all().map(restoreView);
  }

  get(workspaceId: string, volumeId: string, restoreId: string): VolumeRestoreView {
    this.backups.volume(workspaceId, volumeId);
    const row = this.db.select().from(volumeRestores).where(and(eq(volumeRestores.id, restoreId), eq(volumeRestores.volumeId, volumeId))).get();
    if (!row) throw notFound("Restore");
    return restoreView(row);
  }

  /**
   * Begins the restore of a completed backup of this volume once its file checks out (422
   * BACKUP_CORRUPT otherwise); 409 while another restore or a backup of the volume runs, or while a
   * container that is not its app's runs with it mounted (VOLUME_IN_USE).
   */
  async restore(workspaceId: string, volumeId: string, backupId: string, actor: { type: string; id: string | null }): Promise<{ restore: VolumeRestoreView; done: Promise<unknown> }> {
    const backup = this.backups.row(workspaceId, volumeId, backupId);
    if (backup.status !== "completed") throw new ApiError("BACKUP_NOT_READY", `The backup is ${backup.status}; only a completed backup can be restored`);
    await this.backups.files.ensureLocal(backup);
    const problem = await this.backups.files.storage.problemWith(backup.storageKey, backup.sizeBytes, backup.sha256);
    if (problem) throw new ApiError("BACKUP_CORRUPT", `The backup cannot be restored: ${problem}. Nothing was changed`);
    const volume = this.backups.volume(workspaceId, volumeId);
    const running = (await this.driverOf(volume).containersUsingVolume(volume.engineVolumeName)).filter((container) => container.running);
    const foreign = running.filter((container) => !this.isAppContainer(volume, container.labels));
    if (foreign.length) {
      throw new ApiError("VOLUME_IN_USE", `The volume is mounted by running containers that are not its app's (${foreign.map((container) => container.name).join(", ")}); stop them first`);
    }
    // Nothing awaited from here until the restore is recorded: two requests cannot both pass.
    const appStatus = volume.appId ? this.apps.statusOf(volume.appId) : null;
    if (appStatus && CHANGING_STATUSES.has(appStatus)) throw new ApiError("BUSY", `The app that mounts the volume is ${appStatus}; restore once it has finished`);
    if (this.backups.restoring.has(volume.id)) throw new ApiError("BUSY", "A restore of this volume is running already; try again when it has finished");
    if (this.backups.deps.volumes.isDeleting(volume.id)) throw new ApiError("BUSY", "The volume is being deleted");
    this.backups.assertNoBackupRunning(volume.id);
    this.backups.restoring.add(volume.id);
    const id = newId("vrs");
    const row: VolumeRestoreRow = {
      id,
      volumeId: volume.id,
      workspaceId: volume.workspaceId,
      backupId: backup.id,
      status: "pending",
      error: null,
      actorType: actor.type,
      actorId: actor.id,
      previousEngineVolumeName: volume.engineVolumeName,
      newEngineVolumeName: `platform-volume-${volume.id}-${id}`,
      stoppedAppId: null,
      previousRemovedAt: null,
      startedAt: this.backups.now(),
      finishedAt: null,
    };
    this.db.insert(volumeRestores).values(row).run();
    const appIsUp = appStatus !== null && (!DOWN_STATUSES.has(appStatus) || running.length > 0);
    const done = this.run(volume, backup, row, appIsUp).finally(() => this.backups.restoring.delete(volume.id));
    this.backups.track(done);
    return { restore: restoreView(row), done };
  }

  private isAppContainer(volume: VolumeRow, labels: Record<string, string>): boolean {
    return volume.appId !== null && labels[LABEL_APP] === volume.appId;
  }

  private mark(restoreId: string, changes: Partial<VolumeRestoreRow>) {
    const finished = changes.status === "succeeded" || changes.status === "failed";
    this.db.update(volumeRestores).set({ ...changes, ...(finished ? { finishedAt: this.backups.now() } : {}) }).where(eq(volumeRestores.id, restoreId)).run();
  }

  private async run(volume: VolumeRow, backup: VolumeBackupRow, row: VolumeRestoreRow, appIsUp: boolean) {
    const driver = this.driverOf(volume);
    this.mark(row.id, { status: "running" });
    let swapped = false;
    let stoppedAppId: string | null = null;
    try {
      if (volume.appId && appIsUp) {
        stoppedAppId = volume.appId;
        this.mark(row.id, { stoppedAppId });
        this.apps.stop(volume.workspaceId, volume.appId);
      }
      await this.waitUntilUnmounted(driver, volume.engineVolumeName, (container) => container.running, STOP_WAIT_MS, "the app's container did not stop");
      const before = await this.backups.begin(volume, "pre-restore", undefined, row.id, { duringRestore: true }).done;
      if (before.status !== "completed") throw new Error(`the pre-restore backup of the old content failed: ${before.error}`);
      await this.extractInto(driver, volume, backup, row);
      await pauseForTest("volume-restore.extracted");
      swapped = this.swap(volume, row);
      if (!swapped) throw new Error("the volume was changed meanwhile (another restore, or it was deleted)");
      await pauseForTest("volume-restore.swapped");
      if (stoppedAppId) this.apps.start(volume.workspaceId, stoppedAppId);
      this.mark(row.id, { status: "succeeded" });
    } catch (error) {
      const reason = (error as Error).message || String(error);
      if (!swapped) await this.removeHalfMade(driver, row);
      if (stoppedAppId) this.startAgain(volume.workspaceId, stoppedAppId);
      this.mark(row.id, { status: "failed", error: swapped ? reason : `${reason}; the volume keeps its old content` });
      throw error;
    }
    await this.removePrevious(driver, row);
  }

  /** The backup's archive, extracted by the engine into a new, labelled engine volume. */
  private async extractInto(driver: DockerDriver, volume: VolumeRow, backup: VolumeBackupRow, row: VolumeRestoreRow) {
    const { config } = this.backups.deps;
    const labels: Record<string, string> = { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: volume.workspaceId, [LABEL_VOLUME]: volume.id };
    if (volume.appId) labels[LABEL_APP] = volume.appId;
    await driver.createVolume(row.newEngineVolumeName, labels);
    const image = await localImageFor(driver, config, volume.engineVolumeName);
    const mount = { workspaceId: volume.workspaceId, volumeId: volume.id, engineVolumeName: row.newEngineVolumeName, image, operationId: row.id };
    // The engine takes the gzip as it is, and stops at a damaged one.
    const archive = Bun.file(this.backups.files.storage.pathOf(backup.storageKey)).stream();
    await withVolumeMounted(driver, mount, (containerId) => driver.extractToContainer(containerId, MOUNT_PATH, archive, config.backups.volumeTimeoutSeconds * 1000));
  }

  /** Points the volume at the new engine volume, unless it no longer holds the one the restore began from. */
  private swap(volume: VolumeRow, row: VolumeRestoreRow): boolean {
    const changed = this.db
      .update(volumes)
      .set({ engineVolumeName: row.newEngineVolumeName, updatedAt: this.backups.now() })
      .where(and(eq(volumes.id, volume.id), eq(volumes.engineVolumeName, row.previousEngineVolumeName)))
      .returning({ id: volumes.id })
      .all();
    return changed.length === 1;
  }

  private async removeHalfMade(driver: DockerDriver, row: VolumeRestoreRow) {
    try {
      await driver.removeContainer(ioContainerNameOf(row.id));
      await driver.removeVolume(row.newEngineVolumeName);
    } catch (error) {
      console.warn(`[volume restore] ${row.id}: the half-made volume ${row.newEngineVolumeName} could not be removed (retried at the next start): ${(error as Error).message}`);
    }
  }

  private startAgain(workspaceId: string, appId: string) {
    try {
      this.apps.start(workspaceId, appId);
    } catch (error) {
      console.warn(`[volume restore] the app ${appId} could not be started again: ${(error as Error).message}`);
    }
  }

  /** Waits until no container `matching` mounts the volume; throws `what` past `timeoutMs`. */
  private async waitUntilUnmounted(driver: DockerDriver, engineVolumeName: string, matching: (container: { running: boolean }) => boolean, timeoutMs: number, what: string) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const users = (await driver.containersUsingVolume(engineVolumeName)).filter(matching);
      if (!users.length) return;
      if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs / 1000} s (${users.map((user) => user.name).join(", ")})`);
      await Bun.sleep(POLL_MS);
    }
  }

  /** The old engine volume, removed once no container (the app's old one included) mounts it; else left for the next start. */
  private async removePrevious(driver: DockerDriver, row: VolumeRestoreRow) {
    try {
      await this.waitUntilUnmounted(driver, row.previousEngineVolumeName, () => true, RELEASE_WAIT_MS, "containers still mount the old volume");
      await driver.removeVolume(row.previousEngineVolumeName);
      this.mark(row.id, { previousRemovedAt: this.backups.now() });
    } catch (error) {
      console.warn(`[volume restore] ${row.id}: the old volume ${row.previousEngineVolumeName} stays until the next start: ${(error as Error).message}`);
    }
  }

  /**
   * At start (after the backups cut off are closed): restores a crash or kill cut off are settled,
   * and old volumes left after a swap are removed once nothing mounts them.
   */
  async recoverInterrupted() {
    const cut = this.db.select().from(volumeRestores).where(inArray(volumeRestores.status, ["pending", "running"])).all();
    for (const row of cut) {
      const volume = this.db.select().from(volumes).where(eq(volumes.id, row.volumeId)).get();
      if (!volume) continue;
      if (volume.engineVolumeName === row.newEngineVolumeName) {
        this.mark(row.id, { status: "succeeded", error: `${INTERRUPTED} after the restored content was swapped in; it is in use` });
      } else {
        this.mark(row.id, { status: "failed", error: `${INTERRUPTED}; the volume keeps its old content` });
        await Promise.resolve()
          .then(() => this.removeHalfMade(this.driverOf(volume), row))
          .catch((error: Error) => console.warn(`[volume restore] ${row.id}: ${error.message}`));
      }
      if (row.stoppedAppId) this.startAgain(volume.workspaceId, row.stoppedAppId);
    }
    const leftovers = this.db
      .select()
      .from(volumeRestores)
      .where(and(eq(volumeRestores.status, "succeeded"), isNull(volumeRestores.previousRemovedAt)))
      .all();
    for (const row of leftovers) {
      const volume = this.db.select().from(volumes).where(and(eq(volumes.id, row.volumeId), ne(volumes.engineVolumeName, row.previousEngineVolumeName))).get();
      if (!volume) continue;
      try {
        const driver = this.driverOf(volume);
        if ((await driver.containersUsingVolume(row.previousEngineVolumeName)).length) continue;
        await driver.removeVolume(row.previousEngineVolumeName);
        this.mark(row.id, { previousRemovedAt: this.backups.now() });
      } catch (error) {
        console.warn(`[volume restore] ${row.id}: the old volume ${row.previousEngineVolumeName} could not be removed: ${(error as Error).message}`);
      }
    }
  }
}
