// Schemas, limits and status values of /api/apps.
import { t } from "elysia";
import { CertificateStatusSchema } from "../certificates/model";
import { CONTAINER_CPUS } from "../config";
import { DEFAULT_RANGE_BYTES, MAX_RANGE_BYTES } from "./build-logs";
import { oneOf, ref, resource, timestamp } from "../http/responses";
import { AppHealthSchema, HealthCheckSchema, HealthProbeSchema, healthCheckInput } from "./health/settings";
import { appVolumesField, releaseStrategyInput, volumeMountsInput } from "../volumes/model";

export const APP_STATUSES = {
  building: "an image is being built from the uploaded source (the previous container, if any, keeps serving)",
  starting: "a new container is starting and the platform waits for it to accept TCP on its port (the previous one, if any, keeps serving)",
  running: "serving; after a failed redeploy the app stays running on its previous build and statusReason says why",
  unhealthy: "serving, but its health check failed `unhealthyThreshold` times in a row (statusReason: the last probe); `running` again once it passes, restarted with backoff when autoRestart is on",
  "crash-loop": "its container exited PLATFORM_CRASH_LOOP_EXITS times within PLATFORM_CRASH_LOOP_MINUTES (statusReason: the last exit code and output); the platform keeps restarting it at the longest backoff, and it is `running` again once it stays up that long or after a start, restart or redeploy",
  stopping: "a stop was accepted: work in progress is cancelled and the container is being stopped",
  stopped: "stopped by a user",
  failed: "nothing serves: the first deploy or a start failed (build error, crash, or never listened); statusReason and the build log say why",
  crashed: "the container exited on its own and was not restarted (autoRestart off)",
  deleting: "being removed",
} as const;
export type AppStatus = keyof typeof APP_STATUSES;
/** Statuses in which the app's container serves and its subdomain routes to it (a release may be building or starting its successor). */
export const SERVING_STATUSES = new Set<string>(["running", "unhealthy", "crash-loop", "building", "starting"]);

export const BUILD_STATUSES = ["queued", "building", "succeeded", "failed", "canceled"] as const;
export type BuildStatus = (typeof BUILD_STATUSES)[number];
/** Build statuses whose work may still be going on. */
export const UNFINISHED_BUILD_STATUSES: BuildStatus[] = ["queued", "building"];

/** How an app's image is made from its source. */
export const BUILDERS = {
  auto: "the platform's own plan for the detected runtime; the source's Dockerfile when nothing is detected",
  dockerfile: "the source's Dockerfile (at the app's root), built with the same limits and run with the same hardening",
} as const;
export type BuilderSetting = keyof typeof BUILDERS;
const BUILDER_TEXT = Object.entries(BUILDERS).map(([name, meaning]) => `\`${name}\`: ${meaning}`).join("; ");
const builder = oneOf(Object.keys(BUILDERS) as BuilderSetting[], BUILDER_TEXT);
/** The same values as a request body field: typebox compiles literals, not the answer's enum. */
const builderInput = t.Union([t.Literal("auto"), t.Literal("dockerfile")], { description: BUILDER_TEXT });

/** Fields whose change restarts the app (a new container; runtime, startupCommand and builder also rebuild). */
export const RESTARTING_FIELDS = ["runtime", "memoryMB", "cpus", "startupCommand", "exposePort", "builder", "volumes"] as const;

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
/** An image app's user: a uid or a name of the usual portable characters, and optionally `:` a gid or a group name; empty: the image's own. */
export const CONTAINER_USER_PATTERN = "^(?:|(?:\\d{1,10}|[a-z_][a-z0-9_-]{0,31})(?::(?:\\d{1,10}|[a-z_][a-z0-9_-]{0,31}))?)$";
/** The largest uid or gid (32 bits). */
export const MAX_CONTAINER_ID = 4294967295;
export const containerUserInput = t.Nullable(
  t.Union([
    t.String({ pattern: CONTAINER_USER_PATTERN, description: "Image apps: the user the container runs as (`uid`, `uid:gid`, `name`, `name:group`, `uid:group`, `name:gid`); empty or null: the image's own USER" }),
    t.Integer({ minimum: 0, maximum: MAX_CONTAINER_ID, description: "A uid as a number" }),
  ]),
);
const startupCommand = t.String({ minLength: 1, maxLength: MAX_STARTUP_COMMAND, description: "`auto` or a command run with `sh -c` in the app's container" });

