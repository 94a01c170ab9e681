// Routes of repository deploys: POST /api/apps/deploy-from-repo and the app's deploy-hook URL
// (GET/POST /api/apps/{appId}/deploy-hook). Pushes and hook calls arrive at /api/webhooks (src/webhooks).
import { Elysia, t } from "elysia";
import type { ServerContext } from "../../http/context";
import { authPlugin } from "../../http/auth";
import { ok } from "../../http/envelope";
import { apiPublicOrigin } from "../../http/public-origin";
import { formsBody, json, ref, responses } from "../../http/responses";
import { reattachedField, VOLUME_ERRORS } from "../../volumes/model";
import { AppSchema, appIdParams } from "../model";
import { DeployHookSchema, deployFromRepoBody } from "./model";

export function repositoryRoutes(ctx: ServerContext) {
  const deploys = ctx.apps.repository;
  /** Where the hook is called from outside: the API's public origin (https behind PLATFORM_API_DOMAIN). */
  const deployHookUrl = (origin: string, appId: string, secret: string) => ({ url: `${origin}/api/webhooks/deploy/${appId}/${secret}` });
  return new Elysia({ prefix: "/api/apps", tags: ["Apps"] })
    .use(authPlugin(ctx))
    .post(
      "/deploy-from-repo",
      async ({ principal, request, set }) => {
        const { app, buildId, created, reattached, accessTokenDropped } = await deploys.deploy(principal, request);
        set.status = 202;
        return ok({ app, buildId, created, reattached, accessTokenDropped });
      },
      {
        auth: true,
        parse: "none",
        detail: {
          operationId: "deployAppFromRepository",
          requestBody: formsBody(deployFromRepoBody, "JSON, or a URL-encoded or multipart form with `repository` as JSON text or as `repository[owner]`… fields"),
          responses: responses(
            {
              202: json("Accepted: the clone and build run in the background", {
                app: ref(AppSchema),
                buildId: t.String(),
                created: t.Boolean({ description: "A new app (false: a new release of an existing one)" }),
                reattached: reattachedField,
                accessTokenDropped: t.Boolean({
                  description: "The app's stored access token was removed: the request points the app at another repository (owner, name, or `id` where the app has one recorded) and gives no `accessToken`",
                }),
              }),
            },
            "VALIDATION_FAILED", "INVALID_JSON", "UNSUPPORTED_MEDIA_TYPE", "GITHUB_APP_NOT_CONFIGURED", "INSTALLATION_NOT_YOURS", "UNKNOWN_MACHINE", "NAME_TAKEN", "SUBDOMAIN_TAKEN", "QUOTA_EXCEEDED", ...VOLUME_ERRORS,
          ),
          summary: "Deploy an app from a git repository",
          description:
            "The fields of a ZIP deploy (name, runtime, memoryMB, cpus, startupCommand, envVars, exposePort, subdomain, autoRestart, " +
            "builder, healthCheck (an object, or JSON text in a form), machineId, volumes (an array, or JSON text), releaseStrategy) without `file`, plus `repository` {id, owner, name, branch, path?, repoHostInstallationId?}, " +
            "`autoDeploy` and `accessToken`. Deploying a name that exists in the workspace releases a new version of that app " +
            "and makes it follow the given repository; pointing it at another repository (owner, name, or another `id` than the one recorded) removes its stored " +
            "access token unless `accessToken` is given again (`accessTokenDropped: true`). Answers 202 at once with `app`, `buildId` (trigger `repository`) and " +
            "`created`. The build clones `branch` of `PLATFORM_GIT_BASE_URL/owner/name.git` (depth 1, git run without a shell; " +
            "symbolic links are checked out as plain files), takes `path` as the app's root, records `commitSha` and " +
            "`commitMessage` on the build, then builds and releases as a ZIP deploy does. A private repository is reached with " +
            "the GitHub App installation's token (`repoHostInstallationId`) or the app's `accessToken`; neither appears in any " +
            "URL, log or message; an installation another workspace's app uses gets 403 `INSTALLATION_NOT_YOURS`. A clone that fails (no such repository or branch, credentials refused, over " +
            "PLATFORM_GIT_CLONE_TIMEOUT_SECONDS, larger than the upload limits) fails the build with the reason, and a version " +
            "already serving keeps serving. 400 `VALIDATION_FAILED` names the field for an owner, name, branch or path that is " +
            "not valid (a branch starting with '-', '..' in a path...).",
        },
      },
    )
    .get("/:appId/deploy-hook", ({ principal, params, request, server }) => ok({ deployHook: deployHookUrl(apiPublicOrigin(ctx.config, server, request), params.appId, deploys.deployHookSecret(principal.workspaceId, params.appId)) }), {
      auth: true,
      params: appIdParams,
      detail: {
        operationId: "getAppDeployHook",
        responses: responses({ 200: json("The app's deploy-hook URL", { deployHook: ref(DeployHookSchema) }) }, "NOT_FOUND"),
        summary: "The app's deploy-hook URL",
        description:
          "`deployHook.url`: POST to it from any CI (no key) to deploy the app, as a push does. The URL holds a secret; it " +
          "is made on the first read and stays the same until POST rotates it; each read is in the audit log. The URL " +
          "starts with the API's public origin: `https://PLATFORM_API_DOMAIN` when that is set. Owners, admins and members only.",
      },
    })
    .post("/:appId/deploy-hook", ({ principal, params, request, server }) => ok({ deployHook: deployHookUrl(apiPublicOrigin(ctx.config, server, request), params.appId, deploys.rotateDeployHook(principal.workspaceId, params.appId)) }), {
      auth: true,
      params: appIdParams,
      detail: {
        operationId: "rotateAppDeployHook",
        responses: responses({ 200: json("The app's new deploy-hook URL", { deployHook: ref(DeployHookSchema) }) }, "NOT_FOUND"),
        summary: "Replace the app's deploy-hook URL",
        description: "Makes a new secret: the previous URL answers 401 `INVALID_DEPLOY_HOOK` from now on.",
      },
    });
}
