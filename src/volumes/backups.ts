// Volume backups: a tar of the volume's content made by the engine itself (GET archive of a
// created, never started, helper container that mounts the volume: nothing of the user's runs),
// streamed through gzip to a file with its SHA-256 (../backups/storage.ts), bounded by the
// workspace's disk quota and in time, copied to the remote destinations, and `completed` only then.
// A verify reads the file back: checksum, gzip, and the tar walked to its end (./archive-check.ts).
// A backup runs in the background: POST answers at once with the backup `running`.
//
// A backup of a volume an app writes to meanwhile is a copy of files taken one after another, as
// `cp -a` would make it; for a database file inside, stop the app first (a restore does).
import { and, desc, eq, inArray, ne, sql } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import type { Config } from "../config";
import type { PlatformDb } from "../db";
import { volumeBackups } from "../db/schema";
import { newId } from "../crypto/tokens";
import { ApiError, notFound } from "../http/errors";
import { LABEL_MANAGED, LABEL_WORKSPACE } from "../docker/container-spec";
import type { DockerDriver } from "../docker/driver";
import type { Machines } from "../machines/service";
import { MIN_ENTRY_BYTES, type DiskWrite, type WorkspaceDisk } from "../quotas/usage";
import { BackupFiles, copiesOf } from "../backups/files";
import { pauseForTest } from "../config/test-pause";
import { readArchive } from "./archive-check";
import { LABEL_VOLUME } from "./mounts";
import type { VolumeRow, Volumes } from "./service";
import type { VolumeArchiveVerificationSchema, VolumeBackupSchema, VolumeBackupType } from "./backup-model";

export type VolumeBackupRow = typeof volumeBackups.$inferSelect;
export type VolumeBackupView = Static<typeof VolumeBackupSchema>;
type Verification = Static<typeof VolumeArchiveVerificationSchema>;

/** Where a helper container mounts the volume: a path no image has, so the engine copies nothing of an image into a new volume. */
export const MOUNT_PATH = "/platform-volume";
/** Marks the helper containers that mount a volume for a backup or a restore; the value is the backup's or restore's id. */
export const LABEL_VOLUME_IO = "platform.volume-io";
const INTERRUPTED_BACKUP = "interrupted: the platform stopped while this backup ran";
const INTERRUPTED_VERIFY = "interrupted: the platform stopped while this verify ran; verify the backup again";

export interface VolumeBackupDeps {
  db: PlatformDb;
  machines: Machines;
  config: Config;
  files: BackupFiles;
  disk: WorkspaceDisk;
  volumes: Volumes;
  now?: () => number;
}

export function ioContainerNameOf(operationId: string): string {
  return `platform-volume-io-${operationId}`;
}

/**
 * Runs `work` with a helper container, created and never started, that mounts the engine volume at
 * MOUNT_PATH; it is removed afterwards whatever happens. The image is one the machine already has
 * (never pulled): the command is never run.
 */
export async function withVolumeMounted<T>(driver: DockerDriver, mount: { workspaceId: string; volumeId: string; engineVolumeName: string; image: string; operationId: string }, work: (containerId: string) => Promise<T>): Promise<T> {
  const name = ioContainerNameOf(mount.operationId);
  await driver.removeContainer(name);
  await driver.createContainer({
    name,
    image: mount.image,
    command: ["true"],
    labels: { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: mount.workspaceId, [LABEL_VOLUME]: mount.volumeId, [LABEL_VOLUME_IO]: mount.operationId },
    memoryMB: 32,
    pidsLimit: 8,
    network: { name: "none", aliases: [] },
    volumes: [{ volumeName: mount.engineVolumeName, containerPath: MOUNT_PATH }],
    keepLogs: false,
  });
  try {
    return await work(name);
  } finally {
    await driver.removeContainer(name).catch((error: Error) => console.warn(`[volume backups] could not remove ${name}: ${error.message}`));
  }
}

/** An image the machine has: of a container that mounts the volume, else one of the platform's image settings. */
export async function localImageFor(driver: DockerDriver, config: Config, engineVolumeName: string): Promise<string> {
  const users = await driver.containersUsingVolume(engineVolumeName);
  for (const image of new Set([...users.map((user) => user.image), ...Object.values(config.images)])) if (await driver.hasImage(image)) return image;
  throw new ApiError("IMAGE_UNAVAILABLE", `Machine '${driver.machineId}' has none of the platform's images to mount the volume with; deploy an app there first`);
}

