// The pure checks of an app's volume list: names, mount paths (absolute, normalized, never over the
// kernel's own file systems or the app's code), how many, and no two sharing or nesting a path.
import { ApiError } from "../http/errors";

export const VOLUME_NAME_PATTERN = "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$";
export const MAX_MOUNT_PATH_LENGTH = 255;
export const MAX_MOUNT_PATH_SEGMENTS = 32;
/** Volumes one app may mount. */
export const MAX_VOLUMES_PER_APP = 10;
/** Where a ZIP or git app's code is: a volume there (or above it) would hide it. */
export const APP_CODE_PATH = "/app";
/** The kernel's and the engine's own file systems: a volume over them breaks the container. */
const RESERVED_PATHS = ["/proc", "/sys", "/dev"];
/** Files the engine writes into every container: a volume over one fails the container's start. */
const ENGINE_FILES = ["/etc/hosts", "/etc/resolv.conf", "/etc/hostname"];
/** One path segment: no shell or mount syntax, no `.` or `..` (checked apart). */
const SEGMENT = /^[A-Za-z0-9._@+-]{1,128}$/;

export interface VolumeMount {
  name: string;
  mountPath: string;
}

export function checkVolumeName(name: string): void {
  if (!new RegExp(VOLUME_NAME_PATTERN).test(name)) {
    throw new ApiError("INVALID_VOLUME_NAME", `Volume name '${name.slice(0, 80)}': lowercase letters, digits and dashes, 1-63 characters, not starting or ending with a dash`);
  }
}

const within = (path: string, parent: string) => path === parent || path.startsWith(`${parent}/`);

/**
 * The normalized form of an absolute mount path (repeated and trailing slashes dropped), or 400
 * INVALID_MOUNT_PATH. `hidesCode`: the app's code is at APP_CODE_PATH (ZIP and git apps).
 */
export function normalizeMountPath(path: string, { codeAtApp }: { codeAtApp: boolean }): string {
  const refuse = (why: string): never => {
    throw new ApiError("INVALID_MOUNT_PATH", `Mount path '${path.slice(0, 300)}': ${why}`);
  };
  if (path.length > MAX_MOUNT_PATH_LENGTH) refuse(`at most ${MAX_MOUNT_PATH_LENGTH} characters`);
  if (!path.startsWith("/")) refuse("must be absolute (start with /)");
  const segments = path.split("/").filter((segment) => segment !== "");
  if (segments.length > MAX_MOUNT_PATH_SEGMENTS) refuse(`at most ${MAX_MOUNT_PATH_SEGMENTS} segments`);
  for (const segment of segments) {
    if (segment === "." || segment === "..") refuse("no . or .. segments");
    if (!SEGMENT.test(segment)) refuse("segments of letters, digits and . _ @ + - only");
  }
  const normalized = `/${segments.join("/")}`;
  if (normalized === "/") refuse("the root of the file system cannot be a volume");
  const reserved = RESERVED_PATHS.find((parent) => within(normalized, parent));
  if (reserved) refuse(`${reserved} and what is under it belong to the kernel`);
  const engineFile = ENGINE_FILES.find((file) => within(normalized, file));
  if (engineFile) refuse(`${engineFile} is written by the engine into every container`);
  if (codeAtApp && within(APP_CODE_PATH, normalized)) refuse(`it would hide the app's code in ${APP_CODE_PATH} (mount under it instead, e.g. ${APP_CODE_PATH}/data)`);
  return normalized;
}

/**
 * The app's whole volume list checked and normalized: valid names listed once, valid paths, at
 * most MAX_VOLUMES_PER_APP, and no path equal to or inside another (400 MOUNT_PATHS_OVERLAP).
 */
export function checkVolumeMounts(mounts: VolumeMount[], options: { codeAtApp: boolean }): VolumeMount[] {
  if (mounts.length > MAX_VOLUMES_PER_APP) throw new ApiError("TOO_MANY_VOLUMES", `An app mounts at most ${MAX_VOLUMES_PER_APP} volumes; ${mounts.length} were given`);
  const checked: VolumeMount[] = [];
  for (const mount of mounts) {
    checkVolumeName(mount.name);
    if (checked.some((other) => other.name === mount.name)) throw new ApiError("INVALID_VOLUME_NAME", `Volume '${mount.name}' is listed twice`);
    const mountPath = normalizeMountPath(mount.mountPath, options);
    const clash = checked.find((other) => within(mountPath, other.mountPath) || within(other.mountPath, mountPath));
    if (clash) throw new ApiError("MOUNT_PATHS_OVERLAP", `Volumes '${clash.name}' (${clash.mountPath}) and '${mount.name}' (${mountPath}) share or nest their mount paths`);
    checked.push({ name: mount.name, mountPath });
  }
  return checked;
}

/** Bytes of a `volumes` form field (JSON text) read at most: far past any list of MAX_VOLUMES_PER_APP. */
const MAX_VOLUMES_FIELD_BYTES = 64 * 1024;

/**
 * The `volumes` field of a deploy form: JSON text of `[{name, mountPath}]` (400 VALIDATION_FAILED
 * for anything else); undefined when absent, which leaves the app's volumes as they are.
 */
export function parseVolumesField(text: string | undefined): VolumeMount[] | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  const refuse = (): never => {
    throw new ApiError("VALIDATION_FAILED", "Invalid body field 'volumes': a JSON array of {\"name\", \"mountPath\"} objects");
  };
  if (text.length > MAX_VOLUMES_FIELD_BYTES) refuse();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return refuse();
  }
  if (!Array.isArray(parsed)) return refuse();
  return parsed.map((item: unknown) => {
    if (typeof item !== "object" || item === null || Array.isArray(item)) return refuse();
    const { name, mountPath, ...rest } = item as Record<string, unknown>;
    if (typeof name !== "string" || typeof mountPath !== "string" || Object.keys(rest).length > 0) return refuse();
    return { name, mountPath };
  });
}

/** The `releaseStrategy` field of a deploy form. */
export function parseReleaseStrategyField(text: string | undefined): "start-first" | "stop-first" | undefined {
  if (text === undefined || text === "") return undefined;
  if (text !== "start-first" && text !== "stop-first") throw new ApiError("VALIDATION_FAILED", "Invalid body field 'releaseStrategy': start-first or stop-first");
  return text;
}
