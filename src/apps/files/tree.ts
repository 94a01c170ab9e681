// The file manager of an app's source tree: list, read, write, create, make folders, move,
// delete, walk (for bulk renames), apply a batch of renames, and stream the tree as a ZIP. Every
// path goes through paths.ts (checked, resolved without following links); results are plain data
// with canonical relative paths. Changes to one tree run one at a time (in this process), so an
// `ifMatch` check and the write it guards cannot interleave with another change; a file is written
// whole or not at all (./durable-write.ts).
import { Zip, ZipDeflate, ZipPassThrough } from "fflate";
import { createHash } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { link, lstat, mkdir, open, opendir, rename, rm, rmdir, unlink, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { ApiError, diskFull, isDiskFull, rethrowDiskFull } from "../../http/errors";
import { shown, utf8 } from "../zip-directory";
import { removeMadeFolders, WRITE_TEMP_NAME, writeWhole } from "./durable-write";
import { entryCharge, MIN_ENTRY_BYTES } from "../../quotas/usage";
import { resolveEntry, resolveFolder, resolveInTree, resolveNewEntry, symlinkRefused, type TreePath } from "./paths";

/** Most entries one folder listing returns. */
export const MAX_FOLDER_ENTRIES = 5000;
/** Largest file read or written as text. */
export const MAX_TEXT_FILE_BYTES = 1024 * 1024;
/** A NUL byte in this many first bytes makes a file binary. */
const BINARY_SNIFF_BYTES = 8192;
const READ_CHUNK_BYTES = 64 * 1024;
const FILE_MODE = 0o644;
// O_NONBLOCK: a FIFO put in a file's place must not hang the open; regular files ignore it.
const OPEN_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
// ZIP stores times as DOS dates, which only cover 1980-2099 (fflate throws outside it).
const ZIP_EARLIEST = Date.UTC(1980, 0, 2);
const ZIP_LATEST = Date.UTC(2099, 11, 30);

export interface ListedEntry {
  name: string;
  path: string;
  /** A link is listed as "symlink" whatever it points to; it is never followed. */
  type: "file" | "dir" | "symlink";
  /** Bytes of a file; 0 for folders and links. */
  size: number;
  modifiedAt: string;
}

export interface FileVersion {
  path: string;
  size: number;
  modifiedAt: string;
  /** sha256 of the file's bytes, hex: what `ifMatch` is compared with. */
  version: string;
}

export interface FileContent extends FileVersion {
  /** Not valid UTF-8, or a NUL byte in the first 8 KiB: `content` is then null. */
  binary: boolean;
  content: string | null;
}

/** What the bulk-rename planner is given; links and special files count as "file" (never descended into). */
export interface WalkedEntry {
  path: string;
  type: "file" | "dir";
}

export interface RenameStep {
  from: string;
  to: string;
  overwrite: boolean;
}

export type RenameOutcome =
  | { from: string; to: string; result: "renamed" | "overwritten" }
  | { from: string; to: string; result: "failed"; reason: string };

/**
 * Asked before a change adds `growthBytes` to the tree, as the disk quota counts it (every entry
 * at least MIN_ENTRY_BYTES; negative when it shrinks): throws to refuse the change, before
 * anything is written.
 */
export type GrowthCheck = (growthBytes: number) => Promise<void>;

/** Tails of the change queues of the trees being changed, by root. */
const changeQueues = new Map<string, Promise<unknown>>();

function oneChangeAtATime<T>(root: string, change: () => Promise<T>): Promise<T> {
  const result = (changeQueues.get(root) ?? Promise.resolve()).then(change);
  const tail = result.catch(() => undefined);
  changeQueues.set(root, tail);
  void tail.then(() => changeQueues.get(root) === tail && changeQueues.delete(root));
  return result;
}

function versionOf(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function isBinary(bytes: Uint8Array): boolean {
  if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return true;
  try {
    utf8.decode(bytes);
    return false;
  } catch {
    return true;
  }
}

function tooLarge(path: string, size: number): never {
  throw new ApiError("FILE_TOO_LARGE", `${shown(path)} is ${size} bytes; files of up to ${MAX_TEXT_FILE_BYTES} bytes can be opened and saved here`);
}

function textBytes(path: string, content: string): Uint8Array {
  const bytes = new TextEncoder().encode(content);
  if (bytes.length > MAX_TEXT_FILE_BYTES) tooLarge(path, bytes.length);
  return bytes;
}

/** A regular file's stats, or the refusal that says what is there instead. */
function requireFile(target: TreePath): Stats {
  if (!target.stats) throw new ApiError("NOT_FOUND", `File ${shown(target.path)} not found`);
  if (target.stats.isSymbolicLink()) symlinkRefused(target.path);
  if (target.stats.isDirectory()) throw new ApiError("NOT_A_FILE", `${shown(target.path)} is a folder, not a file`);
  if (!target.stats.isFile()) throw new ApiError("NOT_A_FILE", `${shown(target.path)} is not a regular file`);
  return target.stats;
}

function typeOf(stats: Stats): ListedEntry["type"] {
  if (stats.isSymbolicLink()) return "symlink";
  return stats.isDirectory() ? "dir" : "file";
}

/** Opens a file without following a link that took its place since it was resolved. */
async function openFile(path: string, absolute: string): Promise<{ handle: FileHandle; stats: Stats }> {
  const handle = await open(absolute, OPEN_READ).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ELOOP") symlinkRefused(path);
    throw error;
  });
  const stats = await handle.stat();
  if (stats.isFile()) return { handle, stats };
  await handle.close();
  throw new ApiError("NOT_A_FILE", `${shown(path)} is not a regular file`);
}

