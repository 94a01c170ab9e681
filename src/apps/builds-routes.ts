// Routes of /api/apps/{appId}/builds: build history, one build with a range of its log, following
// a log live, cancelling, and rolling back to an earlier build (./builds.ts, ./rollback.ts).
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { withHeartbeat } from "../http/streams";
import { json, media, ref, responses } from "../http/responses";
import { AppSchema, BuildSchema, appIdParams, buildLogQuery, buildParams } from "./model";

export function buildsRoutes(ctx: ServerContext) {
  const service = ctx.apps;
  return new Elysia({ prefix: "/api/apps", tags: ["Apps"] })
    .use(authPlugin(ctx))
    .get("/:appId/builds", ({ principal, params }) => ok({ builds: service.builds.list(principal.workspaceId, params.appId) }), {
      auth: true,
      params: appIdParams,
      detail: {
        operationId: "listBuilds",
          responses: responses({ 200: json("Builds, newest first", { builds: t.Array(ref(BuildSchema)) }) }, "NOT_FOUND"),
        summary: "Recent builds",
        description:
          "`builds`, newest first (50 at most): id, status (`queued`, `building`, `succeeded`, `failed`, `canceled`), " +
          "queuePosition (while `queued` for a build slot: 1 is next; builds wait when PLATFORM_BUILDS_PER_WORKSPACE or " +
          "PLATFORM_BUILDS_MAX run already, first come first served; null otherwise), trigger (`upload`, `redeploy`, `settings`, " +
          "`repository`, `push`, `deploy-hook`, `rollback`), image, imageKept (a rollback to it needs no build), commitSha, " +
          "commitMessage, rollbackOf, error (e.g. `timed out after 900 s`, `canceled by a user`), startedAt, finishedAt, durationMs.",
      },
    })
    .get(
      "/:appId/builds/:buildId",
      ({ principal, params, query }) => ok(service.builds.withLog(principal.workspaceId, params.appId, params.buildId, { offset: query.offset, limit: query.limit })),
      {
        auth: true,
        params: buildParams,
        query: buildLogQuery,
        detail: {
          operationId: "getBuild",
          responses: responses({ 200: json("The build and a range of its log", {
            build: ref(BuildSchema),
            log: t.String(),
            logOffset: t.Integer({ minimum: 0 }),
            logNextOffset: t.Integer({ minimum: 0 }),
            logBytes: t.Integer({ minimum: 0 }),
            logDroppedBytes: t.Integer({ minimum: 0 }),
          }) }, "NOT_FOUND"),
          summary: "One build with a range of its log",
          description:
            "`build` and `log`: a byte range of the build log as text, secrets and registry credentials masked. Without " +
            "`offset`, the last `limit` bytes (default 256 KiB, at most 1 MiB) from the start of a line; with `offset`, `limit` " +
            "bytes from there. `logOffset` and `logNextOffset` are the byte offsets of the text returned and of the byte after " +
            "it (ask again from `logNextOffset` to read on), `logBytes` the size of the whole log. A log stops growing at " +
            "PLATFORM_BUILD_LOG_MAX_BYTES (default 5 MiB): past it the log keeps its first 16 KiB, a line " +
            "`==> N bytes of build output dropped here`, and the latest output; `logDroppedBytes` is N (0 when nothing was dropped).",
        },
      },
    )
    .post(
      "/:appId/builds/:buildId/cancel",
      async ({ principal, params, set }) => {
        const build = await service.builds.cancel(principal.workspaceId, params.appId, params.buildId);
        set.status = 202;
        return ok({ build });
      },
      {
        auth: true,
        params: buildParams,
        detail: {
          operationId: "cancelBuild",
          responses: responses({ 202: json("Accepted", { build: ref(BuildSchema) }) }, "NOT_FOUND", "BUILD_FINISHED"),
          summary: "Cancel a build",
          description:
            "A build waiting for a slot is dropped; a running one is killed with its build container. Answers 202 with `build`, " +
            "normally already `canceled` (error `canceled by a user`). The app keeps serving its previous release (statusReason " +
            "says the build was canceled); an app with nothing to serve becomes `failed`. A build that runs longer than " +
            "PLATFORM_BUILD_TIMEOUT_SECONDS is killed the same way and ends `failed` with error `timed out after N s`. " +
            "409 `BUILD_FINISHED` for a build that has already ended, and for a rollback releasing a kept image (it builds " +
            "nothing; a stop ends it).",
        },
      },
    )
    .get(
      "/:appId/builds/:buildId/log",
      ({ principal, params, request }) =>
        new Response(withHeartbeat(service.builds.followLog(principal.workspaceId, params.appId, params.buildId, request.signal)), {
          headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" },
        }),
      {
        auth: true,
        params: buildParams,
        detail: {
          operationId: "followBuildLog",
          responses: responses({ 200: media("The log, then its new lines until the build ends", "text/plain") }, "NOT_FOUND"),
          summary: "Follow a build log live",
          description:
            "text/plain: the log so far, then its new lines as the build writes them; the stream ends when the build ends. " +
            "After 15 s without output an empty line is sent as a heartbeat. A reader more than 1 MiB behind the build skips " +
            "ahead and gets a line `==> N bytes of live output skipped` instead.",
        },
      },
    )
    .post(
      "/:appId/builds/:buildId/rollback",
      async ({ principal, params, set }) => {
        const { app, build } = await service.rollbacks.rollback(principal.workspaceId, params.appId, params.buildId);
        set.status = 202;
        return ok({ app: service.publicApp(app), build: service.builds.publicBuild(build) });
      },
      {
        auth: true,
        params: buildParams,
        detail: {
          operationId: "rollbackToBuild",
          responses: responses(
            { 202: json("Accepted: a new build entry releases the earlier build again", { app: ref(AppSchema), build: ref(BuildSchema) }) },
            "NOT_FOUND", "BUSY", "BUILD_NOT_RELEASABLE", "ROLLBACK_UNAVAILABLE", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT",
          ),
          summary: "Roll back to an earlier build",
          description:
            "Releases the succeeded build `buildId` again, as a new build entry (trigger `rollback`, `rollbackOf` the " +
            "earlier build) answered 202 with `app` and `build`. While that build's image is kept (`imageKept`: the images of " +
            "the newest PLATFORM_APP_IMAGES_KEPT builds, default 3, and the serving one) nothing is built: the entry is " +
            "`building` with that image, its log says so, and a container of it starts in the background with the " +
            "zero-downtime rules of a deploy (the serving container answers until the new one listens, and keeps answering " +
            "when it fails); the entry ends `succeeded` once it serves, `failed` with the reason when it never listened, " +
            "`canceled` when a stop or delete came first. It builds nothing, so it cannot be cancelled itself (409 `BUILD_FINISHED`). Once the image was removed, a repository build's commit is built again and an image app's build pulls its digest again (the entry is `queued`); " +
            "a ZIP build cannot come back: 409 `ROLLBACK_UNAVAILABLE`, deploy it again. Rolling back to the build being served " +
            "is allowed and starts a fresh container of it, like a restart; like a restart, it waits behind a build or " +
            "release in progress, and it starts a stopped app. 409 `BUILD_NOT_RELEASABLE` for a build that is queued, " +
            "building, failed or canceled.",
        },
      },
    );
}
