// Backup schedules: one croner job per database that has a schedule, in this process (times in
// UTC; `protect` skips a tick while the previous run still works). A run makes a `scheduled`
// backup; when it cannot (database not running, a backup or another operation in the way) it
// records a `failed` scheduled backup with the reason, so a schedule never stops silently. After
// a completed run, retention (`retentionPlan`, pure) trims older scheduled backups; then the new
// backup is verified when the schedule asks for it. A slot missed while the server was down is
// run once at start.
import { and, desc, eq } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import { databaseBackups, databaseBackupSchedules, databases } from "../db/schema";
import { ApiError } from "../http/errors";
import { intervalOf, retentionDeletes, scheduleFieldsOf, scheduleSettingsOf, type RetentionPolicy } from "../backups/schedule-rules";
import { ScheduleJobs } from "../backups/schedule-jobs";
import { type BackupScheduleInput, type BackupScheduleSchema, type DatabaseBackupSummarySchema } from "./model";
import type { BackupRow, BackupVerification, BackupView, DatabaseBackups } from "./backups";
import { SYSTEM_ACTOR } from "./operations";
import type { DatabaseRow } from "./runtime";

export type BackupScheduleRow = typeof databaseBackupSchedules.$inferSelect;
export type BackupScheduleView = Static<typeof BackupScheduleSchema>;
export type DatabaseBackupSummary = Static<typeof DatabaseBackupSummarySchema>;
/** Verifies a backup that a schedule made (restored into a throwaway container and counted). */
export type VerifyBackup = (database: DatabaseRow, backup: BackupView) => Promise<unknown>;

/** A verify is reading the backup's file right now. */
function beingVerified(row: BackupRow): boolean {
  return row.verification !== null && (JSON.parse(row.verification) as BackupVerification).status === "running";
}

// ---- the service --------------------------------------------------------------------------

export class BackupSchedules {
  private readonly jobs: ScheduleJobs;

  constructor(
    private readonly backups: DatabaseBackups,
    private readonly verify: VerifyBackup | null,
  ) {
    this.jobs = new ScheduleJobs("database", (databaseId) => this.runOnce(databaseId), () => this.service.now());
  }

  private get service() {
    return this.backups.service;
  }

  /** At start: a job per stored schedule, and one run now for each whose slot passed while the server was down. */
  start() {
    this.jobs.start(this.service.db.select().from(databaseBackupSchedules).all().map((row) => ({ ownerId: row.databaseId, ...row })));
  }

  /** Stops every job (server stop). */
  stopAll() {
    this.jobs.stopAll();
  }

  get(workspaceId: string, databaseId: string): BackupScheduleView | null {
    this.service.find(workspaceId, databaseId);
    const row = this.rowOf(databaseId);
    return row ? this.viewOf(row) : null;
  }

  /** Creates or replaces the database's schedule (omitted settings take their defaults) and (re)starts its job. */
  set(workspaceId: string, databaseId: string, input: BackupScheduleInput): BackupScheduleView {
    const database = this.service.find(workspaceId, databaseId);
    const now = this.service.now();
    const settings = scheduleSettingsOf(input, now);
    this.service.db
      .insert(databaseBackupSchedules)
      .values({ databaseId, workspaceId: database.workspaceId, lastRunAt: null, createdAt: now, ...settings })
      .onConflictDoUpdate({ target: databaseBackupSchedules.databaseId, set: settings })
      .run();
    const row = this.rowOf(databaseId)!;
    this.jobs.schedule(databaseId, row.cron);
    return this.viewOf(row);
  }

  /** Removes the database's schedule and stops its job; answers the schedule removed, null when there was none. */
  clear(workspaceId: string, databaseId: string): BackupScheduleView | null {
    this.service.find(workspaceId, databaseId);
    const row = this.rowOf(databaseId);
    this.forget(databaseId);
    return row ? { ...this.viewOf(row), nextRunAt: null } : null;
  }

