// Tables of the platform's single SQLite file. Timestamps are Unix milliseconds; the API turns
// them into ISO 8601 strings. After changing this file run `bun run db:generate` and add the new
// migration to src/db/migrations.ts so it is embedded in the binary.
import { sql } from "drizzle-orm";
import { sqliteTable, text, integer, real, index, uniqueIndex, primaryKey } from "drizzle-orm/sqlite-core";

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  /** Null for the owner that `platform keys create` makes before anyone has set a password. */
  passwordHash: text("password_hash"),
  createdAt: integer("created_at").notNull(),
});

export const workspaces = sqliteTable("workspaces", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  /** Its members' dashboard sessions must have two-factor sign-in set up (src/auth/two-factor). */
  twoFactorRequired: integer("two_factor_required", { mode: "boolean" }).notNull().default(false),
  createdAt: integer("created_at").notNull(),
});

export const memberships = sqliteTable(
  "memberships",
  {
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
    userId: text("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    role: text("role", { enum: ["owner", "admin", "member", "viewer"] }).notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.workspaceId, table.userId] }), index("memberships_user").on(table.userId)],
);

export const sessions = sqliteTable("sessions", {
  /** SHA-256 of the cookie value; the cookie itself is never stored. */
  tokenHash: text("token_hash").primaryKey(),
  userId: text("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
  activeWorkspaceId: text("active_workspace_id").references(() => workspaces.id, { onDelete: "set null" }),
  expiresAt: integer("expires_at").notNull(),
  createdAt: integer("created_at").notNull(),
});

/** A user's TOTP secret (RFC 6238): pending until a first code confirms it, then enabled. */
export const twoFactorSecrets = sqliteTable("two_factor_secrets", {
  userId: text("user_id").primaryKey().references(() => users.id, { onDelete: "cascade" }),
  /** The base32 secret, encrypted by the SecretBox (bound to the user id). */
  secretEncrypted: text("secret_encrypted").notNull(),
  /** Null while the enrolment waits for its first code. */
  enabledAt: integer("enabled_at"),
  /** The time step of the last code accepted: a code of it or earlier is never taken again. */
  lastUsedStep: integer("last_used_step"),
  createdAt: integer("created_at").notNull(),
});

/** Single-use recovery codes of an account with two-factor sign-in, stored as SHA-256. */
export const twoFactorRecoveryCodes = sqliteTable(
  "two_factor_recovery_codes",
  {
    codeHash: text("code_hash").primaryKey(),
    userId: text("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    usedAt: integer("used_at"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("two_factor_recovery_codes_user").on(table.userId)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
    userId: text("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    prefix: text("prefix").notNull(),
    /** The first characters of the key (prefix + 4), so a person can tell keys apart. */
    start: text("start"),
    /** SHA-256 (hex) of the full key; the key itself is never stored. */
    keyHash: text("key_hash").notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    remaining: integer("remaining"),
    refillAmount: integer("refill_amount"),
    refillIntervalSeconds: integer("refill_interval_seconds"),
    lastRefillAt: integer("last_refill_at"),
    expiresAt: integer("expires_at"),
    metadata: text("metadata", { mode: "json" }).$type<Record<string, unknown>>(),
    /**
     * Workspaces besides `workspaceId` the key may act in, chosen when it was made (each one its
     * user belonged to then, and must still belong to). Null: only its own workspace.
     */
    otherWorkspaceIds: text("other_workspace_ids", { mode: "json" }).$type<string[]>(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    lastUsedAt: integer("last_used_at"),
  },
  (table) => [uniqueIndex("api_keys_hash").on(table.keyHash), index("api_keys_workspace").on(table.workspaceId)],
);

export const invitations = sqliteTable(
  "invitations",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
    email: text("email").notNull(),
    role: text("role", { enum: ["admin", "member", "viewer"] }).notNull(),
    status: text("status", { enum: ["pending", "accepted", "canceled"] }).notNull(),
    invitedBy: text("invited_by").notNull(),
    expiresAt: integer("expires_at").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [index("invitations_workspace").on(table.workspaceId)],
);

export const auditEvents = sqliteTable(
  "audit_events",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
    action: text("action").notNull(),
    actorType: text("actor_type", { enum: ["user", "api_key", "cli", "anonymous"] }).notNull(),
    actorId: text("actor_id"),
    /** What the event is about, e.g. the key id or the invited email. */
    target: text("target"),
    clientAddress: text("client_address"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("audit_events_workspace_time").on(table.workspaceId, table.createdAt)],
);

// ---- apps ---------------------------------------------------------------------------------

export const apps = sqliteTable(
  "apps",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** `image`: deployed from a prebuilt image (src/apps/images), not built from source. */
    runtime: text("runtime", { enum: ["node", "bun", "python", "image"] }).notNull(),
    /** building, starting, running, stopped, failed, crashed, deleting: see src/apps/model.ts. */
    status: text("status").notNull(),
    statusReason: text("status_reason"),
    memoryMB: integer("memory_mb").notNull(),
    /** CPU limit in cores; null takes the platform default (PLATFORM_DEFAULT_CPUS). */
    cpus: real("cpus"),
    exposePort: integer("expose_port"),
    subdomain: text("subdomain").unique(),
    startupCommand: text("startup_command").notNull(),
    autoRestart: integer("auto_restart", { mode: "boolean" }).notNull(),
    autoDeploy: integer("auto_deploy", { mode: "boolean" }).notNull(),
    machineId: text("machine_id").notNull(),
    /** The build whose image the serving container runs. */
    currentBuildId: text("current_build_id"),
    /**
     * The build a release in progress is starting a container of; null once the release ends. Found
     * set at start, it names a release a platform restart interrupted (src/apps/recovery.ts).
     */
    releasingBuildId: text("releasing_build_id"),
    containerId: text("container_id"),
    /** Host port on 127.0.0.1 the serving container's exposed port is published on. */
    hostPort: integer("host_port"),
    /**
     * The port the serving container really listens on: `exposePort` as it was when that
     * container's release succeeded. The proxy routes here, whatever a later failed release asked.
     */
    servingPort: integer("serving_port"),
    /**
     * The public proxy's limits for this app (src/apps/rate-limits.ts): per client address (burst,
     * requests per second) and for the whole app. Null takes the platform default
     * (PLATFORM_PROXY_IP_*, PLATFORM_PROXY_HOST_*).
     */
    proxyClientBurst: integer("proxy_client_burst"),
    proxyClientRps: integer("proxy_client_rps"),
    proxyHostBurst: integer("proxy_host_burst"),
    proxyHostRps: integer("proxy_host_rps"),
    /** When the kept source tree was last edited through the file system API (src/apps/files). */
    filesChangedAt: integer("files_changed_at"),
    /** How images are built: auto, dockerfile (see src/apps/model.ts BUILDERS). */
    builder: text("builder").notNull().default("auto"),
    /** Plain HTTP requests are redirected to HTTPS once the app's host has a certificate. */
    httpsRedirect: integer("https_redirect", { mode: "boolean" }).notNull().default(true),
    /** HTTPS answers carry Strict-Transport-Security (opt-in: browsers remember it for a year). */
    hsts: integer("hsts", { mode: "boolean" }).notNull().default(false),
    /** The app's health check (src/apps/health/settings.ts), all its fields; null: the defaults (a TCP check). */
    healthCheck: text("health_check", { mode: "json" }).$type<{
      /** GET this path on the container; null: a TCP connect to its port is the check. */
      path: string | null;
      intervalSeconds: number;
      timeoutSeconds: number;
      healthyThreshold: number;
      unhealthyThreshold: number;
      startPeriodSeconds: number;
    }>(),
    /** `start-first` or `stop-first` (src/volumes); null: stop-first with volumes, else start-first. */
    releaseStrategy: text("release_strategy"),
    /** The repository a repository deploy clones (src/apps/repository); null for ZIP apps. */
    repoId: text("repo_id"),
    repoOwner: text("repo_owner"),
    repoName: text("repo_name"),
    repoBranch: text("repo_branch"),
    /** The app's root inside the repository ("" for the top). */
    repoPath: text("repo_path"),
    /** The GitHub App installation that grants access to a private repository. */
    repoInstallationId: text("repo_installation_id"),
    /** An access token for the repository, encrypted by the SecretBox. */
    repoTokenEncrypted: text("repo_token_encrypted"),
    /** The secret of the app's deploy-hook URL, encrypted by the SecretBox; null until one is made. */
    deployHookEncrypted: text("deploy_hook_encrypted"),
    /** The secret of the app's own GitHub webhook (POST /api/webhooks/github/{appId}), encrypted by the SecretBox; null until one is made. */
    webhookSecretEncrypted: text("webhook_secret_encrypted"),
    /** Image apps: the reference each deploy pulls (`ghcr.io/owner/app:1.4`, `name@sha256:…`); null for apps built from source. */
    image: text("image"),
    /** Image apps: `uid[:gid]` or a user name the container runs as; null: the image's own USER. */
    containerUser: text("container_user"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [uniqueIndex("apps_workspace_name").on(table.workspaceId, table.name)],
);

/**
 * GitHub App installations and the workspace each belongs to, bound through the App's setup flow
 * (src/git/installations.ts): only that workspace's apps use its tokens and get its pushes.
 */
export const githubInstallations = sqliteTable("github_installations", {
  installationId: text("installation_id").primaryKey(),
  workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
  /** Who came back from installing it with the workspace's signed state; null for a binding carried over from before the flow. */
  boundByUserId: text("bound_by_user_id"),
  boundAt: integer("bound_at").notNull(),
});

/**
 * Webhook deliveries accepted in the last day (src/webhooks/deliveries.ts), so that a replay is
 * ignored: by GitHub's delivery id, and by the body's digest (the id is not signed).
 */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    /** Whose webhook: an app id, or `github-app` for the GitHub App's own. */
    scope: text("scope").notNull(),
    deliveryId: text("delivery_id").notNull(),
    bodySha256: text("body_sha256").notNull(),
    receivedAt: integer("received_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.scope, table.deliveryId] }),
    index("webhook_deliveries_body").on(table.scope, table.bodySha256),
    index("webhook_deliveries_time").on(table.receivedAt),
  ],
);

export const appEnvVars = sqliteTable(
  "app_env_vars",
  {
    appId: text("app_id").notNull().references(() => apps.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** AES-256-GCM, see src/crypto/secrets.ts; the app id and the name are its associated data. */
    ciphertext: text("ciphertext").notNull(),
  },
  (table) => [primaryKey({ columns: [table.appId, table.name] })],
);

export const builds = sqliteTable(
  "builds",
  {
    id: text("id").primaryKey(),
    appId: text("app_id").notNull().references(() => apps.id, { onDelete: "cascade" }),
    /** queued, building, succeeded, failed, canceled: see src/apps/model.ts. */
    status: text("status").notNull(),
    trigger: text("trigger").notNull(),
    image: text("image"),
    /** When the image was removed to keep only the newest few per app (PLATFORM_APP_IMAGES_KEPT). */
    imageRemovedAt: integer("image_removed_at"),
    /** Image apps: the manifest digest the pull got (`repo@sha256:…`), which this build's image is. */
    imageDigest: text("image_digest"),
    /** Image apps: the engine names a pull in progress may leave, and the build's own tag once it is being made (JSON array): a restart's recovery takes them off a build it interrupted. */
    pendingImageNames: text("pending_image_names"),
    /** The commit a repository build was made from. */
    commitSha: text("commit_sha"),
    commitMessage: text("commit_message"),
    /** The earlier build a rollback released again. */
    rollbackOf: text("rollback_of"),
    error: text("error"),
    startedAt: integer("started_at").notNull(),
    finishedAt: integer("finished_at"),
  },
  (table) => [index("builds_app_time").on(table.appId, table.startedAt)],
);

/**
 * A workspace's login to an image registry (src/registries), sent with that workspace's pulls from
 * the host and nowhere else. The password (or token) is sealed by the SecretBox, the row id its
 * associated data, and never leaves the platform.
 */
export const registryCredentials = sqliteTable(
  "registry_credentials",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
    /** Host, with its port if any, as image references name it (`ghcr.io`, `registry.example.com:5000`); lowercase. */
    registry: text("registry").notNull(),
    username: text("username").notNull(),
    passwordEncrypted: text("password_encrypted").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [uniqueIndex("registry_credentials_workspace_registry").on(table.workspaceId, table.registry)],
);

/** Host names an app answers at besides its subdomain (src/apps/domains): one app each, platform-wide. */
/**
 * A workspace's claim on a host name for one of its apps (src/apps/domains). Several workspaces may
 * claim a name; only one claim per name is verified (its TXT record found), and only verified ones
 * route and get certificates.
 */
export const appDomains = sqliteTable(
  "app_domains",
  {
    id: text("id").primaryKey(),
    appId: text("app_id").notNull().references(() => apps.id, { onDelete: "cascade" }),
    /** The app's workspace, kept here so that the one-claim-per-workspace rule is an index. */
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
    /** Lowercase ASCII (an IDN as punycode), without a trailing dot. */
    domain: text("domain").notNull(),
    /** When the workspace's TXT record was found; null while pending. */
    verifiedAt: integer("verified_at"),
    /** The last TXT lookup, and what it found wrong (null: nothing, or not looked up yet). */
    checkedAt: integer("checked_at"),
    checkProblem: text("check_problem"),
    /** Whether the last lookup found the workspace's token; null: not looked up yet, or no answer. */
    recordPresent: integer("record_present", { mode: "boolean" }),
    /** When another workspace's proof took the verified name from this claim; null otherwise. */
    lostAt: integer("lost_at"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    uniqueIndex("app_domains_workspace_domain").on(table.workspaceId, table.domain),
    uniqueIndex("app_domains_verified_domain").on(table.domain).where(sql`${table.verifiedAt} IS NOT NULL`),
  ],
);

/** Each workspace's value of the TXT record that proves its domains; made with its first claim. */
export const domainVerificationTokens = sqliteTable("domain_verification_tokens", {
  workspaceId: text("workspace_id").primaryKey().references(() => workspaces.id, { onDelete: "cascade" }),
  token: text("token").notNull(),
  createdAt: integer("created_at").notNull(),
});

/** A verified domain removed lately: no other workspace may claim it before `reservedUntil`. */
export const domainReservations = sqliteTable("domain_reservations", {
  domain: text("domain").primaryKey(),
  workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
  reservedUntil: integer("reserved_until").notNull(),
});

/**
 * The certificate of each host the proxy serves over HTTPS (src/certificates): ordered by ACME or
 * uploaded. The PEM files are under the data dir; this row says what they hold and how ordering went.
 */
export const certificates = sqliteTable("certificates", {
  host: text("host").primaryKey(),
  /** acme, uploaded. */
  source: text("source").notNull(),
  /** The files' validity, null until the first certificate is in place. */
  notBefore: integer("not_before"),
  notAfter: integer("not_after"),
  /** The last failed order (the CA's words) and how many failed in a row; cleared by a success. */
  lastError: text("last_error"),
  lastAttemptAt: integer("last_attempt_at"),
  failures: integer("failures").notNull().default(0),
  /** No order before this time (backoff after failures). */
  nextAttemptAt: integer("next_attempt_at"),
  updatedAt: integer("updated_at").notNull(),
});

/** Edits of an app's source tree through the file system API: who, when, which paths. */
export const appFileChanges = sqliteTable(
  "app_file_changes",
  {
    id: text("id").primaryKey(),
    appId: text("app_id").notNull().references(() => apps.id, { onDelete: "cascade" }),
    /** create, write, mkdir, move, delete, bulk-rename: see src/apps/files/history.ts. */
    action: text("action").notNull(),
    /** JSON list of the paths changed (the first ones, when a bulk rename changed many). */
    paths: text("paths").notNull(),
    /** How many paths changed in all. */
    pathCount: integer("path_count").notNull(),
    actorType: text("actor_type").notNull(),
    actorId: text("actor_id"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("app_file_changes_app_time").on(table.appId, table.createdAt)],
);

// ---- databases ----------------------------------------------------------------------------

/**
 * A named engine volume holding an app's data (src/volumes): it outlives redeploys, restarts and the
 * app itself unless deleted on purpose. It lives on one machine; its app is placed where it is.
 */
export const volumes = sqliteTable(
  "volumes",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
    /** Unique in the workspace: lowercase letters, digits, dashes. */
    name: text("name").notNull(),
    /** The app it is mounted in; null when detached (its app deleted with the volume kept). */
    appId: text("app_id").references(() => apps.id, { onDelete: "set null" }),
    /** Absolute path inside the app's container; kept when detached, as the default for the next attach. */
    mountPath: text("mount_path").notNull(),
    /** The machine whose engine holds the volume. */
    machineId: text("machine_id").notNull(),
    /** The engine's name of the volume holding the content now (a restore swaps in a new one). */
    engineVolumeName: text("engine_volume_name").notNull(),
    /** Bytes used, as last measured (null before the first measure), and when. */
    sizeBytes: integer("size_bytes"),
    sizeMeasuredAt: integer("size_measured_at"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [uniqueIndex("volumes_workspace_name").on(table.workspaceId, table.name), index("volumes_app").on(table.appId)],
);

/** A backup of a volume's content: a tar made by the engine, gzipped, with its SHA-256 (src/volumes/backups.ts). */
export const volumeBackups = sqliteTable(
  "volume_backups",
  {
    id: text("id").primaryKey(),
    volumeId: text("volume_id").notNull().references(() => volumes.id, { onDelete: "cascade" }),
    workspaceId: text("workspace_id").notNull(),
    /** The machine whose engine held the volume when it was backed up. */
    machineId: text("machine_id").notNull(),
    /** manual, scheduled, pre-restore. */
    type: text("type").notNull(),
    /** running, completed, failed. */
    status: text("status").notNull(),
    /** Where the file is, relative to the backups folder of the data dir. */
    storageKey: text("storage_key").notNull(),
    /** Of the gzip file; 0 until its file is whole. */
    sizeBytes: integer("size_bytes").notNull(),
    /** Hex SHA-256 of the gzip file, computed while it was written. */
    sha256: text("sha256"),
    /** Of the tar inside, before compression. */
    archiveBytes: integer("archive_bytes"),
    error: text("error"),
    /** When a verify last passed. */
    verifiedAt: integer("verified_at"),
    /** JSON of the last verify: status, what the archive holds, error, timestamps. */
    verification: text("verification"),
    /** JSON list of the copies at remote destinations (src/backups/copies.ts). */
    copies: text("copies"),
    /** The restore that made it (a pre-restore backup). */
    operationId: text("operation_id"),
    createdAt: integer("created_at").notNull(),
    finishedAt: integer("finished_at"),
  },
  (table) => [index("volume_backups_volume").on(table.volumeId, table.createdAt)],
);

/** A restore of a volume (src/volumes/backup-restore.ts): pending -> running -> succeeded | failed. */
export const volumeRestores = sqliteTable("volume_restores", {
  id: text("id").primaryKey(),
  volumeId: text("volume_id").notNull().references(() => volumes.id, { onDelete: "cascade" }),
  workspaceId: text("workspace_id").notNull(),
  backupId: text("backup_id").notNull(),
  status: text("status").notNull(),
  error: text("error"),
  actorType: text("actor_type").notNull(),
  actorId: text("actor_id"),
  /** The engine volume that held the content before, and the one the backup is put into. */
  previousEngineVolumeName: text("previous_engine_volume_name").notNull(),
  newEngineVolumeName: text("new_engine_volume_name").notNull(),
  /** The app stopped for the restore, started again after it. */
  stoppedAppId: text("stopped_app_id"),
  /** When the previous engine volume was removed (once nothing used it after the swap). */
  previousRemovedAt: integer("previous_removed_at"),
  startedAt: integer("started_at").notNull(),
  finishedAt: integer("finished_at"),
});

/** A volume's backup schedule: the same cron and retention rules as databases' (src/backups/schedule-rules.ts). */
export const volumeBackupSchedules = sqliteTable("volume_backup_schedules", {
  volumeId: text("volume_id")
    .primaryKey()
    .references(() => volumes.id, { onDelete: "cascade" }),
  workspaceId: text("workspace_id").notNull(),
  cron: text("cron").notNull(),
  keepLast: integer("keep_last").notNull(),
  keepDailyDays: integer("keep_daily_days").notNull(),
  keepWeeklyWeeks: integer("keep_weekly_weeks").notNull(),
  verify: integer("verify", { mode: "boolean" }).notNull(),
  lastRunAt: integer("last_run_at"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const databases = sqliteTable(
  "databases",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    engine: text("engine", { enum: ["postgresql", "mysql", "mongodb", "redis"] }).notNull(),
    version: text("version").notNull(),
    /** provisioning, running, stopped, failed, deleting: see src/databases/model.ts. */
    status: text("status").notNull(),
    statusReason: text("status_reason"),
    memoryMB: integer("memory_mb").notNull(),
    /** CPU limit in cores; null takes the platform default (PLATFORM_DEFAULT_CPUS). */
    cpus: real("cpus"),
    storageGB: integer("storage_gb").notNull(),
    username: text("username").notNull(),
    /** AES-256-GCM, see src/crypto/secrets.ts; the database id is its associated data. */
    passwordCiphertext: text("password_ciphertext").notNull(),
    databaseName: text("database_name").notNull(),
    machineId: text("machine_id").notNull(),
    containerId: text("container_id"),
    volumeName: text("volume_name").notNull(),
    hostPort: integer("host_port"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [uniqueIndex("databases_workspace_name").on(table.workspaceId, table.name)],
);

export const databaseOperations = sqliteTable(
  "database_operations",
  {
    id: text("id").primaryKey(),
    databaseId: text("database_id").notNull().references(() => databases.id, { onDelete: "cascade" }),
    workspaceId: text("workspace_id").notNull(),
    /** create, start, stop, settings, rotate-password, delete, backup, restore, verify, upload. */
    type: text("type").notNull(),
    /** pending, running, succeeded, failed. */
    status: text("status").notNull(),
    error: text("error"),
    actorType: text("actor_type").notNull(),
    actorId: text("actor_id"),
    /** The backup the operation made, restored, verified or received. */
    backupId: text("backup_id"),
    startedAt: integer("started_at").notNull(),
    finishedAt: integer("finished_at"),
  },
  (table) => [index("database_operations_database_time").on(table.databaseId, table.startedAt)],
);

export const databaseBackups = sqliteTable(
  "database_backups",
  {
    id: text("id").primaryKey(),
    databaseId: text("database_id").notNull().references(() => databases.id, { onDelete: "cascade" }),
    workspaceId: text("workspace_id").notNull(),
    /** manual, scheduled, pre-restore, uploaded: see src/databases/backups.ts. */
    type: text("type").notNull(),
    /** running, completed, failed. */
    status: text("status").notNull(),
    /** Where the file is, relative to the backups folder of the data dir. */
    storageKey: text("storage_key").notNull(),
    /** Of the gzip file; 0 until completed. */
    sizeBytes: integer("size_bytes").notNull(),
    /** Hex SHA-256 of the gzip file, computed while it was written. */
    sha256: text("sha256"),
    engine: text("engine").notNull(),
    /** The image the dump was made with. */
    engineVersion: text("engine_version").notNull(),
    /** sql, rdb or archive: what the gzip holds. */
    format: text("format").notNull(),
    error: text("error"),
    /** When a verify last passed. */
    verifiedAt: integer("verified_at"),
    /** JSON of the last verify: status, counts, error, timestamps (src/databases/backup-verify.ts). */
    verification: text("verification"),
    /** JSON list of the copies at remote destinations (src/backups/copies.ts). */
    copies: text("copies"),
    /** The operation that made it (a pre-restore backup: its restore). */
    operationId: text("operation_id"),
    createdAt: integer("created_at").notNull(),
    finishedAt: integer("finished_at"),
  },
  (table) => [index("database_backups_database_time").on(table.databaseId, table.createdAt)],
);

/** At most one schedule per database (src/databases/backup-schedules.ts). */
export const databaseBackupSchedules = sqliteTable("database_backup_schedules", {
  databaseId: text("database_id")
    .primaryKey()
    .references(() => databases.id, { onDelete: "cascade" }),
  workspaceId: text("workspace_id").notNull(),
  /** croner expression, 5 or 6 fields. */
  cron: text("cron").notNull(),
  keepLast: integer("keep_last").notNull(),
  keepDailyDays: integer("keep_daily_days").notNull(),
  keepWeeklyWeeks: integer("keep_weekly_weeks").notNull(),
  verify: integer("verify", { mode: "boolean" }).notNull(),
  /** When the schedule last started a backup (a missed run is caught up at start from it). */
  lastRunAt: integer("last_run_at"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});
