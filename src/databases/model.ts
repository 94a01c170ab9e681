// Request schemas and the documented vocabulary of /api/databases: the status values of a
// database and of its operations, the limits of the spec's table, and the strict patterns that
// keep quoting tricks away from engines and shells.
import { t } from "elysia";
import { CONTAINER_CPUS } from "../config";
import { oneOf, ref, resource, timestamp } from "../http/responses";
import { ENGINE_NAMES } from "./engines";
import { BackupCopySchema, SCHEDULE_FIELDS } from "../backups/model";

/**
 * provisioning: the container is being created or started and the engine does not answer yet;
 * running: the engine answered a real query with the credentials; stopped: stopped on request;
 * failed: provisioning failed, the engine did not come up, or the container exited on its own
 * (`statusReason` says why; POST start tries again); deleting: being removed.
 */
export const DATABASE_STATUSES = ["provisioning", "running", "stopped", "failed", "deleting"] as const;
export type DatabaseStatus = (typeof DATABASE_STATUSES)[number];

/** Operation rows move pending -> running -> succeeded | failed. */
export const OPERATION_STATUSES = ["pending", "running", "succeeded", "failed"] as const;
export type OperationStatus = (typeof OPERATION_STATUSES)[number];
export const OPERATION_TYPES = ["create", "start", "stop", "settings", "rotate-password", "delete", "backup", "restore", "verify", "upload"] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

export const LIMITS = {
  memoryMB: { default: 512, min: 256, max: 262_144 },
  cpus: { min: CONTAINER_CPUS.minimum, max: CONTAINER_CPUS.maximum },
  storageGB: { default: 5, min: 1, max: 65_536 },
  password: { min: 8, max: 128 },
  logsTail: { default: 100, min: 1, max: 2000 },
};

/** A DNS label: the name is also the database's alias on the workspace network. */
export const NAME_PATTERN = "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$";
export const IDENTIFIER_PATTERN = "^[a-z_][a-z0-9_]{0,62}$";
export const VERSION_PATTERN = "^[0-9A-Za-z_][0-9A-Za-z._-]{0,31}$";
/** Printable ASCII without spaces. */
export const PASSWORD_PATTERN = `^[!-~]{${LIMITS.password.min},${LIMITS.password.max}}$`;

const name = t.String({
  pattern: NAME_PATTERN,
  description: "1-63 lowercase letters, digits and dashes, not starting or ending with a dash; unique in the workspace",
});
const memoryMB = t.Integer({
  minimum: LIMITS.memoryMB.min,
  maximum: LIMITS.memoryMB.max,
  description: `Memory limit of the container in MB (>= ${LIMITS.memoryMB.min})`,
});
const cpus = t.Number({
  minimum: LIMITS.cpus.min,
  maximum: LIMITS.cpus.max,
  description: `CPUs the container may use (${LIMITS.cpus.min}-${LIMITS.cpus.max}, e.g. 0.5); null or omitted: the platform default (PLATFORM_DEFAULT_CPUS)`,
});
const password = t.String({
  pattern: PASSWORD_PATTERN,
  description: `${LIMITS.password.min}-${LIMITS.password.max} printable ASCII characters, no spaces`,
});

export const createDatabaseBody = t.Object({
  name,
  engine: t.Union(
    ENGINE_NAMES.map((engine) => t.Literal(engine)),
    { description: `one of ${ENGINE_NAMES.join(", ")}` },
  ),
  version: t.Optional(
    t.String({ pattern: VERSION_PATTERN, description: "Engine version, the image tag (default: postgresql 17, mysql 8.4, mongodb 8, redis 7)" }),
  ),
  memoryMB: t.Optional(memoryMB),
  cpus: t.Optional(t.Nullable(cpus)),
  storageGB: t.Optional(
    t.Integer({
      minimum: LIMITS.storageGB.min,
      maximum: LIMITS.storageGB.max,
      description: "Storage allowance in GB (>= 1), recorded and measured; Docker local volumes cannot enforce it",
    }),
  ),
  username: t.Optional(t.String({ pattern: IDENTIFIER_PATTERN, description: "Lowercase letters, digits and _, not starting with a digit; generated when omitted" })),
  password: t.Optional(password),
  databaseName: t.Optional(
    t.String({ pattern: IDENTIFIER_PATTERN, description: "Lowercase letters, digits and _, not starting with a digit; derived from the name when omitted" }),
  ),
  machineId: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "A machine from GET /api/machines/; default: automatic choice" })),
});
export type CreateDatabaseInput = typeof createDatabaseBody.static;

