// Request schemas and the documented vocabulary of /api/databases: the status values of a
// database and of its operations, the limits of the spec's table, and the strict patterns that
// keep quoting tricks away from engines and shells.
import { t } from "elysia";
import type { TSchema } from "@sinclair/typebox";
import { CONTAINER_CPUS } from "../config";
import { ENGINE_NAMES } from "./engines";

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
export const OPERATION_TYPES = ["create", "start", "stop", "settings", "rotate-password", "delete"] as const;
export type OperationType = (typeof OPERATION_TYPES)[number] | "backup" | "restore";

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

export const logsQuery = t.Object({
  tail: t.Optional(t.Integer({ minimum: LIMITS.logsTail.min, maximum: LIMITS.logsTail.max, description: "Lines from the end, 1-2000, default 100" })),
  timestamps: t.Optional(t.Boolean({ description: "Prefix each line with the engine's RFC 3339 timestamp; default false" })),
  ...workspaceFields,
});

export const deleteQuery = t.Object({
  keepBackups: t.Optional(t.Boolean({ description: "Keep the database's backups (default false: they are deleted with it)" })),
  ...workspaceFields,
});

export const DATABASE_RESOURCES: (TSchema & { title: string })[] = [];
