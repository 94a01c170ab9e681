// Routes of /api/volumes/{volumeId}/backups, /restore(s) and /backup-schedule: validate, call
// ./backups, ./backup-restore and ./backup-schedules (made in src/http/context.ts), shape the envelope.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { auditActor, authPlugin } from "../http/auth";
import { recordAuditEvent } from "../audit/service";
import { ok } from "../http/envelope";
import { json, media, ref, responses, LIST_META } from "../http/responses";
import { backupScheduleBody, workspaceQuery } from "../databases/model";
import { VolumeBackupSchema, VolumeBackupScheduleSchema, VolumeRestoreSchema, volumeBackupParams, volumeRestoreBody, volumeRestoreParams } from "./backup-model";

const volumeIdParams = t.Object({ volumeId: t.String({ minLength: 1, maxLength: 64 }) });

const QUOTA =
  "The backup's file counts against the workspace's PLATFORM_QUOTA_DISK_MB as it is written: 409 `QUOTA_EXCEEDED`, with " +
  "nothing made, when the workspace has no room left; a file that grows past it is not kept (the backup fails saying so).";

function actorOf(principal: Parameters<typeof auditActor>[0]) {
  const actor = auditActor(principal);
  return { type: actor.type, id: actor.id };
}

export function volumeBackupRoutes(ctx: ServerContext) {
  const { backups, restores, schedules } = ctx.volumeBackups;
  return new Elysia({ prefix: "/api/volumes", tags: ["Volumes"] })
    .use(authPlugin(ctx))
    .onStop(() => schedules.stopAll())
    .post(
      "/:volumeId/backups",
      async ({ principal, params, set }) => {
        const backup = await backups.start(principal.workspaceId, params.volumeId, "manual");
        set.status = 202;
        return ok({ backup });
      },
      {
        auth: true,
        params: volumeIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "createVolumeBackup",
          responses: responses(
            { 202: json("Accepted: the archive is made in the background", { backup: ref(VolumeBackupSchema) }) },
            "NOT_FOUND", "BUSY", "BACKUP_IN_PROGRESS", "QUOTA_EXCEEDED",
          ),
          summary: "Back up a volume",
          description:
            "Answers 202 at once with `backup` in `running`; GET the backup until it is `completed` or `failed`. The engine " +
            "makes a tar of the volume's content (files, folders, symlinks, modes, owners) through a helper container that " +
            "mounts the volume and is never started: nothing of the app's runs. The tar is streamed through gzip to a file " +
            "whose SHA-256 is computed as it is written, copied to the S3 bucket when PLATFORM_BACKUP_S3_* is set, and only " +
            "then `completed`. The app keeps running: files it writes meanwhile are copied as they are at that moment (stop " +
            "it first for a consistent copy of a database file). An archive that moves no byte for " +
            "PLATFORM_BACKUP_IDLE_TIMEOUT_SECONDS, or runs past PLATFORM_VOLUME_BACKUP_TIMEOUT_SECONDS, fails. 409 " +
            "`BACKUP_IN_PROGRESS` while a backup of the volume runs, `BUSY` while a restore does. " +
            QUOTA,
        },
      },
    )
    .get(
      "/:volumeId/backups",
      ({ principal, params }) => {
        const list = backups.list(principal.workspaceId, params.volumeId);
        return ok({ backups: list, meta: { total: list.length } });
      },
      {
        auth: true,
        params: volumeIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "listVolumeBackups",
          responses: responses({ 200: json("The volume's backups, newest first", { backups: t.Array(ref(VolumeBackupSchema)), meta: ref(LIST_META) }) }, "NOT_FOUND"),
          summary: "List a volume's backups",
          description: "Answers `backups`, newest first: id, type, status, sizeBytes, sha256, archiveBytes, machineId, verification, copies...",
        },
      },
    )
    .get(
      "/:volumeId/backups/:backupId",
      ({ principal, params }) => ok({ backup: backups.get(principal.workspaceId, params.volumeId, params.backupId) }),
      {
        auth: true,
        params: volumeBackupParams,
        query: workspaceQuery,
        detail: {
          operationId: "getVolumeBackup",
          responses: responses({ 200: json("The backup", { backup: ref(VolumeBackupSchema) }) }, "NOT_FOUND"),
          summary: "Get a volume backup",
          description: "Answers `backup`: poll it after POST until its status is `completed` or `failed`, or after a verify until `verification.status` is `passed` or `failed`.",
        },
      },
    )
    .delete(
      "/:volumeId/backups/:backupId",
      async ({ principal, params }) => ok({ deleted: true, backup: await backups.delete(principal.workspaceId, params.volumeId, params.backupId) }),
      {
        auth: true,
        params: volumeBackupParams,
        query: workspaceQuery,
        detail: {
          operationId: "deleteVolumeBackup",
          responses: responses({ 200: json("Deleted", { deleted: t.Literal(true), backup: ref(VolumeBackupSchema) }) }, "NOT_FOUND", "BACKUP_NOT_READY", "VERIFY_IN_PROGRESS", "BUSY"),
          summary: "Delete a volume backup",
          description:
            "Deletes the backup's file, its remote copies and its entry; answers `deleted: true` and `backup` as it was. 409 " +
            "`BACKUP_NOT_READY` while it is running, `VERIFY_IN_PROGRESS` while it is verified, `BUSY` while a restore of the volume runs.",
        },
      },
    )
    .get(
      "/:volumeId/backups/:backupId/download",
      async ({ principal, params, request }) => {
        const download = await backups.download(principal.workspaceId, params.volumeId, params.backupId, request.headers.get("range"));
        // The auth plugin audits JSON answers only: a download (or a resumed range of one) is recorded here.
        const volume = backups.volume(principal.workspaceId, params.volumeId);
        const target = `${volume.name} (${volume.id}), backup ${params.backupId}`;
        recordAuditEvent(ctx.db, { workspaceId: principal.workspaceId, action: "volume.backup_downloaded", actor: auditActor(principal), target });
        return download;
      },
      {
        auth: true,
        params: volumeBackupParams,
        query: workspaceQuery,
        detail: {
          operationId: "downloadVolumeBackup",
          responses: responses(
            {
              200: media("The tar.gz file, as an attachment", "application/gzip", t.String({ format: "binary" })),
              206: media("The byte range asked for with `Range`", "application/gzip", t.String({ format: "binary" })),
            },
            "NOT_FOUND", "BACKUP_NOT_READY", "BACKUP_FILE_MISSING", "RANGE_NOT_SATISFIABLE",
          ),
          summary: "Download a volume backup",
          description:
            "Streams the `.tar.gz` file from disk (`tar -xzf` unpacks the volume's content), as database backups are: " +
            "`Content-Disposition: attachment`, `Content-Length`, one `Range` answered 206 (416 `RANGE_NOT_SATISFIABLE` " +
            "outside the file). Its SHA-256 is the backup's `sha256`. A file gone from the data dir is fetched back from the " +
            "S3 copy, else 410 `BACKUP_FILE_MISSING`. 409 `BACKUP_NOT_READY` unless `completed`. Each download is in the " +
            "audit log (`volume.backup_downloaded`).",
        },
      },
    )
    .post(
      "/:volumeId/backups/:backupId/verify",
      ({ principal, params, set }) => {
        const { backup } = backups.verify(principal.workspaceId, params.volumeId, params.backupId);
        set.status = 202;
        return ok({ backup });
      },
      {
        auth: true,
        params: volumeBackupParams,
        query: workspaceQuery,
        detail: {
          operationId: "verifyVolumeBackup",
          responses: responses({ 202: json("Accepted: the verify runs in the background", { backup: ref(VolumeBackupSchema) }) }, "NOT_FOUND", "BACKUP_NOT_READY", "VERIFY_IN_PROGRESS"),
          summary: "Verify a volume backup",
          description:
            "Reads the backup back: its file's size and SHA-256 against those recorded, its gzip stream, and the tar inside " +
            "walked entry by entry (each header's checksum) to its end-of-archive marker, counting files, directories, " +
            "symlinks and the files' bytes. Answers 202 with `backup` (its `verification` `running`); GET it until " +
            "`verification.status` is `passed` (the counts, `verifiedAt` set) or `failed` (`error` says what is wrong). " +
            "Nothing is restored and the volume is not touched. 409 `BACKUP_NOT_READY` unless `completed`, " +
            "`VERIFY_IN_PROGRESS` while this backup is verified.",
        },
      },
    )
    .post(
      "/:volumeId/restore",
      async ({ principal, params, body, set }) => {
        const { restore } = await restores.restore(principal.workspaceId, params.volumeId, body.backupId, actorOf(principal));
        set.status = 202;
        return ok({ restore });
      },
      {
        auth: true,
        params: volumeIdParams,
        body: volumeRestoreBody,
        query: workspaceQuery,
        detail: {
          operationId: "restoreVolume",
          responses: responses(
            { 202: json("Accepted: the backup checked out and is restored in the background", { restore: ref(VolumeRestoreSchema) }) },
            "NOT_FOUND", "BUSY", "BACKUP_IN_PROGRESS", "BACKUP_NOT_READY", "BACKUP_CORRUPT", "BACKUP_FILE_MISSING", "VOLUME_IN_USE",
          ),
          summary: "Restore a volume",
          description:
            "Replaces the volume's content with a completed backup of it, atomically. The backup's file is checked first " +
            "(size and SHA-256), else 422 `BACKUP_CORRUPT` and nothing changes. Answers 202 with `restore` (`pending` -> " +
            "`running` -> `succeeded` | `failed`; GET restores/{restoreId}). In the background: the app that mounts the " +
            "volume is stopped, a `pre-restore` backup of the old content is made, the archive is extracted by the engine " +
            "into a new engine volume, then the volume is switched to it and the app started again; the old engine volume " +
            "is removed once nothing mounts it. A restore that fails, or is cut off by a crash, leaves the old content in " +
            "use (the half-made volume is removed, at the next start for a crash) and starts the app again. 409 " +
            "`VOLUME_IN_USE` while a running container that is not the volume's app mounts it, `BUSY` while another " +
            "restore of it runs or its app is being built or deleted, `BACKUP_IN_PROGRESS` while a backup of it runs. An app " +
            "that was stopped stays stopped; its next start mounts the restored content.",
        },
      },
    )
    .get(
      "/:volumeId/restores",
      ({ principal, params }) => {
        const list = restores.list(principal.workspaceId, params.volumeId);
        return ok({ restores: list, meta: { total: list.length } });
      },
      {
        auth: true,
        params: volumeIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "listVolumeRestores",
          responses: responses({ 200: json("The volume's restores, newest first", { restores: t.Array(ref(VolumeRestoreSchema)), meta: ref(LIST_META) }) }, "NOT_FOUND"),
          summary: "List a volume's restores",
          description: "Answers `restores`, newest first, with their status and, for a failed one, why.",
        },
      },
    )
    .get(
      "/:volumeId/restores/:restoreId",
      ({ principal, params }) => ok({ restore: restores.get(principal.workspaceId, params.volumeId, params.restoreId) }),
      {
        auth: true,
        params: volumeRestoreParams,
        query: workspaceQuery,
        detail: {
          operationId: "getVolumeRestore",
          responses: responses({ 200: json("The restore", { restore: ref(VolumeRestoreSchema) }) }, "NOT_FOUND"),
          summary: "Get a volume restore",
          description: "Answers `restore`: poll it after POST restore until its status is `succeeded` or `failed`.",
        },
      },
    )
    .get(
      "/:volumeId/backup-schedule",
      ({ principal, params }) => ok({ schedule: schedules.get(principal.workspaceId, params.volumeId) }),
      {
        auth: true,
        params: volumeIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "getVolumeBackupSchedule",
          responses: responses({ 200: json("The schedule, or null when the volume has none", { schedule: t.Nullable(ref(VolumeBackupScheduleSchema)) }) }, "NOT_FOUND"),
          summary: "Read a volume's backup schedule",
          description: "Answers `schedule` (cron, keepLast, keepDailyDays, keepWeeklyWeeks, verify, nextRunAt, lastRunAt...), or `null` when the volume has none.",
        },
      },
    )
    .put(
      "/:volumeId/backup-schedule",
      ({ principal, params, body }) => ok({ schedule: schedules.set(principal.workspaceId, params.volumeId, body) }),
      {
        auth: true,
        params: volumeIdParams,
        body: backupScheduleBody,
        query: workspaceQuery,
        detail: {
          operationId: "setVolumeBackupSchedule",
          responses: responses({ 200: json("The schedule as set, its job started", { schedule: ref(VolumeBackupScheduleSchema) }) }, "NOT_FOUND", "INVALID_CRON"),
          summary: "Set a volume's backup schedule",
          description:
            "As for databases: creates or replaces the schedule whole (defaults keepLast 7, keepDailyDays 0, keepWeeklyWeeks 0, " +
            "verify false), times in UTC, 400 `INVALID_CRON` with croner's reason. Each run makes a `scheduled` backup (a run " +
            "that cannot, e.g. during a restore, is recorded as a `failed` scheduled backup saying why); after a completed run " +
            "retention deletes the completed scheduled backups none of keepLast, keepDailyDays and keepWeeklyWeeks keeps (never " +
            "a manual or pre-restore one, nor the newest verified one, nor one being verified, nor anything during a restore), " +
            "and only the newest keepLast failed scheduled ones are kept; with `verify` the new backup is then verified. A run " +
            "missed while the platform was down runs once at its start.",
        },
      },
    )
    .delete(
      "/:volumeId/backup-schedule",
      ({ principal, params }) => {
        const schedule = schedules.clear(principal.workspaceId, params.volumeId);
        return ok({ deleted: schedule !== null, schedule });
      },
      {
        auth: true,
        params: volumeIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "deleteVolumeBackupSchedule",
          responses: responses(
            { 200: json("Cleared", { deleted: t.Boolean({ description: "false: the volume had no schedule" }), schedule: t.Nullable(ref(VolumeBackupScheduleSchema)) }) },
            "NOT_FOUND",
          ),
          summary: "Clear a volume's backup schedule",
          description: "Stops the job and removes the schedule; backups already made stay. Answers `deleted` and the `schedule` removed (null when there was none).",
        },
      },
    );
}