  /** The database is gone (or its schedule cleared): no job, no row. */
  forget(databaseId: string) {
    this.jobs.stop(databaseId);
    this.service.db.delete(databaseBackupSchedules).where(eq(databaseBackupSchedules.databaseId, databaseId)).run();
  }

  /** For GET one database: its newest completed backup, its schedule, and a warning when backups are overdue. */
  summaryOf(databaseId: string): DatabaseBackupSummary {
    const newest = this.service.db
      .select({ createdAt: databaseBackups.createdAt })
      .from(databaseBackups)
      .where(and(eq(databaseBackups.databaseId, databaseId), eq(databaseBackups.status, "completed")))
      .orderBy(desc(databaseBackups.createdAt))
      .get();
    const row = this.rowOf(databaseId);
    return {
      lastCompletedAt: newest ? new Date(newest.createdAt).toISOString() : null,
      schedule: row ? this.viewOf(row) : null,
      warning: row ? this.overdueWarning(row, newest?.createdAt ?? null) : null,
    };
  }

  private overdueWarning(row: BackupScheduleRow, lastCompletedAt: number | null): string | null {
    const interval = intervalOf(row.cron);
    const since = lastCompletedAt ?? row.createdAt;
    if (interval === null || this.service.now() - since <= 2 * interval) return null;
    const age = `${Math.round((this.service.now() - since) / 1000)} s`;
    const what = lastCompletedAt === null ? `No backup has completed since the schedule was set ${age} ago` : `The last completed backup is ${age} old`;
    return `${what}, more than twice the schedule's interval (${Math.round(interval / 1000)} s): see the failed scheduled backups for why`;
  }

  private rowOf(databaseId: string): BackupScheduleRow | undefined {
    return this.service.db.select().from(databaseBackupSchedules).where(eq(databaseBackupSchedules.databaseId, databaseId)).get();
  }

  private viewOf(row: BackupScheduleRow): BackupScheduleView {
    return { databaseId: row.databaseId, ...scheduleFieldsOf(row) };
  }

  private async runOnce(databaseId: string) {
    const schedule = this.rowOf(databaseId);
    const database = this.service.db.select().from(databases).where(eq(databases.id, databaseId)).get();
    if (!schedule || !database) return this.forget(databaseId);
    this.service.db.update(databaseBackupSchedules).set({ lastRunAt: this.service.now() }).where(eq(databaseBackupSchedules.databaseId, databaseId)).run();
    const started = this.begin(database);
    const backup = started && (await started.done);
    const succeeded = backup?.status === "completed";
    // Read again: the schedule may have been changed or cleared while the backup ran.
    const current = this.rowOf(databaseId);
    if (!current) return;
    await this.applyRetention(database, current, succeeded);
    if (succeeded && current.verify && this.verify) await this.verify(database, backup);
  }

  /** Begins the scheduled backup, or records why it could not begin as a failed one. */
  private begin(database: DatabaseRow): { done: Promise<BackupView> } | null {
    if (database.status !== "running") {
      this.backups.recordFailure(database, "scheduled", `The scheduled backup did not run: the database is ${database.status}; start it so that the next runs can back it up`);
      return null;
    }
    try {
      return this.backups.begin(database, "scheduled", SYSTEM_ACTOR);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.backups.recordFailure(database, "scheduled", `The scheduled backup did not run: ${error.message}`);
      return null;
    }
  }

  /**
   * Deletes what the policy lets go: failed scheduled backups after every run, completed ones
   * only after a successful run. A backup being verified is left for a later run, and nothing is
   * deleted while an operation such as a restore holds the database, as it may be reading one.
   */
  private async applyRetention(database: DatabaseRow, policy: RetentionPolicy, succeeded: boolean) {
    if (this.service.operations.isBusy(database.id)) return;
    const rows = this.service.db.select().from(databaseBackups).where(eq(databaseBackups.databaseId, database.id)).all();
    const doomed = retentionDeletes(rows, policy, this.service.now(), succeeded);
    for (const row of rows) if (doomed.has(row.id) && !beingVerified(row)) await this.backups.remove(row);
  }
}
