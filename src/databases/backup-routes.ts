// Routes of /api/databases/{databaseId}/backups and /restore: validate, call ./backups (and the
// restore, upload and verify files beside it), shape the envelope.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { auditActor, authPlugin } from "../http/auth";
import { recordAuditEvent } from "../audit/service";
import { ok } from "../http/envelope";
import { json, media, ref, responses, LIST_META } from "../http/responses";
import { BackupSchema, backupIdParams, databaseIdParams, OperationSchema, restoreBody, workspaceQuery } from "./model";
import type { DatabaseBackups } from "./backups";
import type { DatabaseRestores } from "./backup-restore";
import type { BackupVerifier } from "./backup-verify";
import type { BackupUploads } from "./backup-upload";
import { actorOf, OPERATION, WITH_OPERATION } from "./route-parts";

const QUOTAS =
  "A backup's file counts against the workspace's PLATFORM_QUOTA_DISK_MB as it is written: 409 `QUOTA_EXCEEDED`, with " +
  "nothing made, when the workspace has no room left, and a file that grows past it is not kept (the backup fails, or the " +
  "upload answers 409, saying so). Manual and uploaded backups are also capped per database (PLATFORM_QUOTA_BACKUPS_PER_DATABASE, " +
  "409 `QUOTA_EXCEEDED` for the next one; delete older ones to make room); scheduled ones keep their schedule's retention.";

export interface BackupServices {
  backups: DatabaseBackups;
  restores: DatabaseRestores;
  uploads: BackupUploads;
  verifier: BackupVerifier;
}

