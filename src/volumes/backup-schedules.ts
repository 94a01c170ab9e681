// Volume backup schedules: the same cron expressions, retention and jobs as databases'
// (../backups/schedule-rules.ts, ../backups/schedule-jobs.ts). A run makes a `scheduled` backup;
// when it cannot (a restore or another backup in the way) it records a `failed` scheduled backup
// saying why. After the run, retention trims older scheduled backups (nothing while a restore
// holds the volume); then, with `verify`, the new backup is read back.
import { eq } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import { volumeBackups, volumeBackupSchedules, volumes } from "../db/schema";
import { ApiError } from "../http/errors";
import type { BackupScheduleInput } from "../backups/model";
import { ScheduleJobs } from "../backups/schedule-jobs";
import { retentionDeletes, scheduleFieldsOf, scheduleSettingsOf } from "../backups/schedule-rules";
import type { VolumeBackups } from "./backups";
import type { VolumeBackupScheduleSchema } from "./backup-model";

type ScheduleRow = typeof volumeBackupSchedules.$inferSelect;
type ScheduleView = Static<typeof VolumeBackupScheduleSchema>;

export class VolumeBackupSchedules {
  private readonly jobs: ScheduleJobs;

  constructor(private readonly backups: VolumeBackups) {
    this.jobs = new ScheduleJobs("volume", (volumeId) => this.runOnce(volumeId), () => backups.now());
    // The schedule's row goes with its volume's (cascade); its job stops here.
    backups.deps.volumes.addDependent({ assertDeletable: () => {}, forget: async (volumeId) => this.jobs.stop(volumeId) });
  }

  private get db() {
    return this.backups.db;
  }

  start() {
    this.jobs.start(this.db.select().from(volumeBackupSchedules).all().map((row) => ({ ownerId: row.volumeId, ...row })));
  }

  stopAll() {
    this.jobs.stopAll();
  }

  get(workspaceId: string, volumeId: string): ScheduleView | null {
    this.backups.volume(workspaceId, volumeId);
    const row = this.rowOf(volumeId);
    return row ? viewOf(row) : null;
  }

  /** Creates or replaces the volume's schedule and (re)starts its job. */
  set(workspaceId: string, volumeId: string, input: BackupScheduleInput): ScheduleView {
    const volume = this.backups.volume(workspaceId, volumeId);
    const now = this.backups.now();
    const settings = scheduleSettingsOf(input, now);
    this.db
      .insert(volumeBackupSchedules)
      .values({ volumeId, workspaceId: volume.workspaceId, lastRunAt: null, createdAt: now, ...settings })
      .onConflictDoUpdate({ target: volumeBackupSchedules.volumeId, set: settings })
      .run();
    this.jobs.schedule(volumeId, settings.cron);
    return viewOf(this.rowOf(volumeId)!);
  }

  /** Removes the volume's schedule and stops its job; answers the schedule removed, null when there was none. */
  clear(workspaceId: string, volumeId: string): ScheduleView | null {
    this.backups.volume(workspaceId, volumeId);
    const row = this.rowOf(volumeId);
    this.jobs.stop(volumeId);
    this.db.delete(volumeBackupSchedules).where(eq(volumeBackupSchedules.volumeId, volumeId)).run();
    return row ? { ...viewOf(row), nextRunAt: null } : null;
  }

  private rowOf(volumeId: string): ScheduleRow | undefined {
    return this.db.select().from(volumeBackupSchedules).where(eq(volumeBackupSchedules.volumeId, volumeId)).get();
  }

  private async runOnce(volumeId: string) {
    const volume = this.db.select().from(volumes).where(eq(volumes.id, volumeId)).get();
    if (!volume || !this.rowOf(volumeId)) return this.jobs.stop(volumeId);
    this.db.update(volumeBackupSchedules).set({ lastRunAt: this.backups.now() }).where(eq(volumeBackupSchedules.volumeId, volumeId)).run();
    let succeeded = false;
    let backupId: string | null = null;
    try {
      const backup = await this.backups.begin(volume, "scheduled").done;
      succeeded = backup.status === "completed";
      backupId = backup.id;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.backups.recordFailure(volume, "scheduled", `The scheduled backup did not run: ${error.message}`);
    }
    // Read again: the schedule may have been changed or cleared while the backup ran.
    const current = this.rowOf(volumeId);
    if (!current) return;
    await this.applyRetention(volumeId, current, succeeded);
    if (succeeded && current.verify && backupId) await this.backups.verify(volume.workspaceId, volumeId, backupId).done;
  }

  /** Deletes what the policy lets go; a backup being verified waits for a later run, and nothing goes while a restore holds the volume. */
  private async applyRetention(volumeId: string, policy: ScheduleRow, succeeded: boolean) {
    if (this.backups.restoring.has(volumeId)) return;
    const rows = this.db.select().from(volumeBackups).where(eq(volumeBackups.volumeId, volumeId)).all();
    const doomed = retentionDeletes(rows, policy, this.backups.now(), succeeded);
    for (const row of rows) if (doomed.has(row.id) && !this.backups.isVerifying(row.id)) await this.backups.remove(row);
  }
}

function viewOf(row: ScheduleRow): ScheduleView {
  return { volumeId: row.volumeId, ...scheduleFieldsOf(row) };
}