/** All the bytes of an open file, refused past `limit` (the file may have grown since its stat). */
async function readUpTo(handle: FileHandle, path: string, limit: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(limit + 1);
  let filled = 0;
  while (filled < bytes.length) {
    const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, filled);
    if (bytesRead === 0) return bytes.subarray(0, filled);
    filled += bytesRead;
  }
  return tooLarge(path, filled);
}

async function currentVersion(target: TreePath): Promise<string> {
  const { handle } = await openFile(target.path, target.absolute);
  try {
    const hash = createHash("sha256");
    const buffer = new Uint8Array(READ_CHUNK_BYTES);
    for (let position = 0; ; ) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) return hash.digest("hex");
      hash.update(buffer.subarray(0, bytesRead));
      position += bytesRead;
    }
  } finally {
    await handle.close();
  }
}

function versionView(path: string, stats: Stats, bytes: Uint8Array): FileVersion {
  return { path, size: stats.size, modifiedAt: stats.mtime.toISOString(), version: versionOf(bytes) };
}

/** Whether `inner` lies inside the folder `outer`. */
function isInside(inner: string[], outer: string[]): boolean {
  return inner.length > outer.length && outer.every((segment, index) => inner[index] === segment);
}

function isSameEntry(a: Stats, b: Stats): boolean {
  return a.ino === b.ino && a.dev === b.dev;
}

const ERRNO_REASONS: Record<string, string> = {
  ENOENT: "it no longer exists",
  ENOTEMPTY: "a folder that is not empty is in the way",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EBUSY: "it is in use",
};

/** A failure as a rename result shows it: never a server path. */
function reasonOf(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  const code = (error as NodeJS.ErrnoException).code ?? "";
  return ERRNO_REASONS[code] ?? `the system refused (${code || "unknown error"})`;
}

/** Code-point order: the same on every machine, whatever its locale. */
function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * Everything under a folder: its children sorted by name, then each subfolder's the same way, so
 * a folder always comes before its contents. Links and special files are never descended into.
 * `check` sees each child as it is read, before a folder's children are held to be sorted.
 */
async function* entriesUnder(
  folder: TreePath,
  check: (entry: WalkedEntry) => void = () => undefined,
): AsyncGenerator<{ path: string; absolute: string; isFolder: boolean; isFile: boolean }> {
  const pending = [{ path: folder.path, absolute: folder.absolute }];
  for (let current = pending.pop(); current; current = pending.pop()) {
    const children = [];
    for await (const child of await opendir(current.absolute)) {
      check({ path: current.path ? `${current.path}/${child.name}` : child.name, type: child.isDirectory() ? "dir" : "file" });
      children.push(child);
    }
    children.sort(byName);
    const subfolders = [];
    for (const child of children) {
      const entry = {
        path: current.path ? `${current.path}/${child.name}` : child.name,
        absolute: join(current.absolute, child.name),
        isFolder: child.isDirectory(),
        isFile: child.isFile(),
      };
      yield entry;
      if (entry.isFolder) subfolders.push(entry);
    }
    pending.push(...subfolders.reverse());
  }
}

export class AppTree {
  constructor(
    private readonly root: string,
    private readonly checkGrowth: GrowthCheck = async () => undefined,
  ) {}

