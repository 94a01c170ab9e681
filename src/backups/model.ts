// What backups of any kind share (database dumps, volume archives): the record of a copy at a
// remote destination, the interface of those destinations (./copies.ts), and the settings of a
// backup schedule (./schedule-rules.ts).
import { t } from "elysia";
import type { Static } from "@sinclair/typebox";
import { oneOf, resource, timestamp } from "../http/responses";

export const COPY_STATUSES = ["uploading", "completed", "failed"] as const;

export const BackupCopySchema = resource(
  "BackupCopy",
  {
    destination: oneOf(["s3"] as const, "Where the copy is: `s3`, the PLATFORM_BACKUP_S3_* bucket"),
    location: t.String({ description: "`s3://bucket/key`" }),
    status: oneOf(COPY_STATUSES, "`uploading` -> `completed` (read back, checksum confirmed) | `failed`"),
    error: t.Nullable(t.String({ description: "Why the copy failed; never holds credentials" })),
    confirmedAt: t.Nullable(timestamp()),
  },
  "A copy of a backup's file at a remote destination.",
);

export type BackupCopy = Static<typeof BackupCopySchema>;

/**
 * Remote destinations that keep a copy of every backup's file (./copies.ts). A backup is
 * `completed` only once every destination has its copy with the checksum confirmed.
 */
export interface BackupDestinations {
  /** Copies the local file of `key` to every destination and reads each copy back to confirm `sha256`. */
  copy(key: string, sha256: string): Promise<BackupCopy[]>;
  /** Brings the file of `key` back from a completed copy when it is missing locally; false when no copy could. */
  fetchMissing(key: string, sha256: string, copies: BackupCopy[]): Promise<boolean>;
  /** Removes the copies (a backup deleted, or failed after some copies were made). */
  remove(copies: BackupCopy[]): Promise<void>;
}

export const SCHEDULE_LIMITS = {
  keepLast: { default: 7, min: 1, max: 1000 },
  keepDailyDays: { default: 0, min: 0, max: 3650 },
  keepWeeklyWeeks: { default: 0, min: 0, max: 520 },
};

const CRON_TEXT =
  "croner expression in UTC: 5 fields (minute hour day-of-month month day-of-week, e.g. `0 3 * * *`) or 6 with seconds first " +
  "(e.g. `*/30 * * * * *`), or a nickname (`@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`)";
const keepLast = t.Integer({ minimum: SCHEDULE_LIMITS.keepLast.min, maximum: SCHEDULE_LIMITS.keepLast.max, description: "The newest completed scheduled backups always kept (1-1000, default 7); also how many failed scheduled ones are kept" });
const keepDailyDays = t.Integer({ minimum: SCHEDULE_LIMITS.keepDailyDays.min, maximum: SCHEDULE_LIMITS.keepDailyDays.max, description: "Also keep the newest completed scheduled backup of each UTC calendar day of the last D days, today included (0-3650, default 0)" });
const keepWeeklyWeeks = t.Integer({ minimum: SCHEDULE_LIMITS.keepWeeklyWeeks.min, maximum: SCHEDULE_LIMITS.keepWeeklyWeeks.max, description: "Also keep the newest completed scheduled backup of each ISO week (Monday to Sunday, UTC) of the last W weeks, this one included (0-520, default 0)" });
const verify = t.Boolean({ description: "Verify each new scheduled backup once it has completed (default false)" });

export const backupScheduleBody = t.Object({
  cron: t.String({ minLength: 1, maxLength: 120, description: CRON_TEXT }),
  keepLast: t.Optional(keepLast),
  keepDailyDays: t.Optional(keepDailyDays),
  keepWeeklyWeeks: t.Optional(keepWeeklyWeeks),
  verify: t.Optional(verify),
});
export type BackupScheduleInput = typeof backupScheduleBody.static;

/** What a schedule answers, whatever it backs up. */
export const SCHEDULE_FIELDS = {
  cron: t.String({ description: CRON_TEXT }),
  keepLast,
  keepDailyDays,
  keepWeeklyWeeks,
  verify,
  nextRunAt: t.Nullable(timestamp("When it runs next")),
  lastRunAt: t.Nullable(timestamp("When a run last started (null until the first one)")),
};
