// POST /api/apps/deploy-image: the usual app fields plus `image` (and an optional `user`), as JSON
// or a form. The reference is checked before anything is kept (Docker's grammar, bounded, a
// registry image deploys may pull from); the pull itself is the build (./pull.ts), in the
// background as every build is. Deploying a name that exists releases a new version of that app.
import type { Principal } from "../../http/auth";
import { ApiError } from "../../http/errors";
import { readFields } from "../files/bodies";
import { invalid, parseDeployFields } from "../deploy-form";
import { asFormText } from "../repository/reference";
import { imageReferenceRefusal, parseImageReference, registryPullRefusal } from "../dockerfile-images";
import type { AppsService } from "../service";
import { containerUserField } from "./container";

const MAX_IMAGE_REFERENCE = 512;

export interface ImageDeployInput extends ReturnType<typeof parseDeployFields> {
  image: string;
  /** undefined: not given, the app keeps its user; null: the image's own USER. */
  user: string | null | undefined;
}

/** The deploy's fields, or 400 naming the one that is wrong; 400 IMAGE_NOT_ALLOWED for an image no deploy may pull. */
export function imageDeployInput(fields: Record<string, unknown>, registries: readonly string[]): ImageDeployInput {
  const { image, user, runtime, builder, ...rest } = fields;
  if (runtime !== undefined || builder !== undefined) invalid(runtime !== undefined ? "runtime" : "builder", "an image app is not built from source: leave it out");
  if (typeof image !== "string" || image.length === 0) invalid("image", "required: a reference such as ghcr.io/owner/app:1.4 or name@sha256:…");
  if (image.length > MAX_IMAGE_REFERENCE) invalid("image", `at most ${MAX_IMAGE_REFERENCE} characters`);
  const refused = imageReferenceRefusal(image, registries);
  const parsed = parseImageReference(image);
  if (typeof parsed === "string") invalid("image", `${image} ${parsed}`);
  if (refused) throw new ApiError("IMAGE_NOT_ALLOWED", `The image ${image} ${refused}`);
  const registryRefusal = registryPullRefusal(parsed.registry, registries);
  if (registryRefusal) throw new ApiError("IMAGE_NOT_ALLOWED", `The image ${image} ${registryRefusal}`);
  const containerUser = containerUserField(user);
  const input = parseDeployFields({ ...asFormText(rest), runtime: "node" });
  return { ...input, runtime: "node", image, user: containerUser };
}

/** Accepts the deploy and schedules its pull and release; answers as the other deploys do. */
export async function deployImage(apps: AppsService, principal: Principal, request: Request) {
  const ctx = apps.context;
  const input = imageDeployInput(await readFields(request), ctx.config.buildRegistries);
  const machineId = apps.placeWithVolumes(principal.workspaceId, input);
  await apps.volumes.assertRoom(principal.workspaceId, apps.records.planVolumes(principal.workspaceId, { ...input, runtime: "image" }, machineId));
  const { appId, existing, reattached } = apps.records.accept(
    principal.workspaceId,
    { ...input, runtime: "image" },
    machineId,
    { runtime: "image", image: input.image, ...(input.user !== undefined && { containerUser: input.user }) },
    (app, subdomain) => apps.moveRoute(app, subdomain),
  );
  // Left out on the first deploy: the pull sets it from the image's EXPOSE (./pull.ts).
  if (!existing && input.exposePort === undefined) apps.records.clearExposePort(appId);
  const buildId = apps.records.newBuild(appId, existing ? "redeploy" : "image");
  ctx.buildLogs.append(appId, buildId, `==> Deploy of the image ${input.image} accepted`);
  apps.records.logReattached(appId, buildId, reattached);
  apps.deployer.schedule(appId, (signal) => apps.deployer.buildAndRelease(appId, buildId, undefined, signal));
  return { app: apps.publicApp(apps.get(principal.workspaceId, appId)), buildId, created: !existing, reattached };
}
