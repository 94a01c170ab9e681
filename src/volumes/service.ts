// Volumes: the records of the workspace's named engine volumes, which app mounts each where, and
// on which machine it lives. An app's list is checked and planned synchronously (so a deploy's
// check-then-write step stays free of awaits) and applied once the app's row is written. Nothing
// here deletes a volume but an explicit delete (DELETE /api/volumes/{id}, or an app deleted with
// deleteVolumes=true); the engine volume itself is made on first use (./mounts.ts).
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import type { PlatformDb } from "../db";
import { apps, volumes } from "../db/schema";
import type { Machines } from "../machines/service";
import { DockerConflict } from "../docker/driver";
import { newId } from "../crypto/tokens";
import { ApiError } from "../http/errors";
import { assertWithinQuota, bytesToMB } from "../quotas/limits";
import { MIN_ENTRY_BYTES, type WorkspaceDisk } from "../quotas/usage";
import { checkVolumeMounts, type VolumeMount } from "./validation";
import type { AppVolumeSchema, ReleaseStrategy, VolumeSchema } from "./model";
import { VolumeSizes } from "./sizes";

export type VolumeRow = typeof volumes.$inferSelect;

/** What a volume list is checked against: the app (absent before its first deploy) and where it runs. */
export interface VolumeOwner {
  workspaceId: string;
  appId?: string;
  machineId: string;
  /** ZIP and git apps have their code in /app; an image app's (runtime `image`) is wherever its image put it. */
  runtime: string;
}

/** A checked volume list: `addsVolume` when it makes or attaches one; `apply` writes it for the app. */
export interface VolumePlan {
  addsVolume: boolean;
  /** Writes the list for `appId`; answers whether the app's mounts changed (it must restart). */
  apply(appId: string): boolean;
}

/**
 * What else holds a volume's data (its backups, their schedule): asked before a volume is deleted
 * on purpose (it throws a 409 while it is working on the volume), and told once the volume is gone.
 */
export interface VolumeDependent {
  assertDeletable(volume: VolumeRow): void;
  forget(volumeId: string): Promise<void>;
}

/** How long a removal waits for containers that still use the volume to go. */
const RELEASE_WAIT_MS = 15_000;

export const engineVolumeNameOf = (volumeId: string) => `platform-vol-${volumeId.toLowerCase()}`;

/** An app with volumes stops its old container first unless it says otherwise (two writers of one SQLite file corrupt it). */
export function releaseStrategyOf(db: PlatformDb, app: { id: string; releaseStrategy: string | null }): ReleaseStrategy {
  if (app.releaseStrategy === "start-first" || app.releaseStrategy === "stop-first") return app.releaseStrategy;
  const mounted = db.select({ count: sql<number>`count(*)` }).from(volumes).where(eq(volumes.appId, app.id)).get();
  return (mounted?.count ?? 0) > 0 ? "stop-first" : "start-first";
}

export class Volumes {
  /** Sizes as the engine measures them, refreshed in the background (./sizes.ts). */
  readonly sizes: VolumeSizes;
  private readonly dependents: VolumeDependent[] = [];
  /** Volumes being deleted now: nothing new (a backup, a restore) begins on them. */
  private readonly deleting = new Set<string>();

  constructor(
    private readonly db: PlatformDb,
    private readonly machines: Machines,
    private readonly disk: WorkspaceDisk,
    sizeRefreshSeconds: number,
    private readonly diskQuotaMB: () => number,
    private readonly now: () => number = Date.now,
  ) {
    this.sizes = new VolumeSizes(db, machines, sizeRefreshSeconds * 1000, now);
    // Volumes count against the disk quota at their last measured size.
    disk.register("volumes", async (workspaceId) => {
      const total = db.select({ bytes: sql<number>`coalesce(sum(${volumes.sizeBytes}), 0)` }).from(volumes).where(eq(volumes.workspaceId, workspaceId)).get();
      return total?.bytes ?? 0;
    });
  }

  addDependent(dependent: VolumeDependent) {
    this.dependents.push(dependent);
  }

  isDeleting(volumeId: string): boolean {
    return this.deleting.has(volumeId);
  }

