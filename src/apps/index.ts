// Routes of /api/apps: thin wrappers over ./service. Build routes are in ./builds-routes.ts.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { mayReadSecrets } from "../http/permissions";
import { ok } from "../http/envelope";
import { withHeartbeat } from "../http/streams";
import { alsoAs, json, multipartBody, ref, responses, LIST_META } from "../http/responses";
import { AppSchema, AppTrafficSchema, EnvVariableSchema, APP_STATUSES, PROXY_RATE_LIMIT, RESTARTING_FIELDS, appIdParams, deleteAppQuery, deployForm, inspectForm, envBody, logsQuery, redeployQuery, settingsBody } from "./model";
import { appLogs, followAppLogs } from "./logs";
import { VOLUME_ERRORS } from "../volumes/model";

const STATUS_TEXT = Object.entries(APP_STATUSES)
  .map(([status, meaning]) => `\`${status}\`: ${meaning}`)
  .join("; ");

/** What a start or restart does when it arrives while other work on the app is queued or running. */
const LIFECYCLE_QUEUE =
  "Lifecycle calls are never refused because of work in progress: a start or restart that arrives while a build or " +
  "release of the app runs is queued behind it (`queued: true`, the status is that work's) and runs when it ends; a " +
  "stop or delete preempts it instead.";

const APP_FIELDS =
  "`app`: id, name, runtime, status, statusReason, memoryMB, cpus (the CPU limit of its container: its own or " +
  "PLATFORM_DEFAULT_CPUS), exposePort (the port asked for: the next release gives it " +
  "to the app as PORT), servingPort (the port the serving container really listens on, the one the proxy routes to; it " +
  "changes only when a release succeeds, null while no container serves), subdomain, url, startupCommand, autoRestart, " +
  "autoDeploy, rateLimits (its own limits at the public proxy, as set; null when none), effectiveRateLimits (the " +
  "limits the proxy applies: its own, else the platform's), healthCheck, health (the last probe of its health check), " +
  "machineId, volumes ([{id, name, mountPath, sizeBytes}]), releaseStrategy, currentBuildId, workspaceId, createdAt, " +
  "updatedAt. Env var values never appear in it.";

/** Refusals of an unsafe or oversized archive (src/apps/archive.ts). */
const ARCHIVE_ERRORS = [
  "ARCHIVE_INVALID", "ARCHIVE_PATH_TRAVERSAL", "ARCHIVE_UNSAFE_PATH", "ARCHIVE_UNSAFE_ENTRY", "ARCHIVE_TOO_MANY_ENTRIES",
  "ARCHIVE_TOO_DEEP", "ARCHIVE_TOO_LARGE", "ARCHIVE_RATIO_EXCEEDED", "ARCHIVE_ENCRYPTED", "ARCHIVE_UNSUPPORTED_METHOD",
] as const;

const ENV_VARS = t.Record(t.String(), t.String(), { description: "Name to value (`****` for the viewer role)" });