/** Bounds of each of an app's own limits at the public proxy. */
export const PROXY_RATE_LIMIT = { minimum: 1, maximum: 1_000_000 };
/**
 * The limits an app may set for itself at the public proxy (settings `rateLimits`): what each
 * means, and the platform setting it overrides with that setting's default (a unit test holds
 * these defaults to src/config).
 */
export const PROXY_RATE_LIMIT_FIELDS = {
  clientBurst: { meaning: "Requests one client address may send the app at once (the size of its bucket)", setting: "PLATFORM_PROXY_IP_BURST", platformDefault: 200 },
  clientRps: { meaning: "Requests per second one client address may keep sending the app (its bucket's refill)", setting: "PLATFORM_PROXY_IP_RPS", platformDefault: 100 },
  hostBurst: { meaning: "Requests the app may get at once from all its clients together (the size of the app's bucket)", setting: "PLATFORM_PROXY_HOST_BURST", platformDefault: 2000 },
  hostRps: { meaning: "Requests per second the app may keep getting from all its clients together (its bucket's refill)", setting: "PLATFORM_PROXY_HOST_RPS", platformDefault: 1000 },
} as const;
type ProxyRateLimitField = keyof typeof PROXY_RATE_LIMIT_FIELDS;

const overrideField = (field: ProxyRateLimitField) => {
  const { meaning, setting, platformDefault } = PROXY_RATE_LIMIT_FIELDS[field];
  return t.Nullable(t.Integer({ ...PROXY_RATE_LIMIT, description: `${meaning}, ${PROXY_RATE_LIMIT.minimum}-${PROXY_RATE_LIMIT.maximum}; null: the platform's ${setting} (${platformDefault} unless set)` }));
};

const rateLimits = t.Nullable(
  t.Object({
    clientBurst: t.Optional(overrideField("clientBurst")),
    clientRps: t.Optional(overrideField("clientRps")),
    hostBurst: t.Optional(overrideField("hostBurst")),
    hostRps: t.Optional(overrideField("hostRps")),
  }, { minProperties: 1 }), // else Elysia turns a number or a string into {}, a change of nothing
  {
    description:
      "The app's own rate limits at the public proxy, in place of the platform's: at least one of the fields, or null. A field left out keeps its value, " +
      "a null field goes back to the platform default, and `rateLimits: null` to all of them. They apply from the " +
      "next request through the proxy: nothing restarts. A client over a limit gets 429 with `Retry-After` and " +
      "`RateLimit-Policy` showing the app's numbers.",
  },
);

export const settingsBody = t.Object({
  name: t.Optional(t.String({ pattern: NAME_PATTERN, description: "Lowercase letters, digits and dashes" })),
  runtime: t.Optional(runtime),
  memoryMB: t.Optional(memoryMB),
  cpus: t.Optional(t.Nullable(cpus)),
  startupCommand: t.Optional(startupCommand),
  exposePort: t.Optional(t.Nullable(exposePort)),
  subdomain: t.Optional(t.Nullable(subdomain)),
  autoRestart: t.Optional(t.Boolean()),
  autoDeploy: t.Optional(t.Boolean({ description: "Repository apps: a push to the branch (POST /api/webhooks/github) starts a deploy" })),
  builder: t.Optional(builderInput),
  rateLimits: t.Optional(rateLimits),
  httpsRedirect: t.Optional(t.Boolean({ description: "Plain HTTP requests get a 308 to HTTPS once a certificate serves the host (default true; ACME challenges are never redirected)" })),
  hsts: t.Optional(t.Boolean({ description: "HTTPS answers carry `Strict-Transport-Security: max-age=31536000` (default false: browsers remember it for a year)" })),
  healthCheck: t.Optional(healthCheckInput),
  volumes: t.Optional(volumeMountsInput),
  releaseStrategy: t.Optional(t.Nullable(releaseStrategyInput)),
  user: t.Optional(containerUserInput),
});