export const settingsBody = t.Object(
  { name: t.Optional(name), memoryMB: t.Optional(memoryMB), cpus: t.Optional(t.Nullable(cpus)) },
  { minProperties: 1, description: "At least one of name, memoryMB, cpus" },
);
export type SettingsInput = typeof settingsBody.static;

export const rotatePasswordBody = t.Optional(
  t.Object({ password: t.Optional(password) }),
);

/** Accepted on every route: the workspace to act in (see src/http/auth.ts). */
const workspaceFields = { workspaceId: t.Optional(t.String()), organizationId: t.Optional(t.String()) };
export const workspaceQuery = t.Object(workspaceFields);

export const databaseIdParams = t.Object({ databaseId: t.String({ minLength: 1, maxLength: 64 }) });
export const restoreBody = t.Object({ backupId: t.String({ minLength: 1, maxLength: 64, description: "A completed backup of this database" }) });
export const backupIdParams = t.Object({ databaseId: t.String({ minLength: 1, maxLength: 64 }), backupId: t.String({ minLength: 1, maxLength: 64 }) });

export const logsQuery = t.Object({
  tail: t.Optional(t.Integer({ minimum: LIMITS.logsTail.min, maximum: LIMITS.logsTail.max, description: "Lines from the end, 1-2000, default 100" })),
  timestamps: t.Optional(t.Boolean({ description: "Prefix each line with the engine's RFC 3339 timestamp; default false" })),
  ...workspaceFields,
});

export const deleteQuery = t.Object({
  keepBackups: t.Optional(t.Boolean({ description: "Keep the database's backups (default false: they are deleted with it)" })),
  ...workspaceFields,
});

// What /api/databases answers: named schemas of the OpenAPI document (src/http/responses.ts).

/** The meaning of each status, for the document. */
export const DATABASE_STATUS_TEXT =
  "`provisioning`: image being pulled, container being created or started, or the engine not answering yet; `running`: " +
  "the engine answered a real query with the credentials; `stopped`: stopped on request; `failed`: `statusReason` says " +
  "why, POST start tries again; `deleting`: being removed";

const connectionString = (description: string) =>
  t.String({
    format: "uri",
    description: `${description}: \`postgresql://\`, \`mysql://\`, \`mongodb://...?authSource=admin\`, \`redis://\`. ` +
      "The password is `****` where it is masked (lists, DELETE, and every answer to the `viewer` role)",
  });

export const DatabaseStorageSchema = resource(
  "DatabaseStorage",
  {
    allowanceBytes: t.Integer({ minimum: 0, description: "storageGB in bytes" }),
    usedBytes: t.Nullable(t.Integer({ minimum: 0, description: "What the volumes use, measured again once the last measure is 2 seconds old; null when Docker does not know yet" })),
    overAllowance: t.Boolean(),
    warning: t.Nullable(t.String({ description: "Set once the use is over the allowance: the volume cannot be capped" })),
  },
  "The storage of a database: its allowance (Docker local volumes cannot enforce a size) and the measured use of its volumes.",
);

