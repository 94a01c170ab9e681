// What an image app's container gets that differs from an app built from source: it runs as the
// image's own USER (or the app's `user`), not PLATFORM_APP_USER; it gets back the capabilities
// official images need to prepare their files and drop to their user (ALLOWED_CAPABILITIES); its
// command is the image's ENTRYPOINT/CMD unless the app gives a startup command. An image whose
// labels claim to be the platform's is refused here too, right before a container of it starts.
import type { Config } from "../../config";
import { ALLOWED_CAPABILITIES, type ContainerSpec } from "../../docker/container-spec";
import type { DockerDriver } from "../../docker/driver";
import { ApiError } from "../../http/errors";
import type { AppRow } from "../deployer";
import { invalid } from "../deploy-form";
import { CONTAINER_USER_PATTERN, MAX_CONTAINER_ID } from "../model";

const CONTAINER_USER = new RegExp(CONTAINER_USER_PATTERN);

/** The platform's own label namespace (src/docker/container-spec.ts): no image of a user may carry it. */
const PLATFORM_LABEL = /^platform\./;

export function platformLabelsOf(labels: Record<string, string>): string[] {
  return Object.keys(labels).filter((name) => PLATFORM_LABEL.test(name));
}

/** The user an app's container runs as: an image app's own (undefined: its image's USER), else PLATFORM_APP_USER. */
export function containerUserOf(config: Pick<Config, "appUser">, app: AppRow): string | undefined {
  return app.runtime === "image" ? (app.containerUser ?? undefined) : config.appUser;
}

/** The `user` field of a deploy or settings change: undefined when not given, null ("" or null) for the image's own USER; else 400. */
export function containerUserField(user: unknown): string | null | undefined {
  if (user === undefined) return undefined;
  if (user === null || user === "") return null;
  const text = typeof user === "number" && Number.isInteger(user) ? String(user) : user;
  if (typeof text !== "string" || !CONTAINER_USER.test(text)) invalid("user", "a uid or a user name of lowercase letters, digits, '_' and '-', optionally with ':' and a gid or group name");
  if (text.split(":").some((part) => /^\d+$/.test(part) && Number(part) > MAX_CONTAINER_ID)) invalid("user", `uids and gids go up to ${MAX_CONTAINER_ID}`);
  return text;
}

/** What an image app's container spec changes (nothing for other apps); refuses an image with the platform's labels. */
export async function imageAppSpec(driver: DockerDriver, app: AppRow, image: string): Promise<Partial<ContainerSpec>> {
  if (app.runtime !== "image") return {};
  const claimed = platformLabelsOf((await driver.inspectImage(image)).labels);
  if (claimed.length) throw new ApiError("IMAGE_NOT_ALLOWED", `the image carries labels of the platform's own (${claimed.slice(0, 5).join(", ")}): refused`);
  const command = app.startupCommand === "auto" ? undefined : app.startupCommand;
  return {
    capabilities: [...ALLOWED_CAPABILITIES],
    ...(command && { entrypoint: ["/bin/sh", "-c"], command: [command] }),
  };
}
