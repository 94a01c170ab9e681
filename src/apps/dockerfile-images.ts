// The images a Dockerfile names (FROM, COPY --from): which references may be used at all, and
// each one made present on the engine by the platform, inspected and answered as its full image
// ID, which the re-emitted Dockerfile names instead (./dockerfile-rewrite.ts). The engine then
// never resolves a name nor contacts a registry during the build; the only registry contact is the
// platform's own pull, made after the registry host was checked.
//
// The engine pulls from the host's network, past the workspace's egress rules, and follows what
// the registry answers: the token realm it names, the redirects of its blob downloads. A registry
// the tenant runs could send it anywhere (the host's loopback, a metadata endpoint), whatever its
// own name resolves to, now or a moment later. So a missing image is pulled only from a short list
// of public registries run by their operators (PUBLIC_REGISTRIES) and from those the administrator
// lists (PLATFORM_BUILD_REGISTRIES, trusted whatever their address); any other registry is refused
// before a pull. An image of a public registry already on the engine under the name the reference
// gives needs no pull; one of any other registry is always pulled, with the workspace's credentials
// for it if any: the engine then checks this workspace may read it, which a name another
// workspace's pull left on the engine (or an administrator's) says nothing about.
// Names not listed by the administrator must besides be host names (no IP literal, not localhost),
// and a public registry's name must resolve to public addresses only.
import { promises as dns } from "node:dns";
import { isIPv4, isIPv6 } from "node:net";
import { isPublicIpv4, isPublicIpv6 } from "../certificates/dns-check";
import { LABEL_MANAGED } from "../docker/container-spec";
import { BuildFailed, DockerNotFound, type DockerDriver } from "../docker/driver";
import type { ImageConfig, RegistryAuth } from "../docker/images";
import { ApiError } from "../http/errors";

const DEFAULT_REGISTRY = "docker.io";
/** Registries a build pulls from without the administrator listing them: public ones, run by their operators. */
export const PUBLIC_REGISTRIES: readonly string[] = [
  DEFAULT_REGISTRY,
  "registry-1.docker.io",
  "ghcr.io",
  "quay.io",
  "gcr.io",
  "registry.gitlab.com",
  "public.ecr.aws",
  "mcr.microsoft.com",
];
const LEGACY_DEFAULT_REGISTRY = "index.docker.io";
const LOOKUP_TIMEOUT_MS = 5_000;
const MAX_PULL_FAILURE_LENGTH = 300;

