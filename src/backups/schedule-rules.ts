// Rules every backup schedule follows, whatever it backs up (databases, volumes): cron
// expressions read by croner in UTC, and retention (`retentionPlan`, pure): which scheduled
// backups a policy lets go.
import { Cron } from "croner";
import { ApiError } from "../http/errors";
import { SCHEDULE_LIMITS, type BackupScheduleInput } from "./model";

export const CRON_OPTIONS = { mode: "5-or-6-parts", timezone: "UTC" } as const;
const DAY_MS = 86_400_000;

// ---- retention (pure) ---------------------------------------------------------------------

export interface RetentionPolicy {
  keepLast: number;
  keepDailyDays: number;
  keepWeeklyWeeks: number;
}

/** What retention reads of a backup (a database_backups or volume_backups row fits). */
export interface RetentionCandidate {
  id: string;
  type: string;
  status: string;
  createdAt: number;
  verifiedAt: number | null;
}

/** The backups retention would delete: completed scheduled ones (only after a successful run) and failed scheduled ones. */
export interface RetentionPlan {
  completed: string[];
  failed: string[];
}

/** Days since 1970-01-01, UTC. */
const dayOf = (time: number) => Math.floor(time / DAY_MS);
/** ISO weeks run Monday to Sunday; 1970-01-01 was a Thursday, three days into its week. */
const weekOf = (time: number) => Math.floor((dayOf(time) + 3) / 7);

/**
 * Which backups of one database (or volume) a schedule's policy lets go, `now` deciding the calendar. Only
 * `scheduled` backups are ever candidates; of the completed ones it keeps the newest `keepLast`,
 * the newest of each UTC day of the last `keepDailyDays` days and of each ISO week of the last
 * `keepWeeklyWeeks` weeks (the current day and week included), and the newest verified backup of
 * the database. Of the failed ones it keeps the newest `keepLast`. Running ones are never touched.
 */
export function retentionPlan(backups: readonly RetentionCandidate[], policy: RetentionPolicy, now: number): RetentionPlan {
  const newestFirst = [...backups].sort((a, b) => b.createdAt - a.createdAt);
  const scheduled = newestFirst.filter((backup) => backup.type === "scheduled");
  const completed = scheduled.filter((backup) => backup.status === "completed");
  const kept = new Set(completed.slice(0, policy.keepLast).map((backup) => backup.id));
  keepNewestPerPeriod(completed, dayOf, dayOf(now) - policy.keepDailyDays, kept);
  keepNewestPerPeriod(completed, weekOf, weekOf(now) - policy.keepWeeklyWeeks, kept);
  const newestVerified = newestFirst.find((backup) => backup.status === "completed" && backup.verifiedAt !== null);
  if (newestVerified) kept.add(newestVerified.id);
  return {
    completed: completed.filter((backup) => !kept.has(backup.id)).map((backup) => backup.id),
    failed: scheduled.filter((backup) => backup.status === "failed").slice(policy.keepLast).map((backup) => backup.id),
  };
}

/** What a run deletes: the failed scheduled backups the plan lets go after every run, the completed ones only after a successful run. */
export function retentionDeletes(backups: readonly RetentionCandidate[], policy: RetentionPolicy, now: number, succeeded: boolean): Set<string> {
  const plan = retentionPlan(backups, policy, now);
  return new Set([...plan.failed, ...(succeeded ? plan.completed : [])]);
}

/** Adds to `kept` the newest backup of each period after `firstPeriodOut`. */
function keepNewestPerPeriod(newestFirst: RetentionCandidate[], periodOf: (time: number) => number, firstPeriodOut: number, kept: Set<string>) {
  const covered = new Set<number>();
  for (const backup of newestFirst) {
    const period = periodOf(backup.createdAt);
    if (period <= firstPeriodOut || covered.has(period)) continue;
    covered.add(period);
    kept.add(backup.id);
  }
}

// ---- cron expressions ---------------------------------------------------------------------

/** Croner's reading of an expression, paused (a job without a function runs nothing); 400 INVALID_CRON with croner's reason. */
export function parsedCron(expression: string): Cron {
  let cron: Cron;
  try {
    cron = new Cron(expression, { ...CRON_OPTIONS, paused: true });
  } catch (error) {
    throw new ApiError("INVALID_CRON", `The cron expression is not valid: ${(error as Error).message}`);
  }
  // croner reads a string with a colon as a date to run once at: a schedule repeats.
  if (cron.getOnce() !== null) throw new ApiError("INVALID_CRON", "The cron expression is a date; a schedule needs a repeating expression such as `0 3 * * *`");
  if (cron.nextRun() === null) throw new ApiError("INVALID_CRON", "The cron expression never fires (e.g. a day that no month has)");
  return cron;
}

/** The next run times of a stored (so valid) expression. */
export function upcomingRuns(expression: string, count: number): Date[] {
  return new Cron(expression, { ...CRON_OPTIONS, paused: true }).nextRuns(count);
}

/** The gap between the expression's next two runs, in ms; null when it has fewer than two. */
export function intervalOf(expression: string): number | null {
  const [next, after] = upcomingRuns(expression, 2);
  return next && after ? after.getTime() - next.getTime() : null;
}

// ---- stored settings ----------------------------------------------------------------------

/** A schedule's settings as stored, from `input` (omitted settings take their defaults); 400 INVALID_CRON for a bad expression. */
export function scheduleSettingsOf(input: BackupScheduleInput, now: number) {
  const cron = input.cron.trim();
  parsedCron(cron);
  return {
    cron,
    keepLast: input.keepLast ?? SCHEDULE_LIMITS.keepLast.default,
    keepDailyDays: input.keepDailyDays ?? SCHEDULE_LIMITS.keepDailyDays.default,
    keepWeeklyWeeks: input.keepWeeklyWeeks ?? SCHEDULE_LIMITS.keepWeeklyWeeks.default,
    verify: input.verify ?? false,
    updatedAt: now,
  };
}

/** What every schedule answers of its stored row, with its next run. */
export function scheduleFieldsOf(row: ReturnType<typeof scheduleSettingsOf> & { lastRunAt: number | null; createdAt: number }) {
  const [nextRunAt] = upcomingRuns(row.cron, 1);
  return {
    cron: row.cron,
    keepLast: row.keepLast,
    keepDailyDays: row.keepDailyDays,
    keepWeeklyWeeks: row.keepWeeklyWeeks,
    verify: row.verify,
    nextRunAt: nextRunAt?.toISOString() ?? null,
    lastRunAt: row.lastRunAt === null ? null : new Date(row.lastRunAt).toISOString(),
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}