const zipFile = t.String({ format: "binary", contentMediaType: "application/zip", description: "The app's source as a ZIP" });

/** The deploy upload (multipart/form-data, read by src/http/multipart.ts and ./deploy-form.ts): documentation only. */
export const deployForm = t.Object({
  file: zipFile,
  name: t.String({ pattern: NAME_PATTERN, description: "Lowercase letters, digits and dashes. A name that exists in the workspace releases a new version of that app" }),
  runtime,
  memoryMB,
  cpus: t.Optional(cpus),
  startupCommand: t.Optional(t.String({ maxLength: MAX_STARTUP_COMMAND, description: "Omit or `auto` to detect; else one line run with `sh -c`" })),
  envVars: t.Optional(t.String({ description: "A JSON object of names to values, as text" })),
  exposePort: t.Optional(exposePort),
  subdomain: t.Optional(t.String({ pattern: SUBDOMAIN_PATTERN, description: "Default: the name, or the name with a suffix when taken" })),
  autoRestart: t.Optional(t.Boolean({ default: true })),
  builder: t.Optional(builderInput),
  healthCheck: t.Optional(t.String({ description: "The health check as JSON text, e.g. `{\"path\":\"/health\"}`: fields left out take their defaults (see HealthCheck)" })),
  machineId: t.Optional(t.String({ default: "local", description: "Default: the machine of the volumes it lists, else `local`" })),
  volumes: t.Optional(t.String({ description: `${volumeMountsInput.description} As JSON text: \`[{"name": "data", "mountPath": "/app/data"}]\`` })),
  releaseStrategy: t.Optional(releaseStrategyInput),
});

