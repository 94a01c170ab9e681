// Safe paths inside an app's source tree. A client names files by paths relative to the tree's
// root ("src/index.ts"; "" is the root itself). Every path is checked as text first, then resolved
// one segment at a time with lstat, so nothing outside the root is ever reached.
//
// The rules:
// - Text: no NUL or other control characters, no backslash, not absolute, no "", "." or ".."
//   segment (so no "//" either; one trailing "/" is dropped), at most 255 bytes per segment, 4096
//   bytes in all and 64 segments. The HTTP layer has decoded the URL or body once and the path
//   is used as given, never decoded again; a percent-encoded ".", "/", "\", "%" or control
//   character is still refused, so a client or proxy that decodes twice cannot be led out.
// - Symbolic links (a repository or an earlier build may have left some) are never followed,
//   wherever they point: a link on the way to a path, or a link read, written or listed, is
//   refused with SYMLINK_NOT_FOLLOWED. A link itself may be moved, renamed or deleted (those
//   act on the link, not on what it points to), and it shows up in listings as "symlink".
// - Races: files are opened with O_NOFOLLOW, so a link swapped in after the check is not
//   followed either. The folders on the way are checked just before use; only the platform
//   writes to the tree and it never makes links, so they cannot turn into links in between.
import type { Stats } from "node:fs";
import { lstat, mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { ApiError } from "../../http/errors";
import { shown } from "../zip-directory";

export const MAX_SEGMENT_BYTES = 255;
export const MAX_PATH_BYTES = 4096;
export const MAX_PATH_SEGMENTS = 64;
const SYSTEM_PATH_MAX = 4096;

/** A path checked and resolved under a root; `stats` is the lstat of its last segment, null when nothing is there. */
export interface TreePath {
  /** The canonical relative path ("a/b"; "" for the root), as results and error messages show it. */
  path: string;
  segments: string[];
  absolute: string;
  stats: Stats | null;
}

// C0 controls (NUL included), DEL and C1 controls.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
// %2e ".", %2f "/", %5c "\", %25 "%", %00-%1f and %7f controls.
const ENCODED_TRAVERSAL = /%(2e|2f|5c|25|[01][0-9a-f]|7f)/i;

function invalidPath(path: string, why: string): never {
  throw new ApiError("INVALID_PATH", `Invalid path ${shown(path)}: ${why}`);
}

/** Checks a client's path as text and returns its segments ([] for the root). */
export function pathSegments(path: string): string[] {
  if (CONTROL_CHARACTER.test(path)) invalidPath(path, "it contains a control character");
  if (path.includes("\\")) invalidPath(path, "use / to separate folders, not a backslash");
  if (path.startsWith("/")) invalidPath(path, "give a path relative to the app's root, not an absolute one");
  if (ENCODED_TRAVERSAL.test(path)) invalidPath(path, "it contains a percent-encoded . / \\ % or control character");
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) invalidPath(path, `it is longer than ${MAX_PATH_BYTES} bytes`);
  const relative = path.endsWith("/") ? path.slice(0, -1) : path;
  if (relative === "") return [];
  const segments = relative.split("/");
  if (segments.length > MAX_PATH_SEGMENTS) invalidPath(path, `it has more than ${MAX_PATH_SEGMENTS} segments`);
  for (const segment of segments) {
    if (segment === "..") invalidPath(path, `".." is not allowed`);
    if (segment === "" || segment === ".") invalidPath(path, `it has an empty or "." segment`);
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) invalidPath(path, `a name is longer than ${MAX_SEGMENT_BYTES} bytes`);
  }
  return segments;
}

export function symlinkRefused(path: string): never {
  throw new ApiError("SYMLINK_NOT_FOLLOWED", `${shown(path)} is a symbolic link; links in an app's files are not followed`);
}

function notAFolder(path: string): never {
  throw new ApiError("NOT_A_DIRECTORY", `${shown(path)} is not a folder`);
}

