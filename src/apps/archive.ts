// Uploaded ZIP archives, treated as hostile input (uploads reach disk through
// src/http/multipart.ts). `inspectZip` and `extractZip` read the archive with the small central-directory
// parser below, refuse anything unsafe with a stable code, and count the bytes actually inflated
// (headers can lie). `extractZip` writes into a fresh temp dir beside the destination and renames
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
import { chmod, mkdir, mkdtemp, open, rename, rm, stat, type FileHandle } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import { ApiError, type ErrorCode } from "../http/errors";

export interface ArchiveLimits {
  /** Most entries the central directory may list (every entry counts, folders and junk included). */
  maxArchiveEntries: number;
  /** Most bytes all extracted files may hold together, counted while inflating. */
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
}

/** An archive or one of its entries may not inflate to more than this many times its compressed size. */
export const MAX_COMPRESSION_RATIO = 100;
/**
 * The ratio is only enforced past this many inflated bytes: a tiny file of repeated characters
 * legitimately compresses beyond 100:1, and under 1 MiB it cannot be a meaningful bomb (the entry
 * and byte limits still apply).
 */
export const RATIO_GRACE_BYTES = 1024 * 1024;

const MAX_SEGMENT_BYTES = 255;
const MAX_PATH_BYTES = 1024;
/** Compressed bytes fed to the inflater at once: deflate tops out near 1032:1, so one step yields at most ~16 MB. */
const DEFLATE_READ_BYTES = 16 * 1024;
const STORED_READ_BYTES = 256 * 1024;
const READ_WINDOW_BYTES = 1024 * 1024;
/**
 * Spent read windows and inflated chunks are freed only by the garbage collector, which runs by
 * heap growth: extracting 200 MB piled up ~60 MB of them in a server with a large heap. A full
 * collection this often (a few ms each) keeps that under ~20 MB; a mere hint did not.
 */
const GC_EVERY_BYTES = 16 * 1024 * 1024;

const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const EOCD_BYTES = 22;
const CENTRAL_BYTES = 46;
const LOCAL_BYTES = 30;

const FLAG_ENCRYPTED = 1 << 0;
const FLAG_DATA_DESCRIPTOR = 1 << 3;
const FLAG_STRONG_ENCRYPTION = 1 << 6;
const FLAG_MASKED_HEADERS = 1 << 13;
const METHOD_STORED = 0;
const METHOD_DEFLATE = 8;
const METHOD_AES = 99;

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

function refuse(code: ErrorCode, message: string): never {
  throw new ApiError(code, message);
}

const invalid = (message: string): never => refuse("ARCHIVE_INVALID", message);