/** The inspect-env upload (multipart/form-data): documentation only. */
export const inspectForm = t.Object({ file: zipFile });

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
export const deleteAppQuery = t.Object({
  deleteVolumes: t.Optional(t.Boolean({ description: "Delete the app's volumes and their content too (default false: they are kept, detached)" })),
  workspaceId: t.Optional(t.String()),
  organizationId: t.Optional(t.String()),
});
export const redeployQuery = t.Object({
  source: t.Optional(t.Union([t.Literal("repository"), t.Literal("files")], { description: "`repository`: the branch head (repository apps only; their default); `files`: the kept source tree (the default of ZIP apps)" })),
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

// What /api/apps answers: named schemas of the OpenAPI document (src/http/responses.ts).

const rateLimitField = (field: ProxyRateLimitField) => t.Integer({ minimum: 0, description: PROXY_RATE_LIMIT_FIELDS[field].meaning });

export const AppRateLimitOverridesSchema = resource(
  "AppRateLimitOverrides",
  {
    clientBurst: overrideField("clientBurst"),
    clientRps: overrideField("clientRps"),
    hostBurst: overrideField("hostBurst"),
    hostRps: overrideField("hostRps"),
  },
  "An app's own limits at the public proxy, as its settings set them: a null field takes the platform default.",
);

export const AppRateLimitsSchema = resource(
  "AppRateLimits",
  { clientBurst: rateLimitField("clientBurst"), clientRps: rateLimitField("clientRps"), hostBurst: rateLimitField("hostBurst"), hostRps: rateLimitField("hostRps") },
  "The limits the public proxy applies to an app: its own where its settings set one, else the platform's.",
);

export const RepositorySchema = resource(
  "Repository",
  {
    id: t.String({ description: "The repository's id at its host, as given at deploy" }),
    owner: t.String(),
    name: t.String(),
    branch: t.String(),
    path: t.String({ description: "The app's root inside the repository; empty for the top" }),
    repoHostInstallationId: t.Nullable(t.String({ description: "The GitHub App installation that grants access, when private" })),
    hasAccessToken: t.Boolean({ description: "An access token is stored (encrypted) for the repository; it is never shown" }),
    url: t.String({ description: "Where it is cloned from: PLATFORM_GIT_BASE_URL/owner/name.git" }),
  },
  "The repository a repository deploy clones, and the branch it follows.",
);

export const AppSchema = resource(
  "App",
  {
    id: t.String(),
    name: t.String({ pattern: NAME_PATTERN }),
    runtime: oneOf(["node", "bun", "python", "image"] as const, "`image`: deployed from a prebuilt image (POST /api/apps/deploy-image)"),
    image: t.Nullable(t.String({ description: "Image apps: the reference each deploy pulls; null for apps built from source" })),
    user: t.Nullable(t.String({ description: "Image apps: the user its container runs as (`uid[:gid]` or a name); null: the image's own USER" })),
    status: oneOf(Object.keys(APP_STATUSES) as (keyof typeof APP_STATUSES)[], Object.entries(APP_STATUSES).map(([status, meaning]) => `\`${status}\`: ${meaning}`).join("; ")),
    statusReason: t.Nullable(t.String({ description: "Why the app is in its status, when it is not the obvious one (a failed build, a crash, a failed delete)" })),
    memoryMB: t.Integer({ ...MEMORY_MB }),
    cpus: t.Number({ description: "The CPU limit of its container: its own, or PLATFORM_DEFAULT_CPUS" }),
    exposePort: t.Nullable(t.Integer({ minimum: 1, maximum: 65535, description: `The port asked for: the next release gives it to the app as PORT (null: ${DEFAULT_EXPOSE_PORT})` })),
    servingPort: t.Nullable(t.Integer({ description: "The port the serving container listens on, the one the proxy routes to; changes only when a release succeeds, null while no container serves" })),
    subdomain: t.Nullable(t.String({ pattern: SUBDOMAIN_PATTERN })),
    url: t.Nullable(t.String({ description: "Where the public proxy serves the app" })),
    startupCommand: t.String({ description: "`auto` or the command its container runs" }),
    autoRestart: t.Boolean(),
    autoDeploy: t.Boolean({ description: "Repository apps: a push to the branch starts a deploy" }),
    builder,
    repository: t.Nullable(ref(RepositorySchema), { description: "The repository and branch it deploys from; null for an app deployed from ZIPs" }),
    rateLimits: t.Nullable(ref(AppRateLimitOverridesSchema), { description: "The app's own rate limits at the public proxy, as set in its settings; null when it has none" }),
    effectiveRateLimits: ref(AppRateLimitsSchema),
    httpsRedirect: t.Boolean({ description: "Plain HTTP is redirected to HTTPS once a certificate serves the host" }),
    hsts: t.Boolean({ description: "HTTPS answers carry Strict-Transport-Security" }),
    certificate: t.Nullable(ref(CertificateStatusSchema), { description: "The HTTPS certificate of its subdomain; null without a subdomain" }),
    machineId: t.String(),
    volumes: appVolumesField,
    releaseStrategy: oneOf(["start-first", "stop-first"] as const, "How a release replaces its container: its own setting, else `stop-first` with volumes and `start-first` without"),
    currentBuildId: t.Nullable(t.String({ description: "The build the serving container runs" })),
    healthCheck: ref(HealthCheckSchema),
    health: t.Nullable(ref(HealthProbeSchema), { description: "The last probe of the running app's health check; null before the first (kept in memory: none after a platform restart until the next probe)" }),
    filesChangedSinceBuild: t.Boolean({
      description: "True once the source tree was edited through the file system API, until a build reads it (POST redeploy builds from it)",
    }),
    workspaceId: t.String(),
    createdAt: timestamp(),
    updatedAt: timestamp(),
  },
  "A deployed app. Env var values never appear in it.",
);

export const BuildSchema = resource(
  "Build",
  {
    id: t.String(),
    status: oneOf(BUILD_STATUSES),
    queuePosition: t.Nullable(t.Integer({ minimum: 1, description: "While `queued` for a build slot: 1 is next" })),
    trigger: t.String({
      description:
        "What started it: `upload` (the first ZIP), `redeploy` (a new upload of the app, or POST redeploy), `settings`, " +
        "`repository` (a repository deploy), `push` (a signed GitHub push webhook), `deploy-hook` (the app's deploy-hook URL), `rollback`, `image` (the first deploy of an image app)",
    }),
    image: t.Nullable(t.String({ description: "The image built (or released again by a rollback), once built" })),
    imageDigest: t.Nullable(t.String({ description: "Image apps: the digest the pull got (`repo@sha256:…`), which the app runs" })),
    imageKept: t.Boolean({ description: "The image is still on the engine, so a rollback to this build needs no rebuild (PLATFORM_APP_IMAGES_KEPT)" }),
    commitSha: t.Nullable(t.String({ description: "Repository builds: the commit built, once cloned" })),
    commitMessage: t.Nullable(t.String({ description: "Repository builds: the first line of that commit's message" })),
    rollbackOf: t.Nullable(t.String({ description: "Rollbacks: the earlier build released again" })),
    error: t.Nullable(t.String({ description: "Why it failed or was canceled, e.g. `timed out after 900 s`, `canceled by a user`" })),
    startedAt: timestamp(),
    finishedAt: t.Nullable(timestamp()),
    durationMs: t.Nullable(t.Integer({ minimum: 0 })),
  },
  "One build of an app, from its source to an image.",
);

export const EnvReferenceSchema = resource(
  "EnvReference",
  { file: t.String({ description: "Path relative to the app's root, `/`-separated" }), line: t.Integer({ minimum: 1 }) },
  "Where a variable is mentioned.",
);

export const EnvVariableSchema = resource(
  "EnvVariable",
  {
    name: t.String(),
    required: t.Boolean(),
    builtin: t.Boolean({ description: "Set by the platform or the runtime (PORT, NODE_ENV...); never required" }),
    hasExampleValue: t.Boolean({ description: "An example file gives it a non-empty value" }),
    exampleValue: t.Optional(t.String({ description: "The first non-empty value from .env.example/.sample/.template; never from a real .env" })),
    references: t.Array(ref(EnvReferenceSchema)),
  },
  "An environment variable an app's source reads.",
);


const count = (description: string) => t.Integer({ minimum: 0, description });

export const TrafficWindowSchema = resource(
  "TrafficWindow",
  {
    requests: count("Requests the proxy answered for the app, refused ones included"),
    byStatusClass: t.Object({ "1xx": count(""), "2xx": count(""), "3xx": count(""), "4xx": count(""), "5xx": count("") }, { description: "Requests by the class of their answer's status" }),
    rateLimited: count("Requests the proxy refused with 429"),
    bytesIn: count("Bytes of request bodies relayed to the app"),
    bytesOut: count("Bytes of answer bodies relayed to clients"),
    upstreamLatencyMs: t.Nullable(
      t.Object({ p50: t.Number(), p99: t.Number() }, { description: "From sending a request to the app to its answer's head: the upper bound of the histogram bucket each percentile falls in" }),
    ),
  },
  "What the public proxy counted for an app over a window of time.",
);

export const AppTrafficSchema = resource(
  "AppTraffic",
  { last5Minutes: ref(TrafficWindowSchema), lastHour: ref(TrafficWindowSchema) },
  "An app's traffic through the public proxy, counted in one-minute slots, in memory: it starts afresh after a restart of the platform or a change of subdomain.",
);

export const APP_RESOURCES = [HealthCheckSchema, HealthProbeSchema, AppHealthSchema, AppRateLimitOverridesSchema, AppRateLimitsSchema, RepositorySchema, AppSchema, BuildSchema, EnvReferenceSchema, EnvVariableSchema, TrafficWindowSchema, AppTrafficSchema];
