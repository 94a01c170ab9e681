// Route of image deploys: POST /api/apps/deploy-image (./deploy.ts).
import { Elysia, t } from "elysia";
import type { ServerContext } from "../../http/context";
import { authPlugin } from "../../http/auth";
import { ok } from "../../http/envelope";
import { formsBody, json, ref, responses } from "../../http/responses";
import { AppSchema, containerUserInput, deployForm } from "../model";
import { VOLUME_ERRORS } from "../../volumes/model";
import { deployImage } from "./deploy";

const { file: _zip, runtime: _runtime, builder: _builder, ...appFields } = deployForm.properties;

const deployImageBody = t.Object({
  ...appFields,
  image: t.String({ maxLength: 512, description: "Image reference: `ghcr.io/owner/app:1.4`, `name@sha256:…` (Docker's grammar; the tag defaults to `latest`)" }),
  user: t.Optional(containerUserInput),
  envVars: t.Optional(t.Union([t.Record(t.String(), t.String()), t.String({ description: "A JSON object as text (forms)" })])),
});

export function imageDeployRoutes(ctx: ServerContext) {
  return new Elysia({ prefix: "/api/apps", tags: ["Apps"] })
    .use(authPlugin(ctx))
    .post(
      "/deploy-image",
      async ({ principal, request, set }) => {
        const { app, buildId, created } = await deployImage(ctx.apps, principal, request);
        set.status = 202;
        return ok({ app, buildId, created });
      },
      {
        auth: true,
        parse: "none",
        detail: {
          operationId: "deployAppFromImage",
          requestBody: formsBody(deployImageBody, "JSON, or a URL-encoded or multipart form (envVars as JSON text)"),
          responses: responses(
            { 202: json("Accepted: the pull runs in the background", { app: ref(AppSchema), buildId: t.String(), created: t.Boolean({ description: "A new app (false: a new release of an existing one)" }) }) },
            "VALIDATION_FAILED", "INVALID_JSON", "UNSUPPORTED_MEDIA_TYPE", "IMAGE_NOT_ALLOWED", "UNKNOWN_MACHINE", "NAME_TAKEN", "SUBDOMAIN_TAKEN", "QUOTA_EXCEEDED", ...VOLUME_ERRORS,
          ),
          summary: "Deploy an app from a prebuilt image",
          description:
            "The fields of a ZIP deploy (name, memoryMB, cpus, startupCommand, envVars, exposePort, subdomain, autoRestart, " +
            "machineId, healthCheck, volumes, releaseStrategy) without `file`, `runtime` or `builder`, plus `image` and optionally " +
            "`user`. The app gets runtime `image`. `volumes` (`[{name, mountPath}]`) mount named volumes that outlive redeploys " +
            "(an image's data folder belongs in one; 400 with the volume codes listed for a bad name, path or overlap, 409 " +
            "`VOLUME_ATTACHED` / `VOLUME_ON_OTHER_MACHINE`); `releaseStrategy` `start-first` or `stop-first` (the default with " +
            "volumes); `healthCheck` (JSON, or JSON text in a form) gates the release on the probe as for any app. " +
            "Answers 202 at once with `app`, `buildId` and `created`; the build is the pull, in the background: the engine pulls " +
            "the image (with the workspace's credentials for its registry, POST /api/registries, if any), its progress in the " +
            "build log; the build records the digest pulled (`imageDigest`) and the app runs exactly that image. A redeploy pulls " +
            "the reference again (a moved tag gives a new digest); a rollback releases an earlier build's image while it is kept " +
            "(PLATFORM_APP_IMAGES_KEPT). Images come only from the public registries and those in PLATFORM_BUILD_REGISTRIES " +
            "(400 `IMAGE_NOT_ALLOWED` otherwise, and for an image ID or the platform's own image names). The build fails, " +
            "the version serving keeps serving, and the log says why, when: the image or tag does not exist, the registry refuses " +
            "the credentials or asks for some, it cannot be reached, the pull passes PLATFORM_IMAGE_PULL_TIMEOUT_SECONDS, the " +
            "image is larger than PLATFORM_IMAGE_MAX_MB unpacked (it is removed), or it carries `platform.*` labels. The " +
            "container runs the image's ENTRYPOINT/CMD (or `startupCommand` with `/bin/sh -c`), as the image's USER unless " +
            "`user` is given (left out on a redeploy: the app keeps its user), with PORT set to `exposePort`, hardened as every app's container (no privileges, no new " +
            "privileges, memory/CPU/pids limits, egress rules) with only CHOWN, SETUID, SETGID, DAC_OVERRIDE, FOWNER and " +
            "NET_BIND_SERVICE capabilities. A name that exists in the workspace as an app built from source: 409 `NAME_TAKEN`.",
        },
      },
    );
}
