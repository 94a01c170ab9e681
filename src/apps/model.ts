// Schemas, limits and status values of /api/apps.
import { t } from "elysia";
import { CONTAINER_CPUS } from "../config";
import { DEFAULT_RANGE_BYTES, MAX_RANGE_BYTES } from "./build-logs";

export const APP_STATUSES = {
  building: "an image is being built from the uploaded source (the previous container, if any, keeps serving)",
  starting: "a new container is starting and the platform waits for it to accept TCP on its port (the previous one, if any, keeps serving)",
  running: "serving; after a failed redeploy the app stays running on its previous build and statusReason says why",
  stopping: "a stop was accepted: work in progress is cancelled and the container is being stopped",
  stopped: "stopped by a user",
  failed: "nothing serves: the first deploy or a start failed (build error, crash, or never listened); statusReason and the build log say why",
  crashed: "the container exited on its own and was not restarted",
  deleting: "being removed",
} as const;
export type AppStatus = keyof typeof APP_STATUSES;
/** Statuses in which the app's container serves and its subdomain routes to it (a release may be building or starting its successor). */
export const SERVING_STATUSES = new Set<string>(["running", "building", "starting"]);

export const BUILD_STATUSES = ["queued", "building", "succeeded", "failed", "canceled"] as const;
export type BuildStatus = (typeof BUILD_STATUSES)[number];
/** Build statuses whose work may still be going on. */
export const UNFINISHED_BUILD_STATUSES: BuildStatus[] = ["queued", "building"];

/** Fields whose change restarts the app (a new container; runtime and startupCommand also rebuild). */
export const RESTARTING_FIELDS = ["runtime", "memoryMB", "cpus", "startupCommand", "exposePort"] as const;

export const MEMORY_MB = { minimum: 64, maximum: 16384 };
export const DEFAULT_EXPOSE_PORT = 3000;
export const NAME_PATTERN = "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$";
/** A DNS label: what a subdomain must be. */
export const SUBDOMAIN_PATTERN = "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$";
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const MAX_ENV_VARS = 200;
export const MAX_ENV_VALUE_BYTES = 32 * 1024;
export const MAX_STARTUP_COMMAND = 1000;

const runtime = t.Union([t.Literal("node"), t.Literal("bun"), t.Literal("python")]);
const memoryMB = t.Integer({ ...MEMORY_MB, description: `Memory limit in MB (${MEMORY_MB.minimum}-${MEMORY_MB.maximum})` });
/** CPUs of a container (Docker's NanoCpus / 1e9); null: PLATFORM_DEFAULT_CPUS. */
const cpus = t.Number({ ...CONTAINER_CPUS, description: `CPUs the container may use (${CONTAINER_CPUS.minimum}-${CONTAINER_CPUS.maximum}, e.g. 0.5); null: the platform default (PLATFORM_DEFAULT_CPUS)` });
const exposePort = t.Integer({ minimum: 1, maximum: 65535, description: "Port the app listens on; given to it as PORT (default 3000)" });
const subdomain = t.String({ pattern: SUBDOMAIN_PATTERN, description: "DNS label, unique across the platform" });
const startupCommand = t.String({ minLength: 1, maxLength: MAX_STARTUP_COMMAND, description: "`auto` or a command run with `sh -c` in the app's container" });

export const settingsBody = t.Object({
  name: t.Optional(t.String({ pattern: NAME_PATTERN, description: "Lowercase letters, digits and dashes" })),
  runtime: t.Optional(runtime),
  memoryMB: t.Optional(memoryMB),
  cpus: t.Optional(t.Nullable(cpus)),
  startupCommand: t.Optional(startupCommand),
  exposePort: t.Optional(t.Nullable(exposePort)),
  subdomain: t.Optional(t.Nullable(subdomain)),
  autoRestart: t.Optional(t.Boolean()),
});

export const envBody = t.Object({ envVars: t.Record(t.String(), t.String()) });
export const appIdParams = t.Object({ appId: t.String({ minLength: 1, maxLength: 64 }) });
export const buildParams = t.Object({ appId: t.String({ minLength: 1, maxLength: 64 }), buildId: t.String({ minLength: 1, maxLength: 64 }) });
/** A byte range of a build log: `offset`/`limit`, or without `offset` the last `limit` bytes. */
export const buildLogQuery = t.Object({
  offset: t.Optional(t.Integer({ minimum: 0, description: "First byte of the log to return; omit for the end of the log" })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: MAX_RANGE_BYTES, default: DEFAULT_RANGE_BYTES, description: "Bytes to return at most (default 256 KiB, at most 1 MiB)" })),
  workspaceId: t.Optional(t.String()),
  organizationId: t.Optional(t.String()),
});
export const logsQuery = t.Object({
  tail: t.Optional(t.Integer({ minimum: 0, maximum: 5000, default: 100 })),
  timestamps: t.Optional(t.Boolean({ default: false })),
  follow: t.Optional(t.Boolean({ default: false })),
  workspaceId: t.Optional(t.String()),
  organizationId: t.Optional(t.String()),
});
