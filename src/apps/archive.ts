// Uploaded ZIP archives, treated as hostile input (uploads reach disk through
// src/http/multipart.ts). `inspectZip` and `extractZip` read the archive with the central
// directory parser in zip-directory.ts, refuse anything unsafe with a stable code, and count the
// bytes actually inflated (headers can lie). `extractZip` writes into a fresh temp dir beside the destination and renames
// it into place only when every entry came out whole, so a refused archive leaves nothing behind.
//
// ZIP layout (PKWARE APPNOTE.TXT):
//   [local file header + name + extra + data (+ data descriptor)] ... [central directory] [EOCD]
// The central directory is the index we trust for names, sizes, CRCs and attributes; each local
// header is checked against it before its data is read. ZIP64 archives (sizes, offsets or counts
// that do not fit the classic 16/32-bit fields) are refused with ARCHIVE_INVALID: an app upload
// never needs them and the upload limit keeps archives well under 4 GB. Only the stored (0) and
// deflate (8) methods are read.
import { Inflate } from "fflate";
import { chmod, mkdir, mkdtemp, open, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import { MIN_ENTRY_BYTES } from "../quotas/usage";
import { SIG_LOCAL, LOCAL_BYTES, FLAG_ENCRYPTED, FLAG_DATA_DESCRIPTOR, METHOD_DEFLATE, refuse, invalid, shown, pauseEvery, ZipFileReader, readCentralDirectory, utf8, type CentralEntry, type ParsedArchive } from "./zip-directory";

export interface ArchiveLimits {
  /**
   * Most entries the central directory may list (every entry counts, folders and junk included),
   * and most files and folders the extracted tree may hold (folders its paths imply count too).
   */
  maxArchiveEntries: number;
  /**
   * Most bytes the extracted tree may take, counted while inflating: every file is charged its
   * size but at least MIN_ENTRY_CHARGE, and every folder MIN_ENTRY_CHARGE.
   */
  maxUncompressedBytes: number;
}

export interface ArchiveEntry {
  /** Relative path with `/` separators, after the single top folder (if any) is stripped. */
  path: string;
  kind: "file" | "directory";
  /** Bytes of the file once extracted (0 for directories). */
  size: number;
  /** The archive gave the file an executable bit; it is extracted with mode 0755 instead of 0644. */
  executable: boolean;
}

export interface ArchiveContents {
  /** Entries sorted by path. Only folders listed in the archive appear; implied parents do not. */
  entries: ArchiveEntry[];
  /** Sum of the extracted files' sizes. */
  totalBytes: number;
  /** What the extracted tree counts on disk: each file its size but at least MIN_ENTRY_CHARGE, each folder MIN_ENTRY_CHARGE. */
  chargedBytes: number;
}

/** An archive or one of its entries may not inflate to more than this many times its compressed size. */
export const MAX_COMPRESSION_RATIO = 100;
/**
 * The ratio is only enforced past this many inflated bytes: a tiny file of repeated characters
 * legitimately compresses beyond 100:1, and under 1 MiB it cannot be a meaningful bomb (the entry
 * and byte limits still apply).
 */
export const RATIO_GRACE_BYTES = 1024 * 1024;

/**
 * What an empty file or a folder costs on disk (one block, and an inode): charged against the
 * byte limit so that thousands of empty entries (a folder bomb) are not free, as the disk quota does.
 */
export const MIN_ENTRY_CHARGE = MIN_ENTRY_BYTES;

/** Compressed bytes fed to the inflater at once: deflate tops out near 1032:1, so one step yields at most ~16 MB. */
const DEFLATE_READ_BYTES = 16 * 1024;
const STORED_READ_BYTES = 256 * 1024;
/**
 * Spent read windows and inflated chunks are freed only by the garbage collector, which runs by
 * heap growth: extracting 200 MB piled up ~60 MB of them in a server with a large heap. A full
 * collection this often (a few ms each) keeps that under ~20 MB; a mere hint did not.
 */
const GC_EVERY_BYTES = 16 * 1024 * 1024;

// Planning: junk, duplicates, top folder, claimed sizes, local headers

function isJunk(segments: string[]): boolean {
  return segments[0] === "__MACOSX" || segments[segments.length - 1] === ".DS_Store";
}

interface PathNode {
  children: Map<string, PathNode>;
  file: boolean;
  listed: boolean;
}

const pathNode = (): PathNode => ({ children: new Map(), file: false, listed: false });

/**
 * Builds the tree the entries make, folder by folder: refuses duplicates, file/folder clashes,
 * and more files and folders than the entry limit (a folder implied by a path counts as much as
 * a listed one). Returns how many folders the tree has.
 */
function countTree(entries: CentralEntry[], limits: ArchiveLimits): number {
  const root = pathNode();
  let nodes = 0;
  let files = 0;
  for (const entry of entries) {
    let node = root;
    entry.segments.forEach((segment, i) => {
      let child = node.children.get(segment);
      if (!child) {
        child = pathNode();
        node.children.set(segment, child);
        if (++nodes > limits.maxArchiveEntries) {
          refuse("ARCHIVE_TOO_MANY_ENTRIES", `The archive makes more than ${limits.maxArchiveEntries} files and folders (folders its paths imply count too)`);
        }
      } else if (child.file && i < entry.segments.length - 1) {
        invalid(`${shown(entry.segments.slice(0, i + 1).join("/"))} is both a file and a folder in the archive`);
      }
      node = child;
    });
    const key = entry.segments.join("/");
    if (node.listed) invalid(`The archive lists ${shown(key)} more than once`);
    node.listed = true;
    if (entry.kind === "file") {
      if (node.children.size > 0) invalid(`${shown(key)} is both a file and a folder in the archive`);
      node.file = true;
      files++;
    }
  }
  return nodes - files;
}

/** Keeps the entries to extract, checks the tree they make, strips one top folder. */
function planEntries(all: CentralEntry[], limits: ArchiveLimits): { planned: CentralEntry[]; folderCharge: number } {
  const kept = all.filter((entry) => !isJunk(entry.segments) && entry.segments.length > 0);

  const top = kept[0]?.segments[0];
  const singleTopFolder =
    top !== undefined &&
    kept.every((entry) => entry.segments[0] === top && (entry.segments.length > 1 || entry.kind === "directory"));
  const planned = singleTopFolder
    ? kept.map((entry) => ({ ...entry, segments: entry.segments.slice(1) })).filter((entry) => entry.segments.length > 0)
    : kept;
  // Charged as the extracted tree is (the top folder stripped is not part of it), so the disk quota measures it the same later.
  const folderCharge = countTree(planned, limits) * MIN_ENTRY_CHARGE;

  // Cheap early refusals from the claimed sizes; the real counts are enforced while inflating.
  const plannedFiles = planned.filter((entry) => entry.kind === "file");
  const claimedTotal = plannedFiles.reduce((sum, entry) => sum + entry.uncompressedSize, 0);
  const claimedCharge = plannedFiles.reduce((sum, entry) => sum + Math.max(entry.uncompressedSize, MIN_ENTRY_CHARGE), folderCharge);
  const compressedTotal = plannedFiles.reduce((sum, entry) => sum + entry.compressedSize, 0);
  if (claimedCharge > limits.maxUncompressedBytes) tooLarge(limits);
  for (const entry of plannedFiles) {
    if (ratioExceeded(entry.uncompressedSize, entry.compressedSize)) ratioRefusal(entry.segments.join("/"));
  }
  if (ratioExceeded(claimedTotal, compressedTotal)) ratioRefusal(null);
  return { planned, folderCharge };
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function ratioExceeded(inflated: number, compressed: number): boolean {
  return inflated > RATIO_GRACE_BYTES && inflated > MAX_COMPRESSION_RATIO * Math.max(compressed, 1);
}

function ratioRefusal(path: string | null): never {
  const subject = path === null ? "The archive" : `Entry ${shown(path)}`;
  return refuse("ARCHIVE_RATIO_EXCEEDED", `${subject} expands more than ${MAX_COMPRESSION_RATIO}:1 (a zip bomb?)`);
}

function tooLarge(limits: ArchiveLimits): never {
  return refuse(
    "ARCHIVE_TOO_LARGE",
    `The archive expands to more than ${limits.maxUncompressedBytes} bytes (every file and folder counts at least ${MIN_ENTRY_CHARGE})`,
  );
}

/**
 * Reads every local header, checks it agrees with the central directory, records where each
 * entry's data starts, and refuses entries whose data overlaps another's (the overlapping-file
 * zip bomb) or the central directory.
 */
async function locateData(reader: ZipFileReader, parsed: ParsedArchive): Promise<void> {
  const byOffset = [...parsed.entries].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  for (const [i, entry] of byOffset.entries()) {
    await pauseEvery(i);
    const header = await reader.read(entry.localHeaderOffset, LOCAL_BYTES + entry.rawName.length);
    const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
    const name = shown(utf8.decode(entry.rawName));
    if (view.getUint32(0, true) !== SIG_LOCAL) invalid(`The archive is corrupt (no local header for ${name})`);
    const flags = view.getUint16(6, true);
    const nameLength = view.getUint16(26, true);
    const extraLength = view.getUint16(28, true);
    if (
      view.getUint16(8, true) !== entry.method ||
      (flags & FLAG_ENCRYPTED) !== (entry.flags & FLAG_ENCRYPTED) ||
      nameLength !== entry.rawName.length ||
      !header.subarray(LOCAL_BYTES).every((byte, i) => byte === entry.rawName[i])
    ) {
      invalid(`The archive is corrupt (local header of ${name} disagrees with the central directory)`);
    }
    if (
      !(flags & FLAG_DATA_DESCRIPTOR) &&
      (view.getUint32(14, true) !== entry.crc32 ||
        view.getUint32(18, true) !== entry.compressedSize ||
        view.getUint32(22, true) !== entry.uncompressedSize)
    ) {
      invalid(`The archive is corrupt (sizes of ${name} differ between its headers)`);
    }
    entry.dataOffset = entry.localHeaderOffset + LOCAL_BYTES + nameLength + extraLength;
  }
  byOffset.forEach((entry, i) => {
    const end = entry.dataOffset + entry.compressedSize;
    const limit = byOffset[i + 1]?.localHeaderOffset ?? parsed.centralDirectoryOffset;
    if (end > limit) invalid("The archive is corrupt (entries overlap)");
  });
}

// ---------------------------------------------------------------------------------------------
// Inflating

interface Budget {
  limits: ArchiveLimits;
  /** Bytes of file content inflated so far. */
  inflated: number;
  /** What counts against the byte limit: folders, then each file's size but at least MIN_ENTRY_CHARGE. */
  charged: number;
  /** Compressed bytes of every planned file, for the whole-archive ratio. */
  compressed: number;
  /** `inflated` at the last garbage collection. */
  collectedAt: number;
}

/**
 * Reads one entry's data and hands its inflated bytes to `write` chunk by chunk, each chunk
 * counted against the byte limit and both ratios before it is written.
 */
async function inflateEntry(
  reader: ZipFileReader,
  entry: CentralEntry,
  budget: Budget,
  write: (chunk: Uint8Array) => Promise<void>,
): Promise<number> {
  const path = entry.segments.join("/");
  let produced = 0;
  let crc = 0;
  const pending: Uint8Array[] = [];
  const inflater = entry.method === METHOD_DEFLATE ? new Inflate((chunk) => void pending.push(chunk)) : null;
  const step = inflater ? DEFLATE_READ_BYTES : STORED_READ_BYTES;

  // do/while: an empty entry still makes one pass, so an empty deflate stream is refused.
  let read = 0;
  do {
    const length = Math.min(step, entry.compressedSize - read);
    const input = await reader.read(entry.dataOffset + read, length);
    read += length;
    if (inflater) {
      try {
        inflater.push(input, read >= entry.compressedSize);
      } catch {
        invalid(`The archive is corrupt (entry ${shown(path)} does not inflate)`);
      }
    } else {
      pending.push(input);
    }
    for (const chunk of pending.splice(0)) {
      produced += chunk.length;
      budget.inflated += chunk.length;
      budget.charged += chunk.length;
      if (budget.charged > budget.limits.maxUncompressedBytes) tooLarge(budget.limits);
      if (ratioExceeded(produced, entry.compressedSize)) ratioRefusal(path);
      if (ratioExceeded(budget.inflated, budget.compressed)) ratioRefusal(null);
      crc = Bun.hash.crc32(chunk, crc);
      await write(chunk);
      if (budget.inflated - budget.collectedAt >= GC_EVERY_BYTES) {
        budget.collectedAt = budget.inflated;
        Bun.gc(true);
      }
    }
  } while (read < entry.compressedSize);
  budget.charged += Math.max(0, MIN_ENTRY_CHARGE - produced);
  if (budget.charged > budget.limits.maxUncompressedBytes) tooLarge(budget.limits);
  // Checked once the entry is done, so a header that lies to slip under the limits is refused
  // for the limit it breaks (the counts above are real); a smaller lie is corruption.
  if (produced !== entry.uncompressedSize) invalid(`Entry ${shown(path)} does not match the size its header declares`);
  if (crc >>> 0 !== entry.crc32) invalid(`The archive is corrupt (checksum mismatch in ${shown(path)})`);
  return produced;
}

// ---------------------------------------------------------------------------------------------
// Public operations

interface OpenArchive {
  reader: ZipFileReader;
  /** The entries to produce, in file order (so reads are sequential). */
  planned: CentralEntry[];
  budget: Budget;
}

/** Every check that needs no inflating: runs before anything is written. */
async function openArchive(zipFile: string, limits: ArchiveLimits): Promise<OpenArchive> {
  const handle = await open(zipFile, "r");
  const reader = new ZipFileReader(handle, (await handle.stat()).size);
  try {
    const parsed = await readCentralDirectory(reader, limits);
    await locateData(reader, parsed);
    const { planned, folderCharge } = planEntries(parsed.entries, limits);
    planned.sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
    const compressed = planned.reduce((sum, entry) => sum + (entry.kind === "file" ? entry.compressedSize : 0), 0);
    // A large upload has just streamed through: free its spent chunks before inflating adds more.
    if (compressed >= GC_EVERY_BYTES) Bun.gc(true);
    return { reader, planned, budget: { limits, inflated: 0, charged: folderCharge, compressed, collectedAt: 0 } };
  } catch (error) {
    await reader.close();
    throw error;
  }
}

function describe(entry: CentralEntry, size: number): ArchiveEntry {
  return { path: entry.segments.join("/"), kind: entry.kind, size, executable: entry.executable };
}

function contents(entries: ArchiveEntry[], budget: Budget): ArchiveContents {
  return { entries: entries.sort((a, b) => compare(a.path, b.path)), totalBytes: budget.inflated, chargedBytes: budget.charged };
}

/**
 * Validates `zipFile` completely without writing anything: the structure, every name and
 * attribute, and the real inflated size of every entry (each is inflated and discarded).
 */
export async function inspectZip(zipFile: string, limits: ArchiveLimits): Promise<ArchiveContents> {
  const { reader, planned, budget } = await openArchive(zipFile, limits);
  try {
    const entries: ArchiveEntry[] = [];
    for (const [i, entry] of planned.entries()) {
      await pauseEvery(i);
      const size = entry.kind === "file" ? await inflateEntry(reader, entry, budget, async () => {}) : 0;
      entries.push(describe(entry, size));
    }
    return contents(entries, budget);
  } finally {
    await reader.close();
  }
}

/**
 * Extracts `zipFile` into `destinationDir`, which must not exist yet (its parent is created when
 * missing). Files get mode 0644, or 0755 when the archive marks them executable; folders 0755.
 * On any refusal or error nothing is left: neither the temp dir nor a partial destination.
 */
export async function extractZip(
  zipFile: string,
  destinationDir: string,
  limits: ArchiveLimits,
): Promise<ArchiveContents> {
  const destination = resolve(destinationDir);
  if (await stat(destination).then(() => true, () => false)) {
    throw new Error(`extractZip: ${destination} already exists`);
  }
  const { reader, planned, budget } = await openArchive(zipFile, limits);
  let staging: string | null = null;
  try {
    await mkdir(dirname(destination), { recursive: true });
    staging = await mkdtemp(join(dirname(destination), `.${basename(destination)}.extracting-`));
    const madeDirectories = new Set<string>([staging]);
    const makeDirectory = async (path: string) => {
      if (madeDirectories.has(path)) return;
      await mkdir(path, { recursive: true, mode: 0o755 });
      for (let dir = path; !madeDirectories.has(dir); dir = dirname(dir)) madeDirectories.add(dir);
    };

    const entries: ArchiveEntry[] = [];
    for (const entry of planned) {
      const target = join(staging, ...entry.segments);
      // Segments are validated above; this guards the invariant anyway.
      if (!target.startsWith(staging + sep)) invalid(`Entry ${shown(entry.segments.join("/"))} escapes the archive`);
      if (entry.kind === "directory") {
        await makeDirectory(target);
        entries.push(describe(entry, 0));
        continue;
      }
      await makeDirectory(dirname(target));
      const mode = entry.executable ? 0o755 : 0o644;
      const file = await open(target, "wx", mode);
      try {
        const size = await inflateEntry(reader, entry, budget, async (chunk) => {
          for (let written = 0; written < chunk.length; ) {
            written += (await file.write(chunk, written, chunk.length - written)).bytesWritten;
          }
        });
        await file.chmod(mode); // exact, whatever the umask
        entries.push(describe(entry, size));
      } finally {
        await file.close();
      }
    }
    await chmod(staging, 0o755);
    await rename(staging, destination);
    staging = null;
    return contents(entries, budget);
  } finally {
    await reader.close();
    if (staging) await rm(staging, { recursive: true, force: true });
  }
}