export const DatabaseSchema = resource(
  "Database",
  {
    id: t.String(),
    name: t.String({ pattern: NAME_PATTERN, description: "Also the database's alias on the workspace network" }),
    engine: oneOf(ENGINE_NAMES),
    version: t.String({ description: "The image tag" }),
    status: oneOf(DATABASE_STATUSES, DATABASE_STATUS_TEXT),
    statusReason: t.Nullable(t.String({ description: "Why the database is in its status, when it is not the obvious one (a failed create or start, an engine that exited)" })),
    memoryMB: t.Integer({ description: "Memory limit of the container in MB" }),
    cpus: t.Number({ description: "The CPU limit of its container: its own, or PLATFORM_DEFAULT_CPUS" }),
    storageGB: t.Integer({ minimum: 1, description: "Storage allowance in GB, measured, not enforced" }),
    username: t.String(),
    databaseName: t.String(),
    machineId: t.String(),
    host: t.String({ description: "Where the host port is published: PLATFORM_PUBLIC_HOST (bound on PLATFORM_DB_BIND_ADDRESS)" }),
    port: t.Nullable(t.Integer({ minimum: 1, maximum: 65535, description: "The host port, chosen once at creation and kept across restarts and renames" })),
    internalHost: t.String({ description: "The host name the workspace's apps use on their network: the database's name" }),
    internalPort: t.Integer({ minimum: 1, maximum: 65535, description: "The engine's port on the workspace network" }),
    connectionString: t.Nullable(connectionString("From outside, through host and port (null while no host port is known)")),
    internalConnectionString: connectionString("From the workspace's apps, through internalHost and internalPort"),
    createdAt: timestamp(),
    updatedAt: timestamp(),
    storage: t.Optional(ref(DatabaseStorageSchema)),
  },
  "A database of a workspace. `storage` is in GET one only.",
);

export const DatabaseStatsSchema = resource(
  "DatabaseStats",
  {
    running: t.Boolean({ description: "false: the container is not running, and the live figures are zeros" }),
    cpuPercent: t.Number({ minimum: 0, description: "Percent of one CPU, like `docker stats`" }),
    memoryUsedBytes: t.Integer({ minimum: 0, description: "Without reclaimable page cache" }),
    memoryLimitBytes: t.Integer({ minimum: 0 }),
    networkRxBytes: t.Integer({ minimum: 0, description: "Since the container started" }),
    networkTxBytes: t.Integer({ minimum: 0, description: "Since the container started" }),
    blockReadBytes: t.Integer({ minimum: 0 }),
    blockWriteBytes: t.Integer({ minimum: 0 }),
    pids: t.Integer({ minimum: 0 }),
    storageUsedBytes: t.Nullable(t.Integer({ minimum: 0, description: "As `storage.usedBytes` of the database" })),
    storageAllowanceBytes: t.Integer({ minimum: 0 }),
    storageWarning: t.Nullable(t.String()),
  },
  "Live figures of a database's container, and its storage.",
);

export const OperationActorSchema = resource(
  "OperationActor",
  {
    type: oneOf(["user", "api_key", "system"] as const, "`system`: the platform itself (a backup schedule's run, a restore finished after a restart)"),
    id: t.Nullable(t.String({ description: "The user's or the API key's id; null for `system`" })),
  },
  "Who asked for an operation.",
);

export const OperationSchema = resource(
  "Operation",
  {
    id: t.String(),
    databaseId: t.String(),
    type: oneOf(OPERATION_TYPES),
    status: oneOf(OPERATION_STATUSES, "`pending` -> `running` -> `succeeded` | `failed`"),
    error: t.Nullable(t.String({ description: "Why it failed" })),
    actor: ref(OperationActorSchema),
    backupId: t.Nullable(t.String({ description: "The backup it made (backup, upload), restored (restore) or verified (verify)" })),
    startedAt: timestamp(),
    finishedAt: t.Nullable(timestamp()),
  },
  "One operation on a database, in its history. One database runs one operation at a time; a `backup` runs beside the others.",
);

/** manual: asked for through the API; scheduled: by the database's schedule; pre-restore: made by a restore first; uploaded: sent in. */
export const BACKUP_TYPES = ["manual", "scheduled", "pre-restore", "uploaded"] as const;
export type BackupType = (typeof BACKUP_TYPES)[number];
/** running -> completed | failed; see src/databases/backups.ts. */
export const BACKUP_STATUSES = ["running", "completed", "failed"] as const;
export type BackupStatus = (typeof BACKUP_STATUSES)[number];

