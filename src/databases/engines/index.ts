// The four engines by name, and the rules shared by all of them: which image a database runs and
// how its connection strings look (masked in lists).
import type { Credentials, Engine, EngineDefinition } from "./types";
import { postgresql } from "./postgresql";
import { mysql } from "./mysql";
import { mongodb } from "./mongodb";
import { redis } from "./redis";

export type { Credentials, DumpFormat, DumpSample, Engine, EngineCommand, EngineDefinition, Probe, RestorePlan, VolumeMount } from "./types";
export { DUMP_SAMPLE_BYTES } from "./types";

export const ENGINES: Record<Engine, EngineDefinition> = { postgresql, mysql, mongodb, redis };
export const ENGINE_NAMES = Object.keys(ENGINES) as Engine[];

export const MASKED_PASSWORD = "****";

/** `postgres:17` -> { repository: "postgres", tag: "17" }; registry hosts and digests stay in the repository. */
function splitImage(image: string): { repository: string; tag: string | null } {
  if (image.includes("@")) return { repository: image, tag: null };
  const slash = image.lastIndexOf("/");
  const colon = image.lastIndexOf(":");
  return colon > slash ? { repository: image.slice(0, colon), tag: image.slice(colon + 1) } : { repository: image, tag: null };
}

function isOfficial(repository: string, official: string): boolean {
  return [official, `library/${official}`, `docker.io/${official}`, `docker.io/library/${official}`].includes(repository);
}

/**
 * The image a database runs. When the engine's image setting (PLATFORM_IMAGE_<ENGINE>) names the
 * official repository (`postgres:17`, `library/postgres`, `docker.io/library/postgres:16`), its tag
 * is replaced by the database's `version`. When it names any other image (a mirror, a stand-in),
 * that image is used exactly as set and `version` is only recorded.
 */
export function resolveImage(setting: string, definition: EngineDefinition, version: string): string {
  const { repository } = splitImage(setting);
  return isOfficial(repository, definition.officialRepository) ? `${repository}:${version}` : setting;
}

export function connectionStringOf(definition: EngineDefinition, credentials: Credentials, host: string, port: number, masked = false): string {
  const urlHost = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host; // IPv6 literal
  return definition.connectionString(masked ? { ...credentials, password: MASKED_PASSWORD } : credentials, urlHost, port);
}