  /** A folder's entries, folders first, then by name. */
  async list(path = ""): Promise<ListedEntry[]> {
    const folder = await resolveFolder(this.root, path);
    const names: string[] = [];
    for await (const child of await opendir(folder.absolute)) {
      if (names.length === MAX_FOLDER_ENTRIES) {
        throw new ApiError("TOO_MANY_ENTRIES", `${shown(folder.path || "/")} holds more than ${MAX_FOLDER_ENTRIES} entries; it cannot be listed here`);
      }
      names.push(child.name);
    }
    const entries = await Promise.all(names.map((name) => this.listedEntry(folder, name)));
    return entries
      .filter((entry) => entry !== null)
      .sort((a, b) => Number(b.type === "dir") - Number(a.type === "dir") || byName(a, b));
  }

  private async listedEntry(folder: TreePath, name: string): Promise<ListedEntry | null> {
    const stats = await lstat(join(folder.absolute, name)).catch(() => null);
    if (!stats) return null; // deleted since the folder was read
    const type = typeOf(stats);
    const path = folder.path ? `${folder.path}/${name}` : name;
    return { name, path, type, size: type === "file" ? stats.size : 0, modifiedAt: stats.mtime.toISOString() };
  }

  /** A file's text (binary files: content null), refused past MAX_TEXT_FILE_BYTES. */
  async read(path: string): Promise<FileContent> {
    const target = await resolveInTree(this.root, path);
    const sizeOnResolve = requireFile(target).size;
    if (sizeOnResolve > MAX_TEXT_FILE_BYTES) tooLarge(target.path, sizeOnResolve);
    const { handle, stats } = await openFile(target.path, target.absolute);
    try {
      const bytes = await readUpTo(handle, target.path, MAX_TEXT_FILE_BYTES);
      const binary = isBinary(bytes);
      const view = versionView(target.path, stats, bytes);
      return { ...view, size: bytes.length, binary, content: binary ? null : utf8.decode(bytes) };
    } finally {
      await handle.close();
    }
  }

  /**
   * Saves text to a file in an existing folder, creating or replacing it at once (never half
   * written) and keeping its permissions. With `ifMatch`, only when the file is still that version.
   */
  async write(path: string, content: string, ifMatch?: string): Promise<FileVersion> {
    const bytes = textBytes(path, content);
    return oneChangeAtATime(this.root, async () => {
      const target = await resolveNewEntry(this.root, path);
      if (target.stats) requireFile(target);
      if (ifMatch !== undefined) await this.checkVersion(target, ifMatch);
      await this.checkGrowth(entryCharge(bytes.length) - (target.stats ? entryCharge(target.stats.size) : 0));
      const mode = target.stats ? target.stats.mode & 0o7777 : FILE_MODE;
      // Renamed over the old content: a reader sees the old file or the new one, never a part.
      const stats = await writeWhole(dirname(target.absolute), bytes, mode, (temp) => rename(temp, target.absolute)).catch(
        rethrowDiskFull(`the file ${shown(target.path)}`),
      );
      return versionView(target.path, stats, bytes);
    });
  }

  private async checkVersion(target: TreePath, ifMatch: string): Promise<void> {
    if (!target.stats) throw new ApiError("FILE_CHANGED", `${shown(target.path)} was deleted since you opened it`);
    if ((await currentVersion(target)) !== ifMatch) {
      throw new ApiError("FILE_CHANGED", `${shown(target.path)} was changed since you opened it; reload it before saving`);
    }
  }

  /** Makes a new file, and the folders missing on its way; refused when anything is at `path`. */
  async create(path: string, content = ""): Promise<FileVersion> {
    const bytes = textBytes(path, content);
    return oneChangeAtATime(this.root, async () => {
      const planned = await this.checkNewEntry(path, entryCharge(bytes.length));
      try {
        const target = await this.makeParents(path);
        if (target.stats) this.exists(target.path);
        // Linked, not renamed: link(2) never replaces what another writer put at the path meanwhile.
        const stats = await writeWhole(dirname(target.absolute), bytes, FILE_MODE, (temp) =>
          link(temp, target.absolute).catch((error: NodeJS.ErrnoException) => {
            if (error.code === "EEXIST") this.exists(target.path);
            throw error;
          }),
        ).catch(rethrowDiskFull(`the file ${shown(target.path)}`));
        return versionView(target.path, stats, bytes);
      } catch (error) {
        await removeMadeFolders(planned.absolute, planned.foldersToMake);
        throw error;
      }
    });
  }