/** A name as it may appear in an error message: quoted, escaped, and cut short. */
function shown(name: string): string {
  return JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}…` : name);
}

// ---------------------------------------------------------------------------------------------
// Central directory parser

interface CentralEntry {
  index: number;
  rawName: Uint8Array;
  /** Path segments after validation, with "" and "." segments dropped. */
  segments: string[];
  kind: "file" | "directory";
  executable: boolean;
  flags: number;
  method: number;
  crc32: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
  /** Where the entry's compressed bytes start; known once its local header has been read. */
  dataOffset: number;
}

interface ParsedArchive {
  entries: CentralEntry[];
  centralDirectoryOffset: number;
}

async function readAt(handle: FileHandle, position: number, length: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(bytes, filled, length - filled, position + filled);
    if (bytesRead === 0) invalid("The archive is truncated");
    filled += bytesRead;
  }
  return bytes;
}

/**
 * Positional reads through a 1 MiB window. Headers and data are read in file order, so most reads
 * are served from memory: one system call per megabyte instead of several per entry.
 */
class ZipFileReader {
  private window: Uint8Array = new Uint8Array(0);
  private windowStart = 0;

  constructor(
    private readonly handle: FileHandle,
    readonly size: number,
  ) {}

  async read(position: number, length: number): Promise<Uint8Array> {
    if (position < 0 || position + length > this.size) invalid("The archive is truncated");
    const offset = position - this.windowStart;
    // Views, not copies: a window is a fresh array that is never written again.
    if (offset >= 0 && offset + length <= this.window.length) return this.window.subarray(offset, offset + length);
    if (length >= READ_WINDOW_BYTES) return readAt(this.handle, position, length);
    this.window = await readAt(this.handle, position, Math.min(READ_WINDOW_BYTES, this.size - position));
    this.windowStart = position;
    return this.window.subarray(0, length);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** Finds the end-of-central-directory record: the last signature whose comment ends exactly at EOF. */
function findEndRecord(tail: Uint8Array, tailStart: number, fileSize: number): number {
  const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  for (let at = tail.length - EOCD_BYTES; at >= 0; at--) {
    if (view.getUint32(at, true) !== SIG_EOCD) continue;
    const commentLength = view.getUint16(at + 20, true);
    if (tailStart + at + EOCD_BYTES + commentLength === fileSize) return at;
  }
  return invalid("Not a ZIP archive (no end-of-central-directory record)");
}

async function readCentralDirectory(reader: ZipFileReader, limits: ArchiveLimits): Promise<ParsedArchive> {
  const fileSize = reader.size;
  if (fileSize < EOCD_BYTES) invalid("Not a ZIP archive (too short)");
  const tailLength = Math.min(fileSize, EOCD_BYTES + 0xffff + 20);
  const tailStart = fileSize - tailLength;
  const tail = await reader.read(tailStart, tailLength);
  const at = findEndRecord(tail, tailStart, fileSize);
  const eocd = new DataView(tail.buffer, tail.byteOffset + at, EOCD_BYTES);

  const diskNumber = eocd.getUint16(4, true);
  const centralDisk = eocd.getUint16(6, true);
  const entriesOnDisk = eocd.getUint16(8, true);
  const totalEntries = eocd.getUint16(10, true);
  const centralSize = eocd.getUint32(12, true);
  const centralOffset = eocd.getUint32(16, true);
  const zip64Locator = at >= 20 && new DataView(tail.buffer, tail.byteOffset + at - 20, 4).getUint32(0, true) === SIG_ZIP64_LOCATOR;
  if (zip64Locator || totalEntries === 0xffff || centralSize === 0xffffffff || centralOffset === 0xffffffff) {
    invalid("ZIP64 archives are not supported; make the archive with a standard ZIP tool");
  }
  if (diskNumber !== 0 || centralDisk !== 0 || entriesOnDisk !== totalEntries) {
    invalid("Split or multi-disk ZIP archives are not supported");
  }
  if (totalEntries > limits.maxArchiveEntries) {
    refuse("ARCHIVE_TOO_MANY_ENTRIES", `The archive has ${totalEntries} entries; the limit is ${limits.maxArchiveEntries}`);
  }
  const endOffset = tailStart + at;
  if (centralOffset + centralSize > endOffset) invalid("The archive is corrupt (central directory out of bounds)");

  const central = await reader.read(centralOffset, centralSize);
  const view = new DataView(central.buffer, central.byteOffset, central.byteLength);
  const entries: CentralEntry[] = [];
  let position = 0;
  for (let index = 0; index < totalEntries; index++) {
    if (position + CENTRAL_BYTES > central.length || view.getUint32(position, true) !== SIG_CENTRAL) {
      invalid("The archive is corrupt (bad central directory entry)");
    }
    const flags = view.getUint16(position + 8, true);
    const method = view.getUint16(position + 10, true);
    const crc32 = view.getUint32(position + 16, true);
    const compressedSize = view.getUint32(position + 20, true);
    const uncompressedSize = view.getUint32(position + 24, true);
    const nameLength = view.getUint16(position + 28, true);
    const extraLength = view.getUint16(position + 30, true);
    const commentLength = view.getUint16(position + 32, true);
    const startDisk = view.getUint16(position + 34, true);
    const externalAttributes = view.getUint32(position + 38, true);
    const localHeaderOffset = view.getUint32(position + 42, true);
    const next = position + CENTRAL_BYTES + nameLength + extraLength + commentLength;
    if (next > central.length) invalid("The archive is corrupt (central directory entry overruns)");
    const rawName = central.slice(position + CENTRAL_BYTES, position + CENTRAL_BYTES + nameLength);
    position = next;

    const name = decodeName(rawName, index);
    const segments = checkPath(name);
    if (compressedSize === 0xffffffff || uncompressedSize === 0xffffffff || localHeaderOffset === 0xffffffff || startDisk === 0xffff) {
      invalid(`ZIP64 entries are not supported (${shown(name)})`);
    }
    if (startDisk !== 0) invalid("Split or multi-disk ZIP archives are not supported");
    if (flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION | FLAG_MASKED_HEADERS) || method === METHOD_AES) {
      refuse("ARCHIVE_ENCRYPTED", `Entry ${shown(name)} is encrypted; upload an archive without a password`);
    }
    if (method !== METHOD_STORED && method !== METHOD_DEFLATE) {
      refuse("ARCHIVE_UNSUPPORTED_METHOD", `Entry ${shown(name)} uses compression method ${method}; only stored and deflate are supported`);
    }

    // Unix tools keep st_mode in the high 16 bits. It is read whatever host made the archive:
    // nothing but regular files and folders may come out of an upload.
    const unixMode = externalAttributes >>> 16;
    const fileType = unixMode & S_IFMT;
    if (fileType !== 0 && fileType !== S_IFREG && fileType !== S_IFDIR) {
      const what = fileType === S_IFLNK ? "a symbolic link" : "a special file (device, FIFO or socket)";
      refuse("ARCHIVE_UNSAFE_ENTRY", `Entry ${shown(name)} is ${what}; only regular files and folders are allowed`);
    }
    const kind = name.endsWith("/") || fileType === S_IFDIR ? "directory" : "file";
    if (kind === "directory" && uncompressedSize !== 0) invalid(`Folder entry ${shown(name)} has content`);
    if (kind === "file" && segments.length === 0) invalid(`Entry ${shown(name)} has no file name`);
    entries.push({
      index,
      rawName,
      segments,
      kind,
      executable: kind === "file" && (unixMode & 0o111) !== 0,
      flags,
      method,
      crc32,
      compressedSize,
      uncompressedSize,
      localHeaderOffset,
      dataOffset: -1,
    });
  }
  if (position !== central.length) invalid("The archive is corrupt (central directory size mismatch)");
  return { entries, centralDirectoryOffset: centralOffset };
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function decodeName(raw: Uint8Array, index: number): string {
  try {
    return utf8.decode(raw);
  } catch {
    return refuse("ARCHIVE_UNSAFE_PATH", `Entry #${index + 1} has a name that is not valid UTF-8`);
  }
}