export const VERIFY_STATUSES = ["running", "passed", "failed"] as const;
export type VerifyStatus = (typeof VERIFY_STATUSES)[number];

export const BackupVerificationSchema = resource(
  "BackupVerification",
  {
    status: oneOf(VERIFY_STATUSES, "`running` -> `passed` | `failed`"),
    checks: t.Array(
      t.Object({
        name: t.String({ description: "A table (`schema.table` for PostgreSQL), a collection, or `keys` for Redis" }),
        count: t.Integer({ minimum: 0, description: "Its rows, documents or keys after the restore" }),
      }),
      { description: "What the restored copy held" },
    ),
    error: t.Nullable(t.String({ description: "Why it failed" })),
    startedAt: timestamp(),
    finishedAt: t.Nullable(timestamp()),
  },
  "The last verify of a backup: restored into a throwaway container of the same image, then counted.",
);

export const BackupSchema = resource(
  "Backup",
  {
    id: t.String(),
    databaseId: t.String(),
    type: oneOf(BACKUP_TYPES, "`manual`: asked for through the API; `pre-restore`: made by a restore before it loads anything"),
    status: oneOf(BACKUP_STATUSES, "`running` -> `completed` | `failed`: completed only when the dump tool exited 0 and its output is a whole dump"),
    storageKey: t.String({ description: "Where the file is kept, under the platform's backups folder" }),
    sizeBytes: t.Integer({ minimum: 0, description: "Size of the gzip file; 0 until completed" }),
    sha256: t.Nullable(t.String({ pattern: "^[0-9a-f]{64}$", description: "SHA-256 of the gzip file, hex; null until completed" })),
    format: oneOf(["sql", "rdb", "archive"] as const, "What the gzip holds: plain SQL (PostgreSQL, MySQL), a Redis RDB snapshot, a mongodump archive"),
    engine: oneOf(ENGINE_NAMES),
    engineVersion: t.String({ description: "The image the dump was made with" }),
    error: t.Nullable(t.String({ description: "Why it failed" })),
    verifiedAt: t.Nullable(timestamp("When a verify of it last passed")),
    verification: t.Nullable(ref(BackupVerificationSchema)),
    copies: t.Array(ref(BackupCopySchema), { description: "Its copies at remote destinations; empty when none is configured" }),
    createdAt: timestamp(),
    finishedAt: t.Nullable(timestamp()),
  },
  "A backup of a database: the engine's own dump, gzipped, with its checksum.",
);

// Backup schedules (src/databases/backup-schedules.ts).

export { SCHEDULE_LIMITS, backupScheduleBody, type BackupScheduleInput } from "../backups/model";

export const BackupScheduleSchema = resource(
  "BackupSchedule",
  {
    databaseId: t.String(),
    ...SCHEDULE_FIELDS,
    createdAt: timestamp("When the database first got a schedule"),
    updatedAt: timestamp("When the schedule was last set"),
  },
  "When a database is backed up on its own, and which of those `scheduled` backups are kept.",
);

export const DatabaseBackupSummarySchema = resource(
  "DatabaseBackupSummary",
  {
    lastCompletedAt: t.Nullable(timestamp("createdAt of the newest completed backup of any type; null when none")),
    schedule: t.Nullable(ref(BackupScheduleSchema)),
    warning: t.Nullable(
      t.String({ description: "Set when the database has a schedule and its newest completed backup (or, with none, the schedule itself) is older than twice the schedule's interval" }),
    ),
  },
  "How current the database's backups are, in GET one database.",
);

export const DATABASE_RESOURCES = [
  DatabaseSchema, DatabaseStorageSchema, DatabaseStatsSchema, OperationSchema, OperationActorSchema, BackupSchema, BackupVerificationSchema, BackupCopySchema,
  BackupScheduleSchema, DatabaseBackupSummarySchema,
];