  /** Makes a folder, and the folders missing on its way; refused when anything is at `path`. Answers its canonical path. */
  mkdir(path: string): Promise<string> {
    return oneChangeAtATime(this.root, async () => {
      const planned = await this.checkNewEntry(path, MIN_ENTRY_BYTES);
      try {
        const target = await this.makeParents(path);
        if (target.stats) this.exists(target.path);
        await mkdir(target.absolute).catch((error: NodeJS.ErrnoException) => {
          if (error.code === "EEXIST") this.exists(target.path);
          throw isDiskFull(error) ? diskFull(`the folder ${shown(target.path)}`, { nothingKept: true }) : error;
        });
        return target.path;
      } catch (error) {
        await removeMadeFolders(planned.absolute, planned.foldersToMake);
        throw error;
      }
    });
  }

  /**
   * Before anything is made at `path`: refused as any other resolve would refuse it (FILE_EXISTS
   * when something is there), then when the entry (`charge`) and the folders on its way do not fit.
   */
  private async checkNewEntry(path: string, charge: number): Promise<{ absolute: string; foldersToMake: number }> {
    const planned = await resolveNewEntry(this.root, path, { countMissing: true });
    if (planned.stats) this.exists(planned.path);
    await this.checkGrowth(charge + planned.foldersToMake * MIN_ENTRY_BYTES);
    return planned;
  }

  /** Makes the folders missing on `path`'s way; a failure part-way leaves those already made for the caller to remove. */
  private makeParents(path: string): Promise<TreePath> {
    return resolveNewEntry(this.root, path, { makeParents: true }).catch(rethrowDiskFull(`the folders of ${shown(path)}`));
  }

  private exists(path: string): never {
    throw new ApiError("FILE_EXISTS", `${shown(path)} already exists`);
  }

  /** Moves or renames one entry (a link itself, not what it points to) into an existing folder. */
  move(from: string, to: string): Promise<{ from: string; to: string }> {
    return oneChangeAtATime(this.root, async () => {
      const source = await resolveEntry(this.root, from, "moved");
      const target = await resolveNewEntry(this.root, to);
      if (isInside(target.segments, source.segments)) {
        throw new ApiError("MOVE_INTO_ITSELF", `${shown(source.path)} cannot be moved into itself`);
      }
      // The same entry under another name: a case-only rename on a case-insensitive file system.
      if (target.stats && !isSameEntry(target.stats, source.stats)) this.exists(target.path);
      await rename(source.absolute, target.absolute);
      return { from: source.path, to: target.path };
    });
  }

  /** Deletes a file, a link (not what it points to) or a folder with everything in it (links inside are not followed). */
  remove(path: string): Promise<{ path: string; type: ListedEntry["type"] }> {
    return oneChangeAtATime(this.root, async () => {
      const entry = await resolveEntry(this.root, path, "deleted");
      const type = typeOf(entry.stats);
      await (type === "dir" ? rm(entry.absolute, { recursive: true }) : unlink(entry.absolute));
      return { path: entry.path, type };
    });
  }

  /**
   * Removes the temp files of writes a crash interrupted (they would be built into the image and
   * listed), looking at `maxEntries` entries at most. Answers how many it removed.
   */
  removeWriteLeftovers(maxEntries: number): Promise<number> {
    return oneChangeAtATime(this.root, async () => {
      // An app never deployed has no tree yet.
      const root = await resolveFolder(this.root, "").catch((error) => {
        if (error instanceof ApiError && error.code === "NOT_FOUND") return null;
        throw error;
      });
      let removed = 0;
      if (!root) return removed;
      let seen = 0;
      for await (const entry of entriesUnder(root)) {
        if (++seen > maxEntries) break;
        if (entry.isFile && WRITE_TEMP_NAME.test(basename(entry.path))) {
          await unlink(entry.absolute);
          removed++;
        }
      }
      return removed;
    });
  }

  /** Every entry under a folder (not the folder itself), refused past `maxEntries`; `check` sees each as it is read, and may stop the walk by throwing. */
  async walk(basePath: string, maxEntries: number, check: (entry: WalkedEntry) => void = () => undefined): Promise<WalkedEntry[]> {
    const base = await resolveFolder(this.root, basePath);
    const entries: WalkedEntry[] = [];
    for await (const entry of entriesUnder(base, check)) {
      if (entries.length === maxEntries) {
        throw new ApiError("TOO_MANY_ENTRIES", `${shown(base.path || "/")} holds more than ${maxEntries} files and folders; choose a smaller base folder`);
      }
      entries.push({ path: entry.path, type: entry.isFolder ? "dir" : "file" });
    }
    return entries;
  }