/** Validates an entry name and returns its path segments; "" and "." segments are dropped. */
function checkPath(name: string): string[] {
  // C0 controls (NUL included), DEL and C1 controls.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) {
    refuse("ARCHIVE_UNSAFE_PATH", `Entry ${shown(name)} has a control character in its name`);
  }
  if (name.includes("\\")) refuse("ARCHIVE_UNSAFE_PATH", `Entry ${shown(name)} has a backslash in its path`);
  if (name.startsWith("/")) refuse("ARCHIVE_UNSAFE_PATH", `Entry ${shown(name)} has an absolute path`);
  if (/^[A-Za-z]:/.test(name)) refuse("ARCHIVE_UNSAFE_PATH", `Entry ${shown(name)} starts with a drive letter`);
  const parts = name.split("/");
  if (parts.includes("..")) refuse("ARCHIVE_PATH_TRAVERSAL", `Entry ${shown(name)} climbs out of the archive with ".."`);
  if (Buffer.byteLength(name) > MAX_PATH_BYTES) {
    refuse("ARCHIVE_UNSAFE_PATH", `Entry ${shown(name)} has a path longer than ${MAX_PATH_BYTES} bytes`);
  }
  for (const part of parts) {
    if (Buffer.byteLength(part) > MAX_SEGMENT_BYTES) {
      refuse("ARCHIVE_UNSAFE_PATH", `Entry ${shown(name)} has a name segment longer than ${MAX_SEGMENT_BYTES} bytes`);
    }
  }
  return parts.filter((part) => part !== "" && part !== ".");
}

// ---------------------------------------------------------------------------------------------
// Planning: junk, duplicates, top folder, claimed sizes, local headers