  /** 409 while something works on the volume (a backup or restore of it runs) or it is being deleted already. */
  assertDeletable(volume: VolumeRow) {
    if (this.deleting.has(volume.id)) throw new ApiError("BUSY", `Volume '${volume.name}' is being deleted already`);
    for (const dependent of this.dependents) dependent.assertDeletable(volume);
  }

  list(workspaceId: string): VolumeRow[] {
    return this.db.select().from(volumes).where(eq(volumes.workspaceId, workspaceId)).orderBy(volumes.createdAt).all();
  }

  /** A volume of the workspace; another workspace's is "not found". */
  get(workspaceId: string, volumeId: string): VolumeRow {
    const row = this.db.select().from(volumes).where(and(eq(volumes.id, volumeId), eq(volumes.workspaceId, workspaceId))).get();
    if (!row) throw new ApiError("NOT_FOUND", "Volume not found");
    return row;
  }

  ofApp(appId: string): VolumeRow[] {
    return this.db.select().from(volumes).where(eq(volumes.appId, appId)).orderBy(volumes.createdAt).all();
  }

  appView(appId: string): Static<typeof AppVolumeSchema>[] {
    return this.ofApp(appId).map(({ id, name, mountPath, sizeBytes }) => ({ id, name, mountPath, sizeBytes }));
  }

  view(row: VolumeRow): Static<typeof VolumeSchema> {
    const app = row.appId ? this.db.select({ name: apps.name }).from(apps).where(eq(apps.id, row.appId)).get() : undefined;
    return {
      id: row.id,
      name: row.name,
      appId: row.appId,
      appName: app?.name ?? null,
      detached: row.appId === null,
      mountPath: row.mountPath,
      machineId: row.machineId,
      sizeBytes: row.sizeBytes,
      sizeMeasuredAt: row.sizeMeasuredAt === null ? null : new Date(row.sizeMeasuredAt).toISOString(),
      workspaceId: row.workspaceId,
      createdAt: new Date(row.createdAt).toISOString(),
      updatedAt: new Date(row.updatedAt).toISOString(),
    };
  }

  /**
   * Where an app placed without a machine of its own goes: the machine of the existing volumes it
   * lists (they cannot move). Undefined when it lists none.
   */
  machineOfVolumes(workspaceId: string, mounts: VolumeMount[] | undefined): string | undefined {
    if (!mounts?.length) return undefined;
    const existing = this.db
      .select({ machineId: volumes.machineId })
      .from(volumes)
      .where(and(eq(volumes.workspaceId, workspaceId), inArray(volumes.name, mounts.map((mount) => mount.name))))
      .all();
    return existing[0]?.machineId;
  }

  /**
   * Checks the app's whole new volume list (400 for a bad name or path, 409 VOLUME_ATTACHED for one
   * another app mounts, 409 VOLUME_ON_OTHER_MACHINE for one on another machine). Nothing awaits.
   */
  plan(owner: VolumeOwner, mounts: VolumeMount[]): VolumePlan {
    const wanted = checkVolumeMounts(mounts, { codeAtApp: owner.runtime !== "image" });
    const byName = new Map(this.list(owner.workspaceId).map((row) => [row.name, row]));
    let addsVolume = false;
    for (const mount of wanted) {
      const row = byName.get(mount.name);
      if (row && row.appId !== null && row.appId !== owner.appId) {
        throw new ApiError("VOLUME_ATTACHED", `Volume '${mount.name}' is mounted in another app; detach it there first`);
      }
      if (row && row.machineId !== owner.machineId) {
        throw new ApiError("VOLUME_ON_OTHER_MACHINE", `Volume '${mount.name}' is on machine '${row.machineId}', the app on '${owner.machineId}': an app runs where its volumes are`);
      }
      if (!row || row.appId === null) addsVolume = true;
    }
    return {
      addsVolume,
      apply: (appId) => {
        const now = this.now();
        const before = this.ofApp(appId);
        let changed = false;
        for (const row of before) {
          if (wanted.some((mount) => mount.name === row.name)) continue;
          this.db.update(volumes).set({ appId: null, updatedAt: now }).where(eq(volumes.id, row.id)).run();
          changed = true;
        }
        for (const mount of wanted) {
          const row = byName.get(mount.name);
          if (row?.appId === appId && row.mountPath === mount.mountPath) continue;
          changed = true;
          if (row) {
            this.db.update(volumes).set({ appId, mountPath: mount.mountPath, updatedAt: now }).where(eq(volumes.id, row.id)).run();
            continue;
          }
          const id = newId("vol");
          this.db
            .insert(volumes)
            .values({ id, workspaceId: owner.workspaceId, name: mount.name, appId, mountPath: mount.mountPath, machineId: owner.machineId, engineVolumeName: engineVolumeNameOf(id), createdAt: now, updatedAt: now })
            .run();
        }
        return changed;
      },
    };
  }

