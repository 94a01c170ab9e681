// Routes of /api/databases/{databaseId}/backup-schedule: validate, call ./backup-schedules, shape
// the envelope. The jobs stop with the server.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { json, ref, responses } from "../http/responses";
import { BackupScheduleSchema, backupScheduleBody, databaseIdParams, workspaceQuery } from "./model";
import type { BackupSchedules } from "./backup-schedules";

const SCHEDULE_BEHAVIOUR =
  "Runs are made by the platform itself (operation actor `system`), times in UTC; a run that finds the previous one " +
  "still working is skipped. A run makes a `scheduled` backup; when the database is not running, or a backup or another " +
  "operation holds it, the run is recorded as a `failed` scheduled backup saying why, so a schedule never stops " +
  "silently. After a completed run, retention deletes (row, file and remote copies) the completed scheduled backups " +
  "that none of keepLast, keepDailyDays and keepWeeklyWeeks keeps, never the newest verified backup, never a " +
  "`manual`, `uploaded` or `pre-restore` one, nor one being verified, and nothing while a restore holds the database " +
  "(a later run trims instead). After every run only the newest keepLast failed scheduled backups are kept. Then, " +
  "with `verify`, the new backup is verified. " +
  "A run missed while the platform was down runs once at its start, however many were missed.";

export function backupScheduleRoutes(ctx: ServerContext, schedules: BackupSchedules) {
  return new Elysia({ prefix: "/api/databases", tags: ["Databases"] })
    .use(authPlugin(ctx))
    .onStop(() => schedules.stopAll())
    .get(
      "/:databaseId/backup-schedule",
      ({ principal, params }) => ok({ schedule: schedules.get(principal.workspaceId, params.databaseId) }),
      {
        auth: true,
        params: databaseIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "getDatabaseBackupSchedule",
          responses: responses({ 200: json("The schedule, or null when the database has none", { schedule: t.Nullable(ref(BackupScheduleSchema)) }) }, "NOT_FOUND"),
          summary: "Read the backup schedule",
          description:
            "Answers `schedule`: cron, keepLast, keepDailyDays, keepWeeklyWeeks, verify, nextRunAt, lastRunAt, createdAt, " +
            "updatedAt; `null` (still 200) when the database has no schedule.",
        },
      },
    )
    .put(
      "/:databaseId/backup-schedule",
      ({ principal, params, body }) => ok({ schedule: schedules.set(principal.workspaceId, params.databaseId, body) }),
      {
        auth: true,
        params: databaseIdParams,
        body: backupScheduleBody,
        query: workspaceQuery,
        detail: {
          operationId: "setDatabaseBackupSchedule",
          responses: responses({ 200: json("The schedule as set, its job started", { schedule: ref(BackupScheduleSchema) }) }, "NOT_FOUND", "INVALID_CRON"),
          summary: "Set the backup schedule",
          description:
            "Creates the database's schedule or replaces it whole: a setting left out takes its default (keepLast 7, " +
            "keepDailyDays 0, keepWeeklyWeeks 0, verify false), and the job restarts on the new expression. 400 " +
            `\`INVALID_CRON\` with croner's reason when the expression does not parse, is a date, or never fires. ${SCHEDULE_BEHAVIOUR}`,
        },
      },
    )
    .delete(
      "/:databaseId/backup-schedule",
      ({ principal, params }) => {
        const schedule = schedules.clear(principal.workspaceId, params.databaseId);
        return ok({ deleted: schedule !== null, schedule });
      },
      {
        auth: true,
        params: databaseIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "deleteDatabaseBackupSchedule",
          responses: responses(
            { 200: json("Cleared", { deleted: t.Boolean({ description: "false: the database had no schedule" }), schedule: t.Nullable(ref(BackupScheduleSchema)) }) },
            "NOT_FOUND",
          ),
          summary: "Clear the backup schedule",
          description:
            "Stops the job and removes the schedule; no scheduled run starts afterwards (one already working finishes). " +
            "Answers `deleted` and the `schedule` removed (null when there was none). Backups already made stay.",
        },
      },
    );
}
