// Routes of /api/databases: validate, call ./service (and its operation files), shape the envelope.
import { join } from "node:path";
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { json, ref, responses, LIST_META } from "../http/responses";
import {
  createDatabaseBody,
  DatabaseBackupSummarySchema,
  DatabaseSchema,
  DatabaseStatsSchema,
  databaseIdParams,
  deleteQuery,
  LIMITS,
  logsQuery,
  OperationSchema,
  rotatePasswordBody,
  settingsBody,
  workspaceQuery,
} from "./model";
import { DatabaseService } from "./service";
import { DatabaseBackups } from "./backups";
import { backupRoutes } from "./backup-routes";
import { DatabaseRestores } from "./backup-restore";
import { BackupVerifier } from "./backup-verify";
import { BackupUploads } from "./backup-upload";
import { BackupSchedules } from "./backup-schedules";
import { backupScheduleRoutes } from "./backup-schedule-routes";
import { actorOf, OPERATION, WITH_OPERATION } from "./route-parts";
import { BackupStorage } from "../backups/storage";
import { S3BackupCopies } from "../backups/copies";
import { deleteDatabase, startDatabase, stopDatabase, updateSettings } from "./lifecycle";
import { rotatePassword } from "./rotation";
import { MASKED_PASSWORD } from "./engines";
import { mayReadSecrets } from "../http/permissions";

const STATUSES =
  "Database `status`: `provisioning` (image being pulled, container being created or started, or the engine not answering yet), `running` " +
  "(the engine answered a real query with the credentials), `stopped`, `failed` (`statusReason` says why; POST start tries " +
  "again), `deleting`.";
const DATABASE_FIELDS =
  "`database`: id, name, engine, version, status, statusReason, memoryMB, cpus (the container's CPU limit), storageGB, username, databaseName, machineId, " +
  "host and port (published on PLATFORM_DB_BIND_ADDRESS, named by PLATFORM_PUBLIC_HOST), internalHost and internalPort " +
  "(the name is the database's alias on the workspace network its apps share), connectionString and " +
  "internalConnectionString (`postgresql://`, `mysql://`, `mongodb://...?authSource=admin`, `redis://`), createdAt, updatedAt. " +
  "The host port is chosen once at creation and kept across restarts and renames.";
const STORAGE =
  "`storageGB` is an allowance: Docker local volumes cannot enforce a size, so the volume's real use is measured " +
  "(`storage.usedBytes`, measured again once the last measure is 2 seconds old) and `storage.warning` is set once it is over the allowance.";

/** For roles that may not read secrets: the connection strings with `****` for the password. */
function withPasswordMasked<Database extends { connectionString: string | null; internalConnectionString: string }>(database: Database): Database {
  const mask = (connectionString: string) => {
    const url = new URL(connectionString);
    url.password = MASKED_PASSWORD;
    return url.toString();
  };
  return {
    ...database,
    connectionString: database.connectionString && mask(database.connectionString),
    internalConnectionString: mask(database.internalConnectionString),
  };
}