async function lstatOrNull(absolute: string): Promise<Stats | null> {
  try {
    return await lstat(absolute);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

/** The root's own stats: the platform made it, so the data folder may be reached through a link. */
async function rootStats(root: string): Promise<Stats> {
  const stats = await stat(root).catch(() => null);
  if (!stats?.isDirectory()) throw new ApiError("NOT_FOUND", "This app has no source files yet; deploy it first");
  return stats;
}

/**
 * A missing folder on the way is made (mode 0755 less the umask) instead of refused; with
 * `countMissing`, nothing is made: the walk stops there (stats null) and tells how many it would make.
 */
export interface ResolveOptions {
  makeParents?: boolean;
  countMissing?: boolean;
}

/** Makes a folder; one that another request made meanwhile is found by the lstat that follows. */
async function makeFolder(absolute: string): Promise<Stats | null> {
  await mkdir(absolute).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EEXIST") throw error;
  });
  return lstatOrNull(absolute);
}

/**
 * Checks `path` and resolves it under `root` without following any link: every folder on the
 * way must exist (or is made, with `makeParents`) and be a real folder. The last segment may be
 * anything or nothing (see `stats`).
 */
export async function resolveInTree(root: string, path: string, options: ResolveOptions = {}): Promise<TreePath & { foldersToMake: number }> {
  const segments = pathSegments(path);
  const rootFolder = await rootStats(root);
  // The system's limit is on the whole path, root included.
  if (Buffer.byteLength(join(root, ...segments)) >= SYSTEM_PATH_MAX) invalidPath(path, "it is too long");
  let absolute = root;
  for (const [index, segment] of segments.entries()) {
    absolute = join(absolute, segment);
    let stats = await lstatOrNull(absolute);
    const isLast = index === segments.length - 1;
    if (isLast) return { path: segments.join("/"), segments, absolute, stats, foldersToMake: 0 };
    const soFar = segments.slice(0, index + 1).join("/");
    if (!stats && options.countMissing) {
      return { path: segments.join("/"), segments, absolute: join(root, ...segments), stats: null, foldersToMake: segments.length - 1 - index };
    }
    if (!stats && options.makeParents) stats = await makeFolder(absolute);
    if (!stats) throw new ApiError("NOT_FOUND", `Folder ${shown(soFar)} not found`);
    if (stats.isSymbolicLink()) symlinkRefused(soFar);
    if (!stats.isDirectory()) notAFolder(soFar);
  }
  return { path: "", segments, absolute: root, stats: rootFolder, foldersToMake: 0 };
}

/** An existing real folder (the root included). */
export async function resolveFolder(root: string, path: string): Promise<TreePath> {
  const resolved = await resolveInTree(root, path);
  if (!resolved.stats) throw new ApiError("NOT_FOUND", `Folder ${shown(resolved.path)} not found`);
  if (resolved.stats.isSymbolicLink()) symlinkRefused(resolved.path);
  if (!resolved.stats.isDirectory()) notAFolder(resolved.path);
  return resolved;
}

/** An existing entry of any kind but the root: what move and delete act on (a link itself included). */
export async function resolveEntry(root: string, path: string, action: string): Promise<TreePath & { stats: Stats }> {
  const resolved = await resolveInTree(root, path);
  if (resolved.segments.length === 0) invalidPath(path, `the app's root folder cannot be ${action}`);
  if (!resolved.stats) throw new ApiError("NOT_FOUND", `${shown(resolved.path)} not found`);
  return resolved as TreePath & { stats: Stats };
}

/** A path a new entry may take: not the root, inside a real folder (made first with `makeParents`). */
export async function resolveNewEntry(root: string, path: string, options: ResolveOptions = {}): Promise<TreePath & { foldersToMake: number }> {
  const resolved = await resolveInTree(root, path, options);
  if (resolved.segments.length === 0) invalidPath(path, "give the path of a file or folder inside the app's root");
  return resolved;
}