export function appsRoutes(ctx: ServerContext) {
  const service = ctx.apps;
  return new Elysia({ prefix: "/api/apps", tags: ["Apps"] })
    .use(authPlugin(ctx))
    .get(
      "/",
      ({ principal }) => {
        const apps = service.list(principal.workspaceId).map((app) => service.publicApp(app));
        return ok({ apps, meta: { total: apps.length } });
      },
      {
        auth: true,
        detail: { operationId: "listApps",
          responses: responses({ 200: json("The workspace's apps", { apps: t.Array(ref(AppSchema)), meta: ref(LIST_META) }) }), summary: "List apps", description: `Apps of the workspace (\`workspaceId\` or \`organizationId\` selects another one the caller belongs to): \`apps\` and \`meta.total\`. An app being deleted is listed (status \`deleting\`) until its removal is done, while GET one already answers 404. Status values: ${STATUS_TEXT}.` },
      },
    )
    .post(
      "/deploy",
      async ({ principal, request, set }) => {
        const { app, buildId, created } = await service.deploy(principal, request);
        set.status = 202;
        return ok({ app, buildId, created });
      },
      {
        auth: true,
        parse: "none",
        detail: {
          operationId: "deployApp",
          requestBody: multipartBody(deployForm),
          responses: responses({ 202: json("Accepted: the build runs in the background", { app: ref(AppSchema), buildId: t.String(), created: t.Boolean({ description: "A new app (false: a new release of an existing one)" }) }) }, "NOT_FOUND", "UNKNOWN_MACHINE", "NAME_TAKEN", "SUBDOMAIN_TAKEN", "QUOTA_EXCEEDED", "PAYLOAD_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE", "RATE_LIMITED", ...ARCHIVE_ERRORS, ...VOLUME_ERRORS, "DOCKER_UNAVAILABLE"),
          summary: "Deploy an app from a ZIP",
          description:
            "multipart/form-data: `file` (ZIP, required), `name` (required; lowercase letters, digits, dashes), `runtime` " +
            "(`node`, `bun`, `python`, required), `memoryMB` (required, 64-16384), `cpus` (0.1-16, default PLATFORM_DEFAULT_CPUS), `startupCommand` (omit or `auto` to detect " +
            "Vite, Next.js, Node, Bun, static sites, FastAPI/Flask/Django/Python; else a one-line command run with `sh -c`), `envVars` " +
            "(JSON object text), `exposePort` (default 3000, given to the app as PORT), `subdomain` (default: the name, or the " +
            "name with a suffix when taken), `autoRestart` (default true), `builder` (`auto` or `dockerfile`, default `auto`), `healthCheck` " +
            "(JSON text: path, intervalSeconds, timeoutSeconds, healthyThreshold, unhealthyThreshold, startPeriodSeconds; fields left out take " +
            "their defaults; without a path the check is a TCP connect), `machineId` " +
            "(default: the machine of the volumes it lists, else `local`), `volumes` (JSON text of the app's whole list `[{name, mountPath}]`), " +
            "`releaseStrategy` (`start-first` or `stop-first`; default `stop-first` with volumes). Deploying a name " +
            "that exists in the workspace releases a new version of that app. Answers 202 at once with " +
            `${APP_FIELDS} plus \`buildId\` and \`created\`; the build and start go on in the background ` +
            "(`building` -> `starting` -> `running`, or `failed`); the proxy switches to the new container once its health check passes. The upload is streamed to disk: 413 `PAYLOAD_TOO_LARGE` " +
            "past `uploadLimits.maxUploadBytes`; unsafe archives (path traversal, absolute paths, links, paths over 32 segments " +
            "deep: `ARCHIVE_TOO_DEEP`, more files and folders than `uploadLimits.maxArchiveEntries` counting the folders paths " +
            "imply: `ARCHIVE_TOO_MANY_ENTRIES`, more than `uploadLimits.maxUncompressedBytes` with every file and folder " +
            "counted at least 4 KiB: `ARCHIVE_TOO_LARGE`, or over 100:1 compression) get 400 with an `ARCHIVE_*` code and " +
            "leave nothing on disk. `startupCommand` must be one line (400 `VALIDATION_FAILED`); control characters in the " +
            "upload's file name are escaped in the build log. 409 " +
            "`QUOTA_EXCEEDED` (nothing kept) when a new app, the memory or the extracted source would pass the workspace's " +
            "quota (PLATFORM_QUOTA_APPS, PLATFORM_QUOTA_MEMORY_MB, PLATFORM_QUOTA_DISK_MB); the message names the quota and the use.",
        },
      },
    )
    .post(
      "/inspect-env",
      async ({ principal, request }) => ok({ variables: (await service.inspectEnv(principal, request)).variables }),
      {
        auth: true,
        parse: "none",
        detail: {
          operationId: "inspectAppEnv",
          requestBody: multipartBody(inspectForm),
          responses: responses({ 200: json("The variables the source reads, by name", { variables: t.Array(ref(EnvVariableSchema)) }) }, "PAYLOAD_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE", "RATE_LIMITED", ...ARCHIVE_ERRORS),
          summary: "Find the environment variables an app needs",
          description:
            "multipart/form-data with `file` (ZIP), checked like a deploy; nothing is run or kept. Answers `variables`: " +
            "name, required, builtin, hasExampleValue, exampleValue (from .env.example/.sample/.template only), references " +
            "[{file, line}], found in example files and in `process.env.X`, `process.env[\"X\"]`, `import.meta.env.X`, " +
            "`Bun.env.X`, `os.environ[\"X\"]`, `os.environ.get(\"X\")`, `os.getenv(\"X\")`.",
        },
      },
    )
    .get("/:appId", ({ principal, params }) => ok({ app: service.publicApp(service.get(principal.workspaceId, params.appId)) }), {
      auth: true,
      params: appIdParams,
      detail: { operationId: "getApp",
          responses: responses({ 200: json("The app", { app: ref(AppSchema) }) }, "NOT_FOUND"), summary: "Get an app", description: `${APP_FIELDS} Status values: ${STATUS_TEXT}.` },
    })
    .post(
      "/:appId/start",
      ({ principal, params, set }) => {
        set.status = 202;
        return ok(service.start(principal.workspaceId, params.appId));
      },
      {
        auth: true,
        params: appIdParams,
        detail: {
          operationId: "startApp",
          responses: responses({ 202: json("Accepted", { app: ref(AppSchema), queued: t.Boolean() }) }, "NOT_FOUND", "NOT_DEPLOYED"),
          summary: "Start an app",
          description:
            `Answers 202 at once with \`app\` and \`queued\`. ${LIFECYCLE_QUEUE} An idle app goes \`starting\` and a container of ` +
            "the current build starts in the background (`running` once it listens, else `failed` with statusReason); a " +
            "running app is left as it is. 409 `NOT_DEPLOYED` before any build, successful or in progress.",
        },
      },
    )
    .post(
      "/:appId/stop",
      ({ principal, params, set }) => {
        set.status = 202;
        return ok(service.stop(principal.workspaceId, params.appId));
      },
      {
        auth: true,
        params: appIdParams,
        detail: {
          operationId: "stopApp",
          responses: responses({ 202: json("Accepted: the app is `stopping`", { app: ref(AppSchema) }) }, "NOT_FOUND"),
          summary: "Stop an app",
          description:
            "Answers 202 at once with `app` in status `stopping`; it becomes `stopped` once the container has stopped. A stop " +
            "preempts a build or release in progress: the build is cancelled (its log says so) and a new container not yet " +
            "serving is removed; a release that already switched finishes retiring the old container first.",
        },
      },
    )
    .post(
      "/:appId/restart",
      ({ principal, params, set }) => {
        set.status = 202;
        return ok(service.restart(principal.workspaceId, params.appId));
      },
      {
        auth: true,
        params: appIdParams,
        detail: {
          operationId: "restartApp",
          responses: responses({ 202: json("Accepted", { app: ref(AppSchema), queued: t.Boolean() }) }, "NOT_FOUND", "NOT_DEPLOYED"),
          summary: "Restart an app",
          description:
            `Answers 202 at once with \`app\` and \`queued\`. ${LIFECYCLE_QUEUE} A fresh container of the current build starts ` +
            "(`starting`); the old one serves until the new one listens (zero-downtime), and keeps serving when the new one " +
            "fails. 409 `NOT_DEPLOYED` before any build, successful or in progress.",
        },
      },
    )
    .post(
      "/:appId/redeploy",
      ({ principal, params, query, set }) => {
        set.status = 202;
        return ok(service.redeploy(principal.workspaceId, params.appId, query.source));
      },
      {
        auth: true,
        params: appIdParams,
        query: redeployQuery,
        detail: {
          operationId: "redeployApp",
          responses: responses({ 202: json("Accepted: the build runs in the background", { app: ref(AppSchema), buildId: t.String() }) }, "NOT_FOUND", "VALIDATION_FAILED"),
          summary: "Redeploy from the current files, or the branch head",
          description:
            "Builds the app's kept source tree as it is now (with the edits made through /fs) — for an app deployed from a " +
            "repository, the head of its branch, fetched when the build starts, unless `source=files` — then releases it with " +
            "the same zero-downtime rules as a deploy: the serving container keeps serving until the new one listens, and keeps " +
            "serving when the build or start fails. Answers 202 with `app` and `buildId` (trigger `redeploy`; a branch-head " +
            "redeploy already queued is answered instead of a second one); `filesChangedSinceBuild` turns false once the build " +
            "reads the tree.",
        },
      },
    )
    .delete(
      "/:appId",
      ({ principal, params, query, set }) => {
        set.status = 202;
        return ok(service.delete(principal.workspaceId, params.appId, { deleteVolumes: query.deleteVolumes === true }));
      },
      {
        auth: true,
        params: appIdParams,
        query: deleteAppQuery,
        detail: {
          operationId: "deleteApp",
          responses: responses({ 202: json("Accepted: the app is `deleting`", { app: ref(AppSchema) }) }, "NOT_FOUND", "BACKUP_IN_PROGRESS", "RESTORE_IN_PROGRESS", "VERIFY_IN_PROGRESS", "BUSY"),
          summary: "Delete an app",
          description:
            "Answers 202 at once with `app` in status `deleting`; from then on the app is 404. A delete preempts a build or " +
            "release in progress (the build is cancelled), then removes the app's containers, images, source files, env vars " +
            "and builds in the background. Its volumes are kept, detached (listed in /api/volumes, to attach to another app " +
            "or delete), unless `deleteVolumes=true`: then they go with their backups (409 `BACKUP_IN_PROGRESS`, " +
            "`RESTORE_IN_PROGRESS` or `VERIFY_IN_PROGRESS`, and nothing deleted, while a backup of one is made, restored or " +
            "verified); a delete resumed after a platform restart keeps them. When the engine cannot be reached the app comes back with statusReason " +
            "`Delete failed: ...` and DELETE can be sent again; a delete cut short by a platform restart is finished at start.",
        },
      },
    )
    .get(
      "/:appId/logs",
      async ({ principal, params, query, request }) => {
        const options = { tail: query.tail ?? 100, timestamps: query.timestamps ?? false };
        if (query.follow) {
          const current = () => service.find(principal.workspaceId, params.appId);
          const followed = followAppLogs(ctx, service.get(principal.workspaceId, params.appId), current, options, request.signal);
          return new Response(withHeartbeat(followed), {
            headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" },
          });
        }
        return ok({ lines: await appLogs(ctx, service.get(principal.workspaceId, params.appId), options) });
      },
      {
        auth: true,
        params: appIdParams,
        query: logsQuery,
        detail: {
          operationId: "getAppLogs",
          responses: responses({ 200: alsoAs(json("The last lines (with `follow=true`: text/plain, followed)", { lines: t.Array(t.String()) }), "text/plain") }, "NOT_FOUND", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT"),
          summary: "Read the app's output",
          description:
            "`lines`: the last `tail` lines (0-5000, default 100) of stdout and stderr as clean text, each prefixed with its " +
            "RFC 3339 time when `timestamps=true`. With `follow=true` the answer is text/plain instead: those lines, then every " +
            "new line as the app writes it, until the client disconnects; after 15 s without output an empty line is sent " +
            "as a heartbeat, so neither the server nor a proxy closes a quiet stream. An app without a container yet (never " +
            "deployed, its first build running or failed) answers as without `follow`, with nothing: an empty stream that " +
            "waits and follows its first container once one starts; it ends when the app is deleted.",
        },
      },
    )
    .get(
      "/:appId/traffic",
      ({ principal, params }) => {
        const { subdomain } = service.get(principal.workspaceId, params.appId);
        return ok({ traffic: ctx.traffic.report(subdomain) });
      },
      {
        auth: true,
        params: appIdParams,
        detail: {
          operationId: "getAppTraffic",
          responses: responses({ 200: json("The app's traffic", { traffic: ref(AppTrafficSchema) }) }, "NOT_FOUND"),
          summary: "Traffic through the public proxy",
          description:
            "`traffic.last5Minutes` and `traffic.lastHour`: requests by status class, 429s, bytes in and out, and p50/p99 upstream " +
            "latency, as the public proxy counted them for the app's subdomain.",
        },
      },
    )
    .get(
      "/:appId/env",
      ({ principal, params }) => {
        const envVars = service.getEnv(principal.workspaceId, params.appId);
        if (mayReadSecrets(principal.role)) return ok({ envVars });
        return ok({ envVars: Object.fromEntries(Object.keys(envVars).map((name) => [name, "****"])) });
      },
      {
        auth: true,
        params: appIdParams,
        detail: {
          operationId: "getAppEnv",
          responses: responses({ 200: json("The variables", { envVars: ENV_VARS }) }, "NOT_FOUND"),
          summary: "Read env vars",
          description: "`envVars`, decrypted; for the `viewer` role the names with every value `****`. Stored encrypted with AES-256-GCM.",
        },
      },
    )
    .put("/:appId/env", ({ principal, params, body }) => ok(service.putEnv(principal.workspaceId, params.appId, body.envVars)), {
      auth: true,
      params: appIdParams,
      body: envBody,
      detail: { operationId: "updateAppEnv",
          responses: responses({ 200: json("All variables after the change", { envVars: ENV_VARS, restarted: t.Boolean() }) }, "NOT_FOUND"), summary: "Merge env vars", description: "Adds or replaces the given variables and keeps the others. A change restarts a running app (zero-downtime; queued behind a build or release in progress, and a stop, restart or delete sent meanwhile is accepted at once). Answers `envVars` (all, decrypted) and `restarted`." },
    })
    .delete("/:appId/env/:name", ({ principal, params }) => ok(service.deleteEnv(principal.workspaceId, params.appId, params.name)), {
      auth: true,
      params: t.Object({ appId: t.String({ minLength: 1, maxLength: 64 }), name: t.String({ minLength: 1, maxLength: 256 }) }),
      detail: {
        operationId: "deleteAppEnvVar",
        responses: responses({ 200: json("All variables after the change", { envVars: ENV_VARS, restarted: t.Boolean() }) }, "NOT_FOUND"),
        summary: "Unset an env var",
        description: "Removes the variable `name` (404 when the app has none of that name). A running app restarts without it, as after PUT. Answers `envVars` (all, decrypted) and `restarted`.",
      },
    })
    .put("/:appId/settings", async ({ principal, params, body }) => ok(await service.updateSettings(principal.workspaceId, params.appId, body)), {
      auth: true,
      params: appIdParams,
      body: settingsBody,
      detail: {
        operationId: "updateAppSettings",
          responses: responses({ 200: json("The app after the change", { app: ref(AppSchema), restarted: t.Boolean(), buildId: t.Nullable(t.String({ description: "The build started, when the change rebuilds" })) }) }, "NOT_FOUND", "NAME_TAKEN", "SUBDOMAIN_TAKEN", "QUOTA_EXCEEDED", ...VOLUME_ERRORS, "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT"),
        summary: "Change settings",
        description:
          `A change of ${RESTARTING_FIELDS.map((field) => `\`${field}\``).join(", ")} restarts a running ` +
          "app with a new container (zero-downtime; `runtime`, `startupCommand` and `builder` also rebuild, except an image app's `startupCommand`, read when its container starts); `name`, `subdomain`, " +
          "`autoRestart` (applied to the running container in place), `autoDeploy` (repository apps: a push to the branch " +
          "deploys) and `rateLimits` do not restart it. A setting takes effect when the release " +
          "that applies it succeeds: until then, and for good when it fails, the old container serves as before (`servingPort` " +
          "and the proxy route follow only a successful release). A new `subdomain` routes at once to the serving container " +
          "(also during a build), and to the new container when a release in progress switches. `cpus`: 0.1-16, null for " +
          "PLATFORM_DEFAULT_CPUS. `rateLimits`: the app's own limits at the public proxy (`clientBurst`, `clientRps` per " +
          `client address; \`hostBurst\`, \`hostRps\` for the app as a whole), each ${PROXY_RATE_LIMIT.minimum}-${PROXY_RATE_LIMIT.maximum} or null for the platform's ` +
          "(PLATFORM_PROXY_IP_BURST, _IP_RPS, _HOST_BURST, _HOST_RPS); fields left out keep their value, `rateLimits: null` " +
          "clears them all; they apply from the next request through the proxy. `healthCheck`: fields given change, null " +
          "goes back to the defaults (a TCP check); read by the next release and the next probe, nothing restarts. `volumes`: the app's whole list (a volume " +
          "left out is detached, kept); `releaseStrategy`: `start-first` (the new container starts while the old serves) or " +
          "`stop-first` (the old stops first, and starts again if the new one fails; the default with volumes), null for the default. " +
          "`user` (image apps only, 400 otherwise): the user the container runs as, \"\" or null for the image's own USER; a change restarts. " +
          "409 `SUBDOMAIN_TAKEN` / `NAME_TAKEN`; 409 `QUOTA_EXCEEDED` when more memory would pass PLATFORM_QUOTA_MEMORY_MB, or a volume is added while the disk quota is used up. Answers `app`, `restarted` and `buildId` (when a rebuild started).",
      },
    });
}