  /** The list the app has, with `volume` added at `mountPath` (its kept one when omitted): an attach. */
  withAttached(app: { id: string }, volume: VolumeRow, mountPath: string | undefined): VolumeMount[] {
    if (volume.appId !== null) {
      throw new ApiError("VOLUME_ATTACHED", `Volume '${volume.name}' is mounted in ${volume.appId === app.id ? "this" : "another"} app; detach it first`);
    }
    const current = this.ofApp(app.id).map(({ name, mountPath: path }) => ({ name, mountPath: path }));
    return [...current, { name: volume.name, mountPath: mountPath ?? volume.mountPath }];
  }

  /**
   * 409 QUOTA_EXCEEDED when the workspace has no room on the disk for one more volume: adding one
   * while over the disk quota is refused like any other growth.
   */
  async assertRoom(workspaceId: string, plan: VolumePlan | undefined): Promise<void> {
    if (!plan?.addsVolume) return;
    await this.sizes.refreshIfStale();
    const used = await this.disk.bytesUsed(workspaceId);
    assertWithinQuota("diskMB", bytesToMB(used), bytesToMB(MIN_ENTRY_BYTES), this.diskQuotaMB());
  }

  /** DELETE /api/volumes/{id}: a detached volume, its content and its backups go (409 VOLUME_ATTACHED while mounted). */
  async delete(workspaceId: string, volumeId: string): Promise<void> {
    const row = this.get(workspaceId, volumeId);
    if (row.appId !== null) throw new ApiError("VOLUME_ATTACHED", `Volume '${row.name}' is mounted in an app: detach it (the app's settings) or delete the app first`);
    await this.deleteWithBackups(row);
  }

  /** An app deleted with deleteVolumes=true: its volumes go once its containers are gone (checked by assertDeletable at the request). */
  async deleteOfApp(appId: string): Promise<void> {
    for (const row of this.ofApp(appId)) await this.deleteWithBackups(row);
  }

  private async deleteWithBackups(row: VolumeRow) {
    this.assertDeletable(row);
    this.deleting.add(row.id);
    try {
      await this.removeEngineVolume(row);
      for (const dependent of this.dependents) await dependent.forget(row.id);
      this.db.delete(volumes).where(eq(volumes.id, row.id)).run();
    } finally {
      this.deleting.delete(row.id);
    }
  }

  /** An app deleted without deleteVolumes: its volumes stay, detached. */
  detachAll(appId: string): void {
    this.db.update(volumes).set({ appId: null, updatedAt: this.now() }).where(eq(volumes.appId, appId)).run();
  }

  /**
   * A container of the app it was detached from may still be stopping (a release drains first):
   * the engine refuses while one uses the volume, so the removal is tried again for a bounded time.
   */
  private async removeEngineVolume(row: VolumeRow) {
    const driver = this.machines.get(row.machineId);
    for (const deadline = this.now() + RELEASE_WAIT_MS; ; await Bun.sleep(500)) {
      try {
        await driver.removeVolume(row.engineVolumeName);
        return;
      } catch (error) {
        if (!(error instanceof DockerConflict)) throw error;
        if (this.now() >= deadline) throw new ApiError("VOLUME_IN_USE", `Volume '${row.name}' is still used by a container that is stopping; try again shortly`);
      }
    }
  }
}