export function backupRoutes(ctx: ServerContext, { backups, restores, uploads, verifier }: BackupServices, withOperation: <T extends { operationId: string }>(result: T) => T & { operation: unknown }) {
  return new Elysia({ prefix: "/api/databases", tags: ["Databases"] })
    .use(authPlugin(ctx))
    .post(
      "/:databaseId/backups",
      async ({ principal, params, set }) => {
        const backup = await backups.start(principal.workspaceId, params.databaseId, "manual", actorOf(principal));
        set.status = 202;
        return ok({ backup });
      },
      {
        auth: true,
        params: databaseIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "createDatabaseBackup",
          responses: responses({ 202: json("Accepted: the dump runs in the background", { backup: ref(BackupSchema) }) }, "NOT_FOUND", "NOT_RUNNING", "BUSY", "BACKUP_IN_PROGRESS", "QUOTA_EXCEEDED"),
          summary: "Back up a database",
          description:
            "Answers 202 at once with `backup` in `running`, like the other long operations; GET the backup until it is " +
            "`completed` or `failed`. The engine's own tool makes the dump inside the database's container (pg_dump, " +
            "mysqldump / mariadb-dump, mongodump --archive, a Redis RDB snapshot), streamed through gzip to a file whose " +
            "SHA-256 is computed as it is written. The backup is `completed` only when the tool exited 0 and its output is a " +
            "whole dump of that engine (its header and its end marker); otherwise `failed` with the reason, and no file is " +
            "kept. A `backup` operation is added to the history; the database stays usable meanwhile. 409 `NOT_RUNNING` unless " +
            "the database runs, `BACKUP_IN_PROGRESS` while a backup of it runs, `BUSY` while another operation holds it. " +
            QUOTAS,
        },
      },
    )
    .post(
      "/:databaseId/backups/upload",
      async ({ principal, params, request, set }) => {
        const backup = await uploads.receive(principal.workspaceId, params.databaseId, request, actorOf(principal));
        set.status = 201;
        return ok({ backup });
      },
      {
        auth: true,
        params: databaseIdParams,
        query: workspaceQuery,
        parse: "none",
        detail: {
          operationId: "uploadDatabaseBackup",
          requestBody: {
            required: true,
            description: "The dump: raw or gzip, as the body itself, or as the `file` field of a multipart/form-data form",
            content: {
              "application/octet-stream": { schema: { type: "string", format: "binary" } },
              "application/gzip": { schema: { type: "string", format: "binary" } },
              "multipart/form-data": { schema: { type: "object", required: ["file"], properties: { file: { type: "string", format: "binary" } } } },
            },
          },
          responses: responses(
            { 201: json("Created: the dump was received and checked; it can be restored", { backup: ref(BackupSchema) }) },
            "NOT_FOUND", "VALIDATION_FAILED", "PAYLOAD_TOO_LARGE", "INVALID_DUMP", "BUSY", "QUOTA_EXCEEDED",
          ),
          summary: "Upload a dump",
          description:
            "Imports a dump made elsewhere (moving in from another host) as an `uploaded` backup, which POST restore then " +
            "loads. The dump is what the platform's own backups hold: a plain SQL dump from pg_dump (not the custom format) " +
            "for PostgreSQL, from mysqldump / mariadb-dump for MySQL, a mongodump --archive for MongoDB, an RDB snapshot for " +
            "Redis; sent raw or gzipped (recognised by its first bytes), as the request body or as the `file` field of a " +
            "multipart form. It is streamed to disk, never held in memory, and answered within the request: 201 with the " +
            "backup `completed`, or 413 `PAYLOAD_TOO_LARGE` past PLATFORM_BACKUP_UPLOAD_MAX_MB, or 422 `INVALID_DUMP` when it " +
            "is not a whole dump of this database's engine (its tool's header and end marker are checked, as for the " +
            "platform's own dumps), saying why. Refused uploads stay listed as `failed` with the reason and keep no file. " +
            "An `upload` operation is in the history either way. The database need not be running. " +
            QUOTAS,
        },
      },
    )
    .get(
      "/:databaseId/backups",
      ({ principal, params }) => {
        const list = backups.list(principal.workspaceId, params.databaseId);
        return ok({ backups: list, meta: { total: list.length } });
      },
      {
        auth: true,
        params: databaseIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "listDatabaseBackups",
          responses: responses({ 200: json("The database's backups, newest first", { backups: t.Array(ref(BackupSchema)), meta: ref(LIST_META) }) }, "NOT_FOUND"),
          summary: "List backups",
          description: "Answers `backups`, newest first: id, type, status, sizeBytes, sha256, format, engine, verifiedAt, createdAt...",
        },
      },
    )
    .get(
      "/:databaseId/backups/:backupId",
      ({ principal, params }) => ok({ backup: backups.get(principal.workspaceId, params.databaseId, params.backupId) }),
      {
        auth: true,
        params: backupIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "getDatabaseBackup",
          responses: responses({ 200: json("The backup", { backup: ref(BackupSchema) }) }, "NOT_FOUND"),
          summary: "Get a backup",
          description: "Answers `backup`: poll it after POST until its status is `completed` or `failed`.",
        },
      },
    )
    .delete(
      "/:databaseId/backups/:backupId",
      async ({ principal, params }) => ok({ deleted: true, backup: await backups.delete(principal.workspaceId, params.databaseId, params.backupId) }),
      {
        auth: true,
        params: backupIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "deleteDatabaseBackup",
          responses: responses({ 200: json("Deleted", { deleted: t.Literal(true), backup: ref(BackupSchema) }) }, "NOT_FOUND", "BACKUP_NOT_READY"),
          summary: "Delete a backup",
          description:
            "Deletes the backup's file, its remote copies and its entry; answers `deleted: true` and `backup` as it was. " +
            "409 `BACKUP_NOT_READY` while it is running.",
        },
      },
    )
    .get(
      "/:databaseId/backups/:backupId/download",
      async ({ principal, params, request }) => {
        const download = await backups.download(principal.workspaceId, params.databaseId, params.backupId, request.headers.get("range"));
        // The auth plugin audits JSON answers only: a download (or a resumed range of one) is recorded here.
        const database = backups.service.find(principal.workspaceId, params.databaseId);
        const target = `${database.name} (${database.id}), backup ${params.backupId}`;
        recordAuditEvent(ctx.db, { workspaceId: principal.workspaceId, action: "database.backup_downloaded", actor: auditActor(principal), target });
        return download;
      },
      {
        auth: true,
        params: backupIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "downloadDatabaseBackup",
          responses: responses(
            {
              200: media("The gzip file, as an attachment", "application/gzip", t.String({ format: "binary" })),
              206: media("The byte range asked for with `Range`", "application/gzip", t.String({ format: "binary" })),
            },
            "NOT_FOUND", "BACKUP_NOT_READY", "BACKUP_FILE_MISSING", "RANGE_NOT_SATISFIABLE",
          ),
          summary: "Download a backup",
          description:
            "Streams the gzip file (`Content-Disposition: attachment`, `Content-Length`, `Accept-Ranges: bytes`) from disk, " +
            "with constant memory whatever its size. One `Range: bytes=a-b` (or `a-`, `-n`) is answered 206 with " +
            "`Content-Range`, to resume a download; a range outside the file is 416 `RANGE_NOT_SATISFIABLE` with " +
            "`Content-Range: bytes */size`. 409 `BACKUP_NOT_READY` unless the backup is `completed`. Each download (and " +
            "each resumed range) is recorded in the audit log (`database.backup_downloaded`, who, which database and backup).",
        },
      },
    )
    .post(
      "/:databaseId/restore",
      async ({ principal, params, body, set }) => {
        const restoring = await restores.restore(principal.workspaceId, params.databaseId, body.backupId, actorOf(principal));
        set.status = 202;
        return ok(withOperation(restoring));
      },
      {
        auth: true,
        params: databaseIdParams,
        body: restoreBody,
        query: workspaceQuery,
        detail: {
          operationId: "restoreDatabase",
          responses: responses(
            { 202: json("Accepted: the backup checked out, and is being restored in the background", WITH_OPERATION) },
            "NOT_FOUND", "NOT_RUNNING", "BUSY", "BACKUP_NOT_READY", "BACKUP_CORRUPT", "BACKUP_FILE_MISSING",
          ),
          summary: "Restore a backup",
          description:
            "Puts a completed backup of this database back, keeping its connection strings. The backup's file is checked " +
            "first, before anything is touched: its size and the SHA-256 recorded when it was written (which vouches for its " +
            "gzip stream), and its engine and format, else 422 `BACKUP_CORRUPT` (a backup of another database is 404 " +
            "`NOT_FOUND`; a file gone from the data dir is fetched back from the S3 copy, else 410 `BACKUP_FILE_MISSING`). " +
            "Then it answers 202 with `database` and " + OPERATION + " In the background: a `pre-restore` backup is made, " +
            "then the dump is loaded: PostgreSQL through psql in one transaction that only the dump's last bytes commit, " +
            "MySQL through mysql, MongoDB through mongorestore --drop, Redis by booting the stopped engine once from the " +
            "snapshot with AOF off, then turning AOF on (done once its rewrite has finished). When loading fails, the " +
            "pre-restore backup is loaded back and the operation fails saying so; a restore cut off by a crash is put back " +
            "from its pre-restore backup at the next start. 409 `NOT_RUNNING` unless the database runs, `BUSY` while another " +
            "operation runs.",
        },
      },
    )
    .post(
      "/:databaseId/backups/:backupId/verify",
      ({ principal, params, set }) => {
        const { backup, operationId } = verifier.start(principal.workspaceId, params.databaseId, params.backupId, actorOf(principal));
        set.status = 202;
        return ok(withOperation({ backup, operationId }));
      },
      {
        auth: true,
        params: backupIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "verifyDatabaseBackup",
          responses: responses(
            {
              202: json("Accepted: the verify runs in the background", {
                backup: ref(BackupSchema),
                operationId: t.String({ description: "The verify operation, in the history (GET operations)" }),
                operation: ref(OperationSchema),
              }),
            },
            "NOT_FOUND", "BACKUP_NOT_READY", "VERIFY_IN_PROGRESS", "BUSY",
          ),
          summary: "Verify a backup",
          description:
            "Restores a completed backup into a throwaway container of the database's image and counts what it holds. Answers " +
            "202 at once with `backup` (its `verification` `running`) and " + OPERATION + " In the background, as a `verify` " +
            "operation: the file's SHA-256 and gzip are checked first (a corrupt file fails the verify with the reason); then a " +
            "container with its own random password, its own volumes, no published port and no network is started, the dump is " +
            "loaded into it the way a restore loads it, and the engine counts exactly: rows per table (PostgreSQL `schema.table`, " +
            "MySQL), documents per collection (MongoDB), or `keys` over every numbered database (Redis). The container and its " +
            "volumes are removed whatever happens. GET the backup until `verification.status` is `passed` (with `checks` " +
            "[{name, count}] and `verifiedAt` set) or `failed` (with `error`). The database itself is never touched, and may be " +
            "stopped. 409 `BACKUP_NOT_READY` unless the backup is `completed`; `VERIFY_IN_PROGRESS` while a verify of any " +
            "backup of this database runs (each is a whole copy of the data with the database's memory); `BUSY` while another " +
            "operation holds the database. A verify cut off by a restart is `failed` as interrupted.",
        },
      },
    );
}