/** The stream, failed once no byte came for `idleMs` or it has run `totalMs` in all (the source is then cancelled). */
export function withinTime(source: ReadableStream<Uint8Array>, idleMs: number, totalMs: number): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  const deadline = Date.now() + totalMs;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const left = deadline - Date.now();
      const reason = idleMs < left ? `no byte came for ${idleMs / 1000} s` : `it ran past ${totalMs / 1000} s`;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the engine's archive was stopped: ${reason}`)), Math.max(0, Math.min(idleMs, left)))));
      try {
        const { value, done } = await Promise.race([reader.read(), late]);
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        reader.cancel(error).catch(() => undefined);
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

export function volumeBackupView(row: VolumeBackupRow): VolumeBackupView {
  return {
    id: row.id,
    volumeId: row.volumeId,
    machineId: row.machineId,
    type: row.type as VolumeBackupType,
    status: row.status as VolumeBackupView["status"],
    sizeBytes: row.sizeBytes,
    sha256: row.sha256,
    archiveBytes: row.archiveBytes,
    error: row.error,
    verifiedAt: row.verifiedAt === null ? null : new Date(row.verifiedAt).toISOString(),
    verification: row.verification === null ? null : (JSON.parse(row.verification) as Verification),
    copies: copiesOf(row),
    createdAt: new Date(row.createdAt).toISOString(),
    finishedAt: row.finishedAt === null ? null : new Date(row.finishedAt).toISOString(),
  };
}

export class VolumeBackups {
  readonly db: PlatformDb;
  readonly files: BackupFiles;
  readonly now: () => number;
  /** Volumes a restore holds now: no backup of them starts meanwhile. */
  readonly restoring = new Set<string>();
  /** Backups being verified now. */
  private readonly verifying = new Set<string>();

  constructor(readonly deps: VolumeBackupDeps) {
    this.db = deps.db;
    this.files = deps.files;
    this.now = deps.now ?? Date.now;
    // A backup's file counts from the moment its size is recorded; failed ones keep no file.
    deps.disk.register("backups", async (workspaceId) => {
      const total = this.db
        .select({ bytes: sql<number>`coalesce(sum(max(${volumeBackups.sizeBytes}, ${MIN_ENTRY_BYTES})), 0)` })
        .from(volumeBackups)
        .where(and(eq(volumeBackups.workspaceId, workspaceId), ne(volumeBackups.status, "failed")))
        .get();
      return total?.bytes ?? 0;
    }, "volumeBackups");
    // A volume deleted on purpose takes its backups with it; not while one of them is being made, verified or restored.
    deps.volumes.addDependent({ assertDeletable: (volume) => this.assertDeletable(volume), forget: (volumeId) => this.forgetVolume(volumeId) });
  }

  /** The volume of the workspace, or 404. */
  volume(workspaceId: string, volumeId: string): VolumeRow {
    return this.deps.volumes.get(workspaceId, volumeId);
  }

  driverOf(machineId: string): DockerDriver {
    return this.deps.machines.get(machineId);
  }

  /** Work that goes on after the answer; its failures are recorded on its rows. */
  track(work: Promise<unknown>) {
    work.catch(() => undefined);
  }

  list(workspaceId: string, volumeId: string): VolumeBackupView[] {
    this.volume(workspaceId, volumeId);
    return this.db
      .select()
      .from(volumeBackups)
      .where(eq(volumeBackups.volumeId, volumeId))
      .orderBy(desc(volumeBackups.createdAt), desc(sql`rowid`))
      .all()
      .map(volumeBackupView);
  }

  row(workspaceId: string, volumeId: string, backupId: string): VolumeBackupRow {
    this.volume(workspaceId, volumeId);
    const row = this.db.select().from(volumeBackups).where(and(eq(volumeBackups.id, backupId), eq(volumeBackups.volumeId, volumeId))).get();
    if (!row) throw notFound("Backup");
    return row;
  }

  get(workspaceId: string, volumeId: string, backupId: string): VolumeBackupView {
    return volumeBackupView(this.row(workspaceId, volumeId, backupId));
  }

  viewOf(backupId: string): VolumeBackupView {
    const row = this.db.select().from(volumeBackups).where(eq(volumeBackups.id, backupId)).get();
    if (!row) throw notFound("Backup");
    return volumeBackupView(row);
  }

  /** Starts a backup once the disk quota has room for it; it is `running` until its file is whole, checked and copied. */
  async start(workspaceId: string, volumeId: string, type: VolumeBackupType): Promise<VolumeBackupView> {
    const volume = this.volume(workspaceId, volumeId);
    this.assertFree(volume);
    const room = await this.deps.disk.openWrite(volume.workspaceId, this.deps.config.quotas.diskMB);
    try {
      return this.begin(this.volume(workspaceId, volumeId), type, async () => room).backup;
    } catch (error) {
      room.release();
      throw error;
    }
  }

  /** 409 while a restore holds the volume, a backup of it runs or it is being deleted. Nothing awaited between this and the row's insert. */
  private assertFree(volume: VolumeRow, duringRestore = false) {
    if (!duringRestore && this.restoring.has(volume.id)) throw new ApiError("BUSY", "A restore of this volume is running; back it up once it has finished");
    if (this.deps.volumes.isDeleting(volume.id)) throw new ApiError("BUSY", "The volume is being deleted");
    this.assertNoBackupRunning(volume.id);
  }

  /** A volume is deleted only while no backup of it is made, verified or restored. */
  private assertDeletable(volume: VolumeRow) {
    if (this.restoring.has(volume.id)) throw new ApiError("RESTORE_IN_PROGRESS", `A restore of volume '${volume.name}' is running; delete it once the restore has finished`);
    this.assertNoBackupRunning(volume.id);
    const backupIds = this.db.select({ id: volumeBackups.id }).from(volumeBackups).where(eq(volumeBackups.volumeId, volume.id)).all();
    if (backupIds.some(({ id }) => this.verifying.has(id))) throw new ApiError("VERIFY_IN_PROGRESS", `A backup of volume '${volume.name}' is being verified; delete the volume once the verify has finished`);
  }

  assertNoBackupRunning(volumeId: string) {
    const running = this.db.select({ id: volumeBackups.id }).from(volumeBackups).where(and(eq(volumeBackups.volumeId, volumeId), eq(volumeBackups.status, "running"))).get();
    if (running) throw new ApiError("BACKUP_IN_PROGRESS", `A backup of this volume is running (${running.id}); try again when it has finished`);
  }

  /**
   * As start, with `done`: the backup as it ended (it never rejects). Without `openRoom` (a
   * scheduled run or a restore's pre-restore backup) the room on the disk is asked for when the
   * archive begins, and a refusal fails the backup with the reason.
   */
  begin(
    volume: VolumeRow,
    type: VolumeBackupType,
    openRoom?: () => Promise<DiskWrite>,
    operationId: string | null = null,
    options: { duringRestore?: boolean } = {},
  ): { backup: VolumeBackupView; done: Promise<VolumeBackupView> } {
    this.assertFree(volume, options.duringRestore);
    const row = this.newRow(volume, type, operationId);
    const done = this.archive(volume, row, openRoom ?? (() => this.deps.disk.openWrite(volume.workspaceId, this.deps.config.quotas.diskMB)))
      .catch(() => undefined)
      .then(() => this.viewOf(row.id));
    this.track(done);
    return { backup: volumeBackupView(row), done };
  }

  /** A backup that could not even begin (a schedule's run during a restore), listed as `failed` with the reason. */
  recordFailure(volume: VolumeRow, type: VolumeBackupType, reason: string): VolumeBackupView {
    const row = this.newRow(volume, type, null);
    this.update(row.id, { status: "failed", error: reason });
    return this.viewOf(row.id);
  }

  private newRow(volume: VolumeRow, type: VolumeBackupType, operationId: string | null): VolumeBackupRow {
    const id = newId("vbk");
    const row: VolumeBackupRow = {
      id,
      volumeId: volume.id,
      workspaceId: volume.workspaceId,
      machineId: volume.machineId,
      type,
      status: "running",
      storageKey: this.files.storage.keyOf(volume.id, id, "tar"),
      sizeBytes: 0,
      sha256: null,
      archiveBytes: null,
      error: null,
      verifiedAt: null,
      verification: null,
      copies: null,
      operationId,
      createdAt: this.now(),
      finishedAt: null,
    };
    this.db.insert(volumeBackups).values(row).run();
    return row;
  }

  /** Makes the archive of a `running` backup row; throws (after recording it) when it fails. */
  private async archive(volume: VolumeRow, row: VolumeBackupRow, openRoom: () => Promise<DiskWrite>) {
    const { config } = this.deps;
    const driver = this.driverOf(volume.machineId);
    let room: DiskWrite | null = null;
    try {
      room = await openRoom();
      if (!(await driver.hasVolume(volume.engineVolumeName))) throw new Error("the volume has nothing to back up yet: its app never started with it");
      const image = await localImageFor(driver, config, volume.engineVolumeName);
      const mount = { workspaceId: volume.workspaceId, volumeId: volume.id, engineVolumeName: volume.engineVolumeName, image, operationId: row.id };
      await withVolumeMounted(driver, mount, async (containerId) => {
        const tar = withinTime(await driver.readFromContainer(containerId, `${MOUNT_PATH}/.`), config.backups.idleTimeoutSeconds * 1000, config.backups.volumeTimeoutSeconds * 1000);
        await this.files.storage.write(row.storageKey, tar, {
          onWrite: room?.add,
          accept: (written) => this.update(row.id, { sizeBytes: written.sizeBytes, sha256: written.sha256, archiveBytes: written.dump.bytes }, { finished: false }),
        });
      });
      await pauseForTest("volume-backup.placed");
      await this.complete(row.id, row.storageKey);
    } catch (error) {
      // A refusal by the quota cancels the archive's stream, which may then report first.
      const failure = room?.refusal ?? (error as Error);
      const reason = failure.message || String(failure);
      this.update(row.id, { status: "failed", error: reason });
      throw new Error(reason);
    } finally {
      room?.release();
    }
  }

  /** A backup whose file is whole and recorded: copied to the remote destinations, then `completed`. */
  private async complete(backupId: string, storageKey: string) {
    const { sha256 } = this.db.select({ sha256: volumeBackups.sha256 }).from(volumeBackups).where(eq(volumeBackups.id, backupId)).get()!;
    await this.files.copy(storageKey, sha256!, (copies) => copies && this.update(backupId, { copies: JSON.stringify(copies) }, { finished: false }));
    this.update(backupId, { status: "completed" });
  }

  /** Updates a backup (one deleted meanwhile is left alone); `finishedAt` is set unless it goes on. */
  update(backupId: string, changes: Partial<VolumeBackupRow>, options: { finished: boolean } = { finished: true }) {
    this.db
      .update(volumeBackups)
      .set({ ...changes, ...(options.finished ? { finishedAt: this.now() } : {}) })
      .where(eq(volumeBackups.id, backupId))
      .run();
  }

  async download(workspaceId: string, volumeId: string, backupId: string, range: string | null): Promise<Response> {
    const row = this.row(workspaceId, volumeId, backupId);
    const volume = this.volume(workspaceId, volumeId);
    const stamp = new Date(row.createdAt).toISOString().replace(/[:.]/g, "-");
    return this.files.download(row, `${volume.name}-${stamp}.tar.gz`, range);
  }

  /** Deletes a backup that is not running, nor being verified or restored: its row, file and remote copies. */
  async delete(workspaceId: string, volumeId: string, backupId: string): Promise<VolumeBackupView> {
    const row = this.row(workspaceId, volumeId, backupId);
    if (row.status === "running") throw new ApiError("BACKUP_NOT_READY", "The backup is running; delete it once it has finished");
    if (this.verifying.has(row.id)) throw new ApiError("VERIFY_IN_PROGRESS", "The backup is being verified; delete it once the verify has finished");
    if (this.restoring.has(volumeId)) throw new ApiError("BUSY", "A restore of this volume is running; delete the backup once it has finished");
    await this.remove(row);
    return volumeBackupView(row);
  }

  async remove(row: VolumeBackupRow) {
    this.db.delete(volumeBackups).where(eq(volumeBackups.id, row.id)).run();
    await this.files.remove(row);
  }

  /**
   * A volume deleted on purpose: its backups' rows, files and remote copies go with it (called by
   * ./service.ts before its row is deleted, which would take the rows alone).
   */
  private async forgetVolume(volumeId: string) {
    const rows = this.db.select().from(volumeBackups).where(eq(volumeBackups.volumeId, volumeId)).all();
    this.db.delete(volumeBackups).where(eq(volumeBackups.volumeId, volumeId)).run();
    for (const row of rows) await this.files.remove(row);
    await this.files.storage.removeOwner(volumeId);
  }

  isVerifying(backupId: string): boolean {
    return this.verifying.has(backupId);
  }

  /**
   * Reads a completed backup back in the background: its file's checksum, its gzip, and its tar
   * walked to the end, counting what it holds. The result is the backup's `verification`.
   */
  verify(workspaceId: string, volumeId: string, backupId: string): { backup: VolumeBackupView; done: Promise<VolumeBackupView> } {
    const row = this.row(workspaceId, volumeId, backupId);
    if (row.status !== "completed") throw new ApiError("BACKUP_NOT_READY", `The backup is ${row.status}; only a completed backup can be verified`);
    if (this.verifying.has(row.id)) throw new ApiError("VERIFY_IN_PROGRESS", "This backup is being verified already; wait for its result");
    this.verifying.add(row.id);
    const startedAt = new Date(this.now()).toISOString();
    const empty = { files: 0, directories: 0, symlinks: 0, otherEntries: 0, fileBytes: 0 };
    this.recordVerification(row.id, { status: "running", ...empty, error: null, startedAt, finishedAt: null });
    const done = this.readBack(row)
      .then(
        ({ archiveBytes: _, ...content }) => this.recordVerification(row.id, { status: "passed", ...content, error: null, startedAt, finishedAt: new Date(this.now()).toISOString() }, this.now()),
        (error: Error) => this.recordVerification(row.id, { status: "failed", ...empty, error: error.message || String(error), startedAt, finishedAt: new Date(this.now()).toISOString() }),
      )
      .finally(() => this.verifying.delete(row.id))
      .then(() => this.viewOf(row.id));
    this.track(done);
    return { backup: this.viewOf(row.id), done };
  }

  private async readBack(row: VolumeBackupRow) {
    await this.files.ensureLocal(row);
    const problem = await this.files.storage.problemWith(row.storageKey, row.sizeBytes, row.sha256);
    if (problem) throw new Error(`the backup cannot be trusted: ${problem}`);
    try {
      return await readArchive(this.files.storage.dumpOf(row.storageKey));
    } catch (error) {
      throw new Error(`reading the archive back failed: ${(error as Error).message}`);
    }
  }

  private recordVerification(backupId: string, verification: Verification, verifiedAt?: number) {
    this.update(backupId, { verification: JSON.stringify(verification), ...(verifiedAt === undefined ? {} : { verifiedAt }) }, { finished: false });
  }

  /**
   * At start, before anything is served: backups a stop or crash cut off are failed, but one whose
   * file was finished and recorded, and still matches, is completed (copied first); verifies cut
   * off are failed; helper containers of either are removed. Copies go on in the background.
   */
  async closeInterrupted(): Promise<void> {
    const cut = this.db.select().from(volumeBackups).where(eq(volumeBackups.status, "running")).all();
    for (const row of cut) {
      await Promise.resolve()
        .then(() => this.driverOf(row.machineId).removeContainer(ioContainerNameOf(row.id)))
        .catch((error: Error) => console.warn(`[volume backups] the helper container of ${row.id} could not be removed: ${error.message}`));
      const problem = row.sha256 === null ? "before its file was whole" : await this.files.storage.problemWith(row.storageKey, row.sizeBytes, row.sha256);
      if (problem) {
        this.update(row.id, { status: "failed", error: row.sha256 === null ? INTERRUPTED_BACKUP : `${INTERRUPTED_BACKUP}, and ${problem}` });
        await this.files.remove(row);
        continue;
      }
      this.track(this.complete(row.id, row.storageKey).catch((error: Error) => this.update(row.id, { status: "failed", error: error.message })));
    }
    const verifies = this.db.select().from(volumeBackups).where(sql`json_extract(${volumeBackups.verification}, '$.status') = 'running'`).all();
    for (const row of verifies) {
      const verification = JSON.parse(row.verification!) as Verification;
      this.recordVerification(row.id, { ...verification, status: "failed", error: INTERRUPTED_VERIFY, finishedAt: new Date(this.now()).toISOString() });
    }
    this.files.storage.removePartials();
  }
}
