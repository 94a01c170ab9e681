// Routes of /api/apps: thin wrappers over ./service.
import { Elysia } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { APP_STATUSES, RESTARTING_FIELDS, appIdParams, buildParams, envBody, logsQuery, settingsBody } from "./model";

const STATUS_TEXT = Object.entries(APP_STATUSES)
  .map(([status, meaning]) => `\`${status}\`: ${meaning}`)
  .join("; ");

const APP_FIELDS =
  "`app`: id, name, runtime, status, statusReason, memoryMB, exposePort, subdomain, url, startupCommand, autoRestart, " +
  "autoDeploy, machineId, currentBuildId, workspaceId, createdAt, updatedAt. Env var values never appear in it.";

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
        detail: { summary: "List apps", description: `Apps of the workspace (\`workspaceId\` or \`organizationId\` selects another one the caller belongs to): \`apps\` and \`meta.total\`. Status values: ${STATUS_TEXT}.` },
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
          summary: "Deploy an app from a ZIP",
          description:
            "multipart/form-data: `file` (ZIP, required), `name` (required; lowercase letters, digits, dashes), `runtime` " +
            "(`node`, `bun`, `python`, required), `memoryMB` (required, 64-16384), `startupCommand` (omit or `auto` to detect " +
            "Vite, Next.js, Node, Bun, static sites, FastAPI/Flask/Django/Python; else a command run with `sh -c`), `envVars` " +
            "(JSON object text), `exposePort` (default 3000, given to the app as PORT), `subdomain` (default: the name, or the " +
            "name with a suffix when taken), `autoRestart` (default true), `machineId` (default `local`). Deploying a name " +
            "that exists in the workspace releases a new version of that app. Answers 202 at once with " +
            `${APP_FIELDS} plus \`buildId\` and \`created\`; the build and start go on in the background ` +
            "(`building` -> `starting` -> `running`, or `failed`). The upload is streamed to disk: 413 `PAYLOAD_TOO_LARGE` " +
            "past `uploadLimits.maxUploadBytes`; unsafe archives (path traversal, absolute paths, links, too many entries, " +
            "too large or over 100:1 compression) get 400 with an `ARCHIVE_*` code and leave nothing on disk.",
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
      detail: { summary: "Get an app", description: `${APP_FIELDS} Status values: ${STATUS_TEXT}.` },
    })
    .post("/:appId/start", async ({ principal, params }) => ok({ app: await service.start(principal.workspaceId, params.appId) }), {
      auth: true,
      params: appIdParams,
      detail: { summary: "Start an app", description: "Starts a container of the current build and answers once it listens (or failed). 409 `BUSY` while a deploy runs, 409 `NOT_DEPLOYED` before any successful build." },
    })
    .post("/:appId/stop", async ({ principal, params }) => ok({ app: await service.stop(principal.workspaceId, params.appId) }), {
      auth: true,
      params: appIdParams,
      detail: { summary: "Stop an app", description: "Stops the container (status `stopped`). 409 `BUSY` while a deploy runs." },
    })
    .post("/:appId/restart", async ({ principal, params }) => ok({ app: await service.restart(principal.workspaceId, params.appId) }), {
      auth: true,
      params: appIdParams,
      detail: { summary: "Restart an app", description: "A fresh container of the current build; the old one serves until the new one listens." },
    })
    .delete("/:appId", async ({ principal, params }) => ok({ app: await service.delete(principal.workspaceId, params.appId) }), {
      auth: true,
      params: appIdParams,
      detail: { summary: "Delete an app", description: "Removes its containers, images, source files, env vars and builds; it is 404 afterwards." },
    })
    .get(
      "/:appId/logs",
      async ({ principal, params, query, request }) => {
        const options = { tail: query.tail ?? 100, timestamps: query.timestamps ?? false };
        if (query.follow) {
          return new Response(service.followLogs(principal.workspaceId, params.appId, options, request.signal), {
            headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" },
          });
        }
        return ok({ lines: await service.logs(principal.workspaceId, params.appId, options) });
      },
      {
        auth: true,
        params: appIdParams,
        query: logsQuery,
        detail: {
          summary: "Read the app's output",
          description:
            "`lines`: the last `tail` lines (0-5000, default 100) of stdout and stderr as clean text, each prefixed with its " +
            "RFC 3339 time when `timestamps=true`. With `follow=true` the answer is text/plain instead: those lines, then every " +
            "new line as the app writes it, until the client disconnects.",
        },
      },
    )
    .get("/:appId/env", ({ principal, params }) => ok({ envVars: service.getEnv(principal.workspaceId, params.appId) }), {
      auth: true,
      params: appIdParams,
      detail: { summary: "Read env vars", description: "`envVars`, decrypted. Stored encrypted with AES-256-GCM." },
    })
    .put("/:appId/env", ({ principal, params, body }) => ok(service.putEnv(principal.workspaceId, params.appId, body.envVars)), {
      auth: true,
      params: appIdParams,
      body: envBody,
      detail: { summary: "Merge env vars", description: "Adds or replaces the given variables and keeps the others. A change restarts a running app (zero-downtime). Answers `envVars` (all, decrypted) and `restarted`." },
    })
    .put("/:appId/settings", async ({ principal, params, body }) => ok(await service.updateSettings(principal.workspaceId, params.appId, body)), {
      auth: true,
      params: appIdParams,
      body: settingsBody,
      detail: {
        summary: "Change settings",
        description:
          `A change of ${RESTARTING_FIELDS.map((field) => `\`${field}\``).join(", ")} restarts a running ` +
          "app with a new container (zero-downtime; `runtime` and `startupCommand` also rebuild); `name`, `subdomain` and " +
          "`autoRestart` (applied to the running container in place) do not restart it. 409 `SUBDOMAIN_TAKEN` / `NAME_TAKEN`. Answers `app`, `restarted` and `buildId` (when a rebuild started).",
      },
    })
    .get("/:appId/builds", ({ principal, params }) => ok({ builds: service.builds(principal.workspaceId, params.appId) }), {
      auth: true,
      params: appIdParams,
      detail: { summary: "Recent builds", description: "`builds`, newest first (50 at most): id, status (`queued`, `building`, `succeeded`, `failed`), trigger (`upload`, `redeploy`, `settings`), image, error, startedAt, finishedAt, durationMs." },
    })
    .get("/:appId/builds/:buildId", ({ principal, params }) => ok(service.build(principal.workspaceId, params.appId, params.buildId)), {
      auth: true,
      params: buildParams,
      detail: { summary: "One build with its full log", description: "`build` and `log` (the whole build log as text, secrets masked)." },
    })
    .get(
      "/:appId/builds/:buildId/log",
      ({ principal, params, request }) =>
        new Response(service.followBuildLog(principal.workspaceId, params.appId, params.buildId, request.signal), {
          headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" },
        }),
      {
        auth: true,
        params: buildParams,
        detail: { summary: "Follow a build log live", description: "text/plain streamed as the build writes it; the stream ends when the build ends." },
      },
    );
}