export function databasesRoutes(ctx: ServerContext) {
  const service = new DatabaseService({ db: ctx.db, machines: ctx.machines, secrets: ctx.secrets, config: ctx.config });
  ctx.reconciler.register(service.containerOwner());
  const backupStorage = new BackupStorage(join(ctx.config.dataDir, "backups"));
  const backupBucket = ctx.config.backups.s3;
  const backups = new DatabaseBackups(service, backupStorage, backupBucket ? new S3BackupCopies(backupBucket, backupStorage) : null, ctx.apps.disk);
  const restores = new DatabaseRestores(backups);
  const verifier = new BackupVerifier(backups, restores);
  ctx.reconciler.register(verifier.containerOwner());
  service.track(verifier.recoverInterrupted());
  const uploads = new BackupUploads(backups, ctx.config.backups.uploadMaxBytes);
  const schedules = new BackupSchedules(backups, (database, backup) => verifier.verify(database, backup));
  // Schedules start once interrupted backups are checked and interrupted restores finished: a run begun earlier would race
  // them. Restores are taken up whatever closing the backups came to (a full disk fails it); copies to S3 go on meanwhile.
  const backupsChecked = backups.closeInterrupted().catch((error) => console.error("[backups] closing the backups cut off at the last stop failed:", error));
  service.track(
    backupsChecked
      .then(() => restores.recoverInterrupted())
      .catch((error) => console.error("[restores] taking up the restores cut off at the last stop failed:", error))
      .finally(() => schedules.start()),
  );
  const withOperation = <T extends { operationId: string }>(result: T) => ({ ...result, operation: service.operations.get(result.operationId) });

  const routes = new Elysia({ prefix: "/api/databases", tags: ["Databases"] })
    .use(authPlugin(ctx))
    .post(
      "/",
      async ({ principal, body, set }) => {
        const created = await service.create(principal.workspaceId, body, actorOf(principal));
        set.status = 201;
        return ok(withOperation(created));
      },
      {
        auth: true,
        body: createDatabaseBody,
        query: workspaceQuery,
        detail: {
          operationId: "createDatabase",
          responses: responses(
            { 201: json("Created: the database is `provisioning`, the rest goes on in the background as its create operation", WITH_OPERATION) },
            "UNKNOWN_MACHINE", "NAME_TAKEN", "PORT_RANGE_EXHAUSTED", "QUOTA_EXCEEDED", "OPERATION_FAILED", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT",
          ),
          summary: "Create a database",
          description:
            "Creates a PostgreSQL, MySQL, MongoDB or Redis database: a named volume, a container of the engine's image on the " +
            "workspace network with the memory limit, and a host port from PLATFORM_DB_PORT_RANGE. Answers 201 at once, before " +
            `anything is made in Docker, with status \`provisioning\` and ${DATABASE_FIELDS} The connection string is complete ` +
            `already (the port is chosen up front) and carries the real password (masked only in lists, in DELETE's answer and for the \`viewer\` role). Then ${OPERATION} ` +
            "The image pull (minutes the first time), volumes, network, container and start continue in the background as that " +
            "operation. The status moves to `running` once the engine answers a query with the credentials; on any failure " +
            "(image unavailable, Docker refusing, the engine not coming up) to `failed` with `statusReason`, the operation " +
            "`failed` with the same error, and the container and volumes removed: POST start provisions again, DELETE " +
            "removes the database. Defaults: version postgresql 17, mysql 8.4, mongodb 8, redis 7; " +
            "memoryMB 512 (>= 256); storageGB 5 (>= 1); username `user_` + 8 random characters; password 32 random characters; " +
            "databaseName from the name. Image: the engine's PLATFORM_IMAGE_* setting; when it names the official image " +
            "(postgres, mysql, mongo, redis) its tag is replaced by `version`, otherwise the image is used as set. " +
            `${STORAGE} MySQL: the password is root's too. Redis: the username is an ACL user (\`default\` is switched off). ` +
            "Refused at once, with nothing kept: 409 `NAME_TAKEN` when a database or an app of the workspace has the name (both " +
            "answer to their names on the workspace network); 400 `UNKNOWN_MACHINE`; 409 `PORT_RANGE_EXHAUSTED` when every " +
            "port of PLATFORM_DB_PORT_RANGE is held by a database or in use on the host; 409 `QUOTA_EXCEEDED` when the " +
            "workspace is at PLATFORM_QUOTA_DATABASES, PLATFORM_QUOTA_DB_PORTS or would pass PLATFORM_QUOTA_MEMORY_MB (apps' " +
            "and databases' memoryMB together); `cpus` (0.1-16) limits the container, default PLATFORM_DEFAULT_CPUS; " +
            "409 `OPERATION_FAILED` when no port " +
            "can be published on PLATFORM_DB_BIND_ADDRESS; 503 `DOCKER_UNAVAILABLE` (with Retry-After) when the Docker engine " +
            "does not answer.",
        },
      },
    )
    .get(
      "/",
      ({ principal }) => {
        const databases = service.list(principal.workspaceId);
        return ok({ databases, meta: { total: databases.length } });
      },
      {
        auth: true,
        query: workspaceQuery,
        detail: {
          operationId: "listDatabases",
          responses: responses({ 200: json("The workspace's databases, connection strings masked", { databases: t.Array(ref(DatabaseSchema)), meta: ref(LIST_META) }) }),
          summary: "List databases",
          description:
            "Answers `databases` (fields as in GET one, without `storage`) with connection strings masked " +
            "(`postgresql://user:****@host:port/db`), and `meta.total`. Statuses are as last synced. " + STATUSES,
        },
      },
    )
    .get("/:databaseId", async ({ principal, params }) => {
      const database = await service.get(principal.workspaceId, params.databaseId);
      return ok({ database: mayReadSecrets(principal.role) ? database : withPasswordMasked(database), backups: schedules.summaryOf(database.id) });
    }, {
      auth: true,
      params: databaseIdParams,
      query: workspaceQuery,
      detail: {
        operationId: "getDatabase",
        responses: responses(
          { 200: json("The database, with `storage`, and how current its backups are", { database: ref(DatabaseSchema), backups: ref(DatabaseBackupSummarySchema) }) },
          "NOT_FOUND", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT",
        ),
        summary: "Get a database",
        description:
          `Reads the container first, so the status is live. ${DATABASE_FIELDS} The \`viewer\` role gets the connection strings masked. Plus \`storage\`: allowanceBytes, usedBytes, ` +
          `overAllowance, warning. ${STORAGE} ${STATUSES} Beside \`database\`, \`backups\`: lastCompletedAt (when the newest completed ` +
          "backup of any type was taken), `schedule` (as GET backup-schedule, or null) and `warning`, set when the database has a " +
          "schedule and its newest completed backup (with none: the schedule's creation) is older than twice the schedule's " +
          "interval (the gap between its next two runs).",
      },
    })
    .patch(
      "/:databaseId/settings",
      async ({ principal, params, body }) =>
        ok(withOperation(await updateSettings(service, principal.workspaceId, params.databaseId, body, actorOf(principal)))),
      {
        auth: true,
        params: databaseIdParams,
        body: settingsBody,
        query: workspaceQuery,
        detail: {
          operationId: "updateDatabaseSettings",
          responses: responses(
            { 200: json("Applied: the settings operation has finished", WITH_OPERATION) },
            "NOT_FOUND", "NAME_TAKEN", "QUOTA_EXCEEDED", "BUSY", "OPERATION_FAILED", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT",
          ),
          summary: "Change name, memory or CPUs",
          description:
            "`memoryMB` (>= 256) and `cpus` (0.1-16; null: PLATFORM_DEFAULT_CPUS) are applied to the running container at once, " +
            "without a restart (Redis' maxmemory follows). 409 `QUOTA_EXCEEDED` when more memory would pass PLATFORM_QUOTA_MEMORY_MB. " +
            "A new `name` is also the new alias on the workspace network; the host port and connection string stay as they are. " +
            "Answers `database` and " + OPERATION + " 409 `NAME_TAKEN` when a database or an app of the workspace has the name; " +
            "409 `BUSY` while another operation runs; 409 `OPERATION_FAILED` when Docker refuses the limit (e.g. below current use).",
        },
      },
    )
    .get("/:databaseId/stats", async ({ principal, params }) => ok({ stats: await service.stats(principal.workspaceId, params.databaseId) }), {
      auth: true,
      params: databaseIdParams,
      query: workspaceQuery,
      detail: {
        operationId: "getDatabaseStats",
        responses: responses({ 200: json("Live figures of the container", { stats: ref(DatabaseStatsSchema) }) }, "NOT_FOUND", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT"),
        summary: "Live container stats",
        description:
          "Answers `stats`: running (boolean), cpuPercent (percent of one CPU, like `docker stats`), memoryUsedBytes (without " +
          "reclaimable page cache), memoryLimitBytes, networkRxBytes and networkTxBytes (since the container started), " +
          "blockReadBytes, blockWriteBytes, pids, storageUsedBytes, storageAllowanceBytes, storageWarning. A stopped database " +
          "answers zeros with running false.",
      },
    })
    .get(
      "/:databaseId/logs",
      async ({ principal, params, query }) => {
        const lines = await service.logs(principal.workspaceId, params.databaseId, {
          tail: query.tail ?? LIMITS.logsTail.default,
          timestamps: query.timestamps ?? false,
        });
        return ok({ lines });
      },
      {
        auth: true,
        params: databaseIdParams,
        query: logsQuery,
        detail: {
          operationId: "getDatabaseLogs",
          responses: responses(
            { 200: json("The last lines of the engine's output (none when the container is gone)", { lines: t.Array(t.String()) }) },
            "NOT_FOUND", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT",
          ),
          summary: "Recent logs of the database process",
          description: "Answers `lines`, an array of strings (stdout and stderr interleaved), each prefixed with its RFC 3339 timestamp when `timestamps=true`. `tail` out of 1-2000 is 400.",
        },
      },
    )
    .post(
      "/:databaseId/start",
      ({ principal, params, set }) => {
        set.status = 202;
        return ok(withOperation(startDatabase(service, principal.workspaceId, params.databaseId, actorOf(principal))));
      },
      {
        auth: true,
        params: databaseIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "startDatabase",
          responses: responses({ 202: json("Accepted: the start goes on in the background", WITH_OPERATION) }, "NOT_FOUND", "BUSY"),
          summary: "Start a database",
          description:
            "Answers 202 at once with `database` (status `provisioning`) and " + OPERATION +
            " The status becomes `running` when the engine answers a query, else `failed`. A missing container is created again " +
            "on the kept volumes (after a failed create, which removed everything, on new ones), on the same host port.",
        },
      },
    )
    .post(
      "/:databaseId/stop",
      ({ principal, params, set }) => {
        set.status = 202;
        return ok(withOperation(stopDatabase(service, principal.workspaceId, params.databaseId, actorOf(principal))));
      },
      {
        auth: true,
        params: databaseIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "stopDatabase",
          responses: responses({ 202: json("Accepted: the stop goes on in the background", WITH_OPERATION) }, "NOT_FOUND", "BUSY"),
          summary: "Stop a database",
          description:
            "Answers 202 at once with `database` and " + OPERATION + " The engine is stopped cleanly in the background (data " +
            "kept on its volume): the status becomes `stopped` when the operation succeeds; when Docker fails the operation is " +
            "`failed` with the error and the status is left as it was. 409 `BUSY` while another operation runs.",
        },
      },
    )
    .delete(
      "/:databaseId",
      async ({ principal, params, query }) => {
        // Read before the database goes: its backups' rows go with it.
        const backupRows = backups.rowsOf(params.databaseId);
        const { database } = await deleteDatabase(service, principal.workspaceId, params.databaseId, actorOf(principal));
        schedules.forget(params.databaseId);
        await backups.forgetDatabase(params.databaseId, backupRows, query.keepBackups === true);
        return ok({ deleted: true, database });
      },
      {
        auth: true,
        params: databaseIdParams,
        query: deleteQuery,
        detail: {
          operationId: "deleteDatabase",
          responses: responses(
            { 200: json("Deleted", { deleted: t.Literal(true), database: ref(DatabaseSchema) }) },
            "NOT_FOUND", "BUSY", "OPERATION_FAILED", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT",
          ),
          summary: "Delete a database",
          description:
            "Removes the container and its volumes permanently, then the database and its operations history. Answers " +
            "`deleted: true` and `database` as it was (masked). Its backups go too; `keepBackups=true` keeps their files " +
            "under the data dir (`backups/<databaseId>/`), no longer listed. Its backup schedule stops and goes. An operation in " +
            "progress (a create, a verify, a restore...) is preempted: it is canceled and what it made is removed before the " +
            "answer. 409 `BUSY` only while another delete of it runs.",
        },
      },
    )
    .post(
      "/:databaseId/rotate-password",
      ({ principal, params, body, set }) => {
        set.status = 202;
        return ok(withOperation(rotatePassword(service, principal.workspaceId, params.databaseId, body?.password, actorOf(principal))));
      },
      {
        auth: true,
        params: databaseIdParams,
        body: rotatePasswordBody,
        query: workspaceQuery,
        detail: {
          operationId: "rotateDatabasePassword",
          responses: responses({ 202: json("Accepted: the rotation goes on in the background", WITH_OPERATION) }, "NOT_FOUND", "BUSY", "NOT_RUNNING"),
          summary: "Rotate the password",
          description:
            "Changes the password inside the engine (PostgreSQL ALTER ROLE; MySQL ALTER USER for the user and root at '%' and " +
            "'localhost'; Redis ACL SETUSER, kept in the config file read at start; MongoDB changeUserPassword). `password`: " +
            "8-128 printable ASCII characters without spaces, generated (32 characters) when absent. Answers 202 with `database` " +
            "(its connection strings still carry the current password) and " + OPERATION +
            " The operation succeeds once the new password works and the old one is refused; GET the database for the new " +
            "connection string. 409 `NOT_RUNNING` unless the database runs.",
        },
      },
    )
    .get(
      "/:databaseId/operations",
      ({ principal, params }) => {
        const operations = service.listOperations(principal.workspaceId, params.databaseId);
        return ok({ operations, meta: { total: operations.length } });
      },
      {
        auth: true,
        params: databaseIdParams,
        query: workspaceQuery,
        detail: {
          operationId: "listDatabaseOperations",
          responses: responses({ 200: json("The database's operations, newest first", { operations: t.Array(ref(OperationSchema)), meta: ref(LIST_META) }) }, "NOT_FOUND"),
          summary: "Operations history",
          description:
            "Answers `operations`, newest first: id, databaseId, type (`create`, `start`, `stop`, `settings`, `rotate-password`, " +
            "`delete`, `backup`, `restore`, `verify`, `upload`), status (`pending`, `running`, `succeeded`, `failed`), error, actor {type, id}, " +
            "backupId (the backup it made, restored, verified or received), startedAt, finishedAt. A restore cut off by a crash is failed " +
            "after the restart, and the database put back from its pre-restore backup by a `restore` operation of the `system` actor.",
        },
      },
    );

  return new Elysia()
    .use(routes)
    .use(backupRoutes(ctx, { backups, restores, uploads, verifier }, withOperation))
    .use(backupScheduleRoutes(ctx, schedules));
}