  /**
   * Renames entries one at a time, in order, each with one rename(2): a crash leaves every entry
   * at its old name or its new one. An entry found at `to` is replaced only with `overwrite`:
   * a file or link is replaced (by the rename itself when a file is moved onto it), an empty
   * folder is removed first, and a folder with anything in it is never replaced (that step fails).
   */
  applyRenames(steps: RenameStep[]): Promise<RenameOutcome[]> {
    return oneChangeAtATime(this.root, async () => {
      const outcomes: RenameOutcome[] = [];
      for (const step of steps) outcomes.push(await this.renameOne(step));
      return outcomes;
    });
  }

  private async renameOne(step: RenameStep): Promise<RenameOutcome> {
    const { from, to } = step;
    try {
      const source = await resolveEntry(this.root, from, "renamed");
      const target = await resolveNewEntry(this.root, to);
      if (isInside(target.segments, source.segments)) return { from, to, result: "failed", reason: "a folder cannot be moved into itself" };
      if (target.stats && !isSameEntry(target.stats, source.stats)) {
        if (!step.overwrite) return { from, to, result: "failed", reason: `${shown(target.path)} already exists` };
        await this.clearForOverwrite(target as TreePath & { stats: Stats }, source.stats);
        await rename(source.absolute, target.absolute);
        return { from, to, result: "overwritten" };
      }
      await rename(source.absolute, target.absolute);
      return { from, to, result: "renamed" };
    } catch (error) {
      return { from, to, result: "failed", reason: reasonOf(error) };
    }
  }

  /** Removes what rename(2) cannot replace by itself: a folder (only if empty), or a file a folder is moved onto. */
  private async clearForOverwrite(target: TreePath & { stats: Stats }, source: Stats): Promise<void> {
    if (target.stats.isDirectory()) await rmdir(target.absolute);
    else if (source.isDirectory()) await unlink(target.absolute);
  }

  /**
   * The whole tree as a ZIP, made while it is read (one 64 KiB chunk at a time): files with their
   * permissions, folders (empty ones included); links and special files are left out.
   */
  zip(): ReadableStream<Uint8Array> {
    const ready: Uint8Array[] = [];
    let finished = false;
    let failure: Error | null = null;
    const archive = new Zip((error, chunk, final) => {
      if (error) failure = error;
      else ready.push(chunk);
      if (final) finished = true;
    });
    const steps = this.feedZip(archive);
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        while (ready.length === 0 && !finished && !failure) {
          if ((await steps.next()).done) break;
        }
        if (failure) return controller.error(failure);
        for (const chunk of ready.splice(0)) controller.enqueue(chunk);
        if (finished) controller.close();
      },
      async cancel() {
        archive.terminate();
        await steps.return(undefined);
      },
    });
  }

  /** Adds the tree to `archive`, pausing after each piece so the reader sets the pace. */
  private async *feedZip(archive: Zip): AsyncGenerator<void> {
    const root = await resolveFolder(this.root, "");
    const buffer = new Uint8Array(READ_CHUNK_BYTES); // reused: ZipDeflate copies what it is given
    for await (const entry of entriesUnder(root)) {
      if (entry.isFolder) {
        const folder = new ZipPassThrough(`${entry.path}/`);
        const stats = await lstat(entry.absolute);
        Object.assign(folder, zipAttributes(stats));
        archive.add(folder);
        folder.push(new Uint8Array(0), true);
        yield;
      } else if (entry.isFile) {
        yield* this.zipFile(archive, entry, buffer);
      }
    }
    archive.end();
  }

  private async *zipFile(archive: Zip, entry: { path: string; absolute: string }, buffer: Uint8Array): AsyncGenerator<void> {
    const opened = await openFile(entry.path, entry.absolute).catch(() => null); // replaced by a link or removed meanwhile
    if (!opened) return;
    try {
      const file = new ZipDeflate(entry.path, { level: 6 });
      Object.assign(file, zipAttributes(opened.stats));
      archive.add(file);
      for (let position = 0; ; ) {
        const { bytesRead } = await opened.handle.read(buffer, 0, buffer.length, position);
        position += bytesRead;
        file.push(buffer.subarray(0, bytesRead), bytesRead === 0);
        if (bytesRead === 0) return;
        yield;
      }
    } finally {
      await opened.handle.close();
    }
  }
}

/** Unix permissions and file type in the high bits (what archive.ts reads back), and a time ZIP can hold. */
function zipAttributes(stats: Stats): { os: number; attrs: number; mtime: number } {
  const fileType = stats.isDirectory() ? 0o040000 : 0o100000;
  return {
    os: 3,
    attrs: ((fileType | (stats.mode & 0o777)) << 16) >>> 0,
    mtime: Math.min(Math.max(stats.mtimeMs, ZIP_EARLIEST), ZIP_LATEST),
  };
}