function isJunk(segments: string[]): boolean {
  return segments[0] === "__MACOSX" || segments[segments.length - 1] === ".DS_Store";
}

/** Keeps the entries to extract, refuses duplicates and file/folder clashes, strips one top folder. */
function planEntries(all: CentralEntry[], limits: ArchiveLimits): CentralEntry[] {
  const kept = all.filter((entry) => !isJunk(entry.segments) && entry.segments.length > 0);

  const seen = new Set<string>();
  const fileKeys = new Set<string>();
  for (const entry of kept) {
    const key = entry.segments.join("/");
    if (seen.has(key)) invalid(`The archive lists ${shown(key)} more than once`);
    seen.add(key);
    if (entry.kind === "file") fileKeys.add(key);
  }
  for (const entry of kept) {
    for (let depth = 1; depth < entry.segments.length; depth++) {
      const parent = entry.segments.slice(0, depth).join("/");
      if (fileKeys.has(parent)) invalid(`${shown(parent)} is both a file and a folder in the archive`);
    }
  }

  const top = kept[0]?.segments[0];
  const singleTopFolder =
    top !== undefined &&
    kept.every((entry) => entry.segments[0] === top && (entry.segments.length > 1 || entry.kind === "directory"));
  const planned = singleTopFolder
    ? kept.map((entry) => ({ ...entry, segments: entry.segments.slice(1) })).filter((entry) => entry.segments.length > 0)
    : kept;

  // Cheap early refusals from the claimed sizes; the real counts are enforced while inflating.
  const plannedFiles = planned.filter((entry) => entry.kind === "file");
  const claimedTotal = plannedFiles.reduce((sum, entry) => sum + entry.uncompressedSize, 0);
  const compressedTotal = plannedFiles.reduce((sum, entry) => sum + entry.compressedSize, 0);
  if (claimedTotal > limits.maxUncompressedBytes) tooLarge(limits);
  for (const entry of plannedFiles) {
    if (ratioExceeded(entry.uncompressedSize, entry.compressedSize)) ratioRefusal(entry.segments.join("/"));
  }
  if (ratioExceeded(claimedTotal, compressedTotal)) ratioRefusal(null);
  return planned;
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
  return refuse("ARCHIVE_TOO_LARGE", `The archive expands to more than ${limits.maxUncompressedBytes} bytes`);
}

/**
 * Reads every local header, checks it agrees with the central directory, records where each
 * entry's data starts, and refuses entries whose data overlaps another's (the overlapping-file
 * zip bomb) or the central directory.
 */
async function locateData(reader: ZipFileReader, parsed: ParsedArchive): Promise<void> {
  const byOffset = [...parsed.entries].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  for (const entry of byOffset) {
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
  inflated: number;
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
      if (budget.inflated > budget.limits.maxUncompressedBytes) tooLarge(budget.limits);
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
    const planned = planEntries(parsed.entries, limits).sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
    const compressed = planned.reduce((sum, entry) => sum + (entry.kind === "file" ? entry.compressedSize : 0), 0);
    // A large upload has just streamed through: free its spent chunks before inflating adds more.
    if (compressed >= GC_EVERY_BYTES) Bun.gc(true);
    return { reader, planned, budget: { limits, inflated: 0, compressed, collectedAt: 0 } };
  } catch (error) {
    await reader.close();
    throw error;
  }
}

function describe(entry: CentralEntry, size: number): ArchiveEntry {
  return { path: entry.segments.join("/"), kind: entry.kind, size, executable: entry.executable };
}

function contents(entries: ArchiveEntry[], budget: Budget): ArchiveContents {
  return { entries: entries.sort((a, b) => compare(a.path, b.path)), totalBytes: budget.inflated };
}

/**
 * Validates `zipFile` completely without writing anything: the structure, every name and
 * attribute, and the real inflated size of every entry (each is inflated and discarded).
 */
export async function inspectZip(zipFile: string, limits: ArchiveLimits): Promise<ArchiveContents> {
  const { reader, planned, budget } = await openArchive(zipFile, limits);
  try {
    const entries: ArchiveEntry[] = [];
    for (const entry of planned) {
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