/** The platform's own image names (src/apps/builder.ts), under any registry: another app's image, or a build's, is never a starting point. */
const PLATFORM_IMAGE_NAME = /platform-(?:app|build)-[a-z0-9_]/i;
/** What the engine may take for an image ID: a full or short hex ID (any unique prefix will do), with or without `sha256:`. */
const IMAGE_ID = /^(?:sha256:.*|[0-9a-f]{1,64}(?::[\w.-]*)?)$/i;
/** Docker's longest name is 255 characters, its longest tag 128, a digest some 100. */
const MAX_REFERENCE_LENGTH = 512;
/** The characters of an image reference; quotes, escapes and `$` would be resolved by the engine after any check. */
const PLAIN_REFERENCE = /^[A-Za-z0-9._:/@-]+$/;
/** Docker's reference grammar (distribution/reference): [registry/]path[:tag][@digest]. */
const REGISTRY = /^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?$/;
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^\w[\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;

export interface ImageReference {
  /** Registry host, with its port if any: `docker.io` when the reference names none. */
  registry: string;
  /** The names the engine lists for the image when the reference names it (`busybox:latest`, `registry.example/x@sha256:…`). */
  engineName: string;
}

/** A reference as Docker reads it, or why it is not one. */
export function parseImageReference(reference: string): ImageReference | string {
  const [named = "", digest, ...more] = reference.split("@");
  if (more.length || (digest !== undefined && !DIGEST.test(digest))) return "is not a valid image reference";
  const lastSlash = named.lastIndexOf("/");
  const tagAt = named.lastIndexOf(":");
  const tag = tagAt > lastSlash ? named.slice(tagAt + 1) : undefined;
  const name = tag === undefined ? named : named.slice(0, tagAt);
  if (tag !== undefined && !TAG.test(tag)) return "is not a valid image reference";
  const slash = name.indexOf("/");
  const first = slash < 0 ? "" : name.slice(0, slash);
  const hasRegistry = slash > 0 && (/[.:]/.test(first) || first === "localhost" || first !== first.toLowerCase());
  const registry = !hasRegistry || first === LEGACY_DEFAULT_REGISTRY ? DEFAULT_REGISTRY : first;
  const path = hasRegistry ? name.slice(slash + 1) : name;
  if (!REGISTRY.test(registry) || !path.split("/").every((component) => PATH_COMPONENT.test(component))) return "is not a valid image reference";
  const familiar = registry === DEFAULT_REGISTRY ? path.replace(/^library\/(?=[^/]+$)/, "") : `${registry}/${path}`;
  return { registry, engineName: digest ? `${familiar}@${digest}` : `${familiar}:${tag ?? "latest"}` };
}

const hostOf = (registry: string) => registry.replace(/:\d+$/, "").toLowerCase();

/** Why an image reference may not be used at all, or undefined: checked before anything asks the engine. `registries`: PLATFORM_BUILD_REGISTRIES. */
export function imageReferenceRefusal(reference: string, registries: readonly string[]): string | undefined {
  if (reference.includes("$")) return "names an image through a variable: write the image's name itself";
  if (reference.startsWith("[")) return "names a registry by its IPv6 address: registries are named by host name";
  if (!PLAIN_REFERENCE.test(reference)) return "names an image with quotes or escapes: write the image's name plainly";
  if (reference.length > MAX_REFERENCE_LENGTH) return "is not a valid image reference";
  if (IMAGE_ID.test(reference)) return "names an image by its ID: name a base image by repository and tag, or an earlier stage by its name";
  if (PLATFORM_IMAGE_NAME.test(reference)) return "names an image of the platform's apps: start from a base image instead";
  const parsed = parseImageReference(reference);
  if (typeof parsed === "string") return parsed;
  if (registries.includes(parsed.registry.toLowerCase())) return undefined;
  const host = hostOf(parsed.registry);
  // A numeric last label is an address in some spelling (127.1, 2130706433, 0x7f.1): top-level domains never are.
  if (isIPv4(host) || /(?:^|\.)(?:\d+|0x[0-9a-f]*)$/.test(host)) return `names the registry ${parsed.registry} by its IP address: registries are named by host name`;
  if (host === "localhost" || host.endsWith(".localhost")) return `names the registry ${parsed.registry}, on the platform's own machine: registries must be public hosts`;
  return undefined;
}

export type HostLookup = (host: string) => Promise<string[]>;

/** The system resolver's addresses of a host name, bounded in time. */
export const lookupHost: HostLookup = async (host) => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${LOOKUP_TIMEOUT_MS / 1000} s`)), LOOKUP_TIMEOUT_MS);
  });
  try {
    return (await Promise.race([dns.lookup(host, { all: true }), timeout])).map((entry) => entry.address);
  } finally {
    clearTimeout(timer);
  }
};

const isPublicAddress = (address: string) => (isIPv6(address) ? isPublicIpv6(address) : isPublicIpv4(address));

/** Why a build may not pull from this registry, or undefined: only public registries and those listed (PLATFORM_BUILD_REGISTRIES) are. */
export function registryPullRefusal(registry: string, registries: readonly string[]): string | undefined {
  const name = registry.toLowerCase();
  if (PUBLIC_REGISTRIES.includes(name) || registries.includes(name)) return undefined;
  return `names the registry ${registry}, which builds do not pull from: only ${PUBLIC_REGISTRIES.join(", ")} and the registries listed in PLATFORM_BUILD_REGISTRIES`;
}

/** Why the engine may not pull from this registry, or undefined: unless listed, its name must resolve, to public addresses only. */
export async function registryAddressRefusal(registry: string, lookup: HostLookup, registries: readonly string[]): Promise<string | undefined> {
  if (registry === DEFAULT_REGISTRY || registries.includes(registry.toLowerCase())) return undefined;
  let addresses: string[];
  try {
    addresses = await lookup(hostOf(registry));
  } catch (error) {
    return `names the registry ${registry}, whose name does not resolve (${(error as Error).message})`;
  }
  const inner = addresses.filter((address) => !isPublicAddress(address));
  if (!addresses.length) return `names the registry ${registry}, whose name does not resolve`;
  if (inner.length) return `names the registry ${registry}, which resolves to ${inner.join(", ")}: not a public address, which the engine would reach from the platform's own network`;
  return undefined;
}

export interface PinOptions {
  lookup: HostLookup;
  /** PLATFORM_BUILD_REGISTRIES. */
  registries: readonly string[];
  /** The workspace's credentials for a registry, if any. */
  authFor: (registry: string) => RegistryAuth | undefined;
  log: (line: string) => void;
  signal: AbortSignal;
}

/**
 * The image `reference` names, made present on the engine (pulled when missing, or always when
 * not from a public registry; from a listed registry only), as its full ID; or why it may not be
 * built from (a string for the log).
 * Engine outages (ApiError) are thrown.
 */
export async function pinImage(driver: DockerDriver, reference: string, options: PinOptions): Promise<{ id: string } | { refused: string }> {
  const parsed = parseImageReference(reference);
  if (typeof parsed === "string") return { refused: parsed };
  const isPublic = PUBLIC_REGISTRIES.includes(parsed.registry.toLowerCase());
  let image = isPublic ? await inspectIfPresent(driver, reference) : undefined;
  if (!image) {
    const refused = registryPullRefusal(parsed.registry, options.registries) ?? (await registryAddressRefusal(parsed.registry, options.lookup, options.registries));
    if (refused) return { refused };
    const auth = options.authFor(parsed.registry);
    options.log(`    pulling ${reference}${auth ? ` with the workspace's credentials for ${parsed.registry}` : ""}`);
    try {
      await driver.pullImage(reference, { signal: options.signal, ...(auth && { auth }) });
    } catch (error) {
      if (error instanceof ApiError || options.signal.aborted) throw error;
      return { refused: `names the image ${reference}, which could not be pulled: ${pullFailure(error as Error, auth?.password ?? "")}` };
    }
    image = await inspectIfPresent(driver, reference);
    if (!image) return { refused: `names the image ${reference}, which was pulled but is not on the engine` };
  }
  // The engine also reads a name as an ID prefix when no image has that name: only a name it holds will do.
  if (!image.names.includes(parsed.engineName)) return { refused: `names ${reference}, which is no image's name on the engine (the engine would read it as an image ID)` };
  if (image.labels[LABEL_MANAGED]) return { refused: "names an image the platform made: start from a base image instead" };
  if (image.onBuild.length) {
    return { refused: `names the image ${reference}, which has ONBUILD instructions (${image.onBuild.join("; ").slice(0, 200)}): they would run unchecked in this build; start from an image without them` };
  }
  return { id: image.id };
}

/**
 * The engine's reason for a failed pull, as the tenant's log shows it: its first line, cut short.
 * It may quote what the registry (a public one or the administrator's) or its token realm answered.
 */
function pullFailure(error: Error, password: string): string {
  const [firstLine = ""] = (password ? error.message.split(password).join("****") : error.message).split("\n", 1);
  return firstLine.length > MAX_PULL_FAILURE_LENGTH ? `${firstLine.slice(0, MAX_PULL_FAILURE_LENGTH)}…` : firstLine;
}

async function inspectIfPresent(driver: DockerDriver, reference: string): Promise<ImageConfig | undefined> {
  try {
    return await driver.inspectImage(reference);
  } catch (error) {
    if (error instanceof DockerNotFound) return undefined;
    if (error instanceof ApiError) throw error;
    throw new BuildFailed(`the image ${reference} named in the Dockerfile could not be looked up: ${(error as Error).message}`);
  }
}
