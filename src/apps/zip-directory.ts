// The ZIP central directory reader: finds the end record, reads every central entry and checks
// its name (UTF-8, no traversal, no absolute or backslash paths, bounded lengths) and its kind
// (regular files and folders only). See archive.ts for what is done with the entries.
import type { FileHandle } from "node:fs/promises";
import { ApiError, type ErrorCode } from "../http/errors";
import type { ArchiveLimits } from "./archive";

const MAX_SEGMENT_BYTES = 255;
const MAX_PATH_BYTES = 1024;
/**
 * Most segments (folders and the file name) in an entry's path. Real apps stay far below; deep
 * chains of one-letter folders are a folder bomb: 40 names of 1,000 bytes made 20,000 folders.
 */
export const MAX_PATH_DEPTH = 32;
const READ_WINDOW_BYTES = 1024 * 1024;
export const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const EOCD_BYTES = 22;
const CENTRAL_BYTES = 46;
export const LOCAL_BYTES = 30;

export const FLAG_ENCRYPTED = 1 << 0;
export const FLAG_DATA_DESCRIPTOR = 1 << 3;
const FLAG_STRONG_ENCRYPTION = 1 << 6;
const FLAG_MASKED_HEADERS = 1 << 13;
const METHOD_STORED = 0;
export const METHOD_DEFLATE = 8;
const METHOD_AES = 99;

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

/**
 * Entries handled between two turns of the event loop. Reads are served from a window in memory,
 * so awaiting them never yields: parsing 20,000 entries in one go held the server's thread for
 * up to half a second on a busy machine.
 */
const ENTRIES_PER_TURN = 256;

/** Lets timers and other requests run every ENTRIES_PER_TURN entries of a loop. */
export async function pauseEvery(count: number): Promise<void> {
  if (count % ENTRIES_PER_TURN === ENTRIES_PER_TURN - 1) await new Promise<void>((resolve) => setImmediate(resolve));
}

export function refuse(code: ErrorCode, message: string): never {
  throw new ApiError(code, message);
}

export const invalid = (message: string): never => refuse("ARCHIVE_INVALID", message);

/** A name as it may appear in an error message: quoted, escaped, and cut short. */
export function shown(name: string): string {
  return JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}…` : name);
}


export interface CentralEntry {
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

export interface ParsedArchive {
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
export class ZipFileReader {
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

export async function readCentralDirectory(reader: ZipFileReader, limits: ArchiveLimits): Promise<ParsedArchive> {
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
    await pauseEvery(index);
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

export const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

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
  const segments = parts.filter((part) => part !== "" && part !== ".");
  if (segments.length > MAX_PATH_DEPTH) {
    refuse("ARCHIVE_TOO_DEEP", `Entry ${shown(name)} is ${segments.length} levels deep; the limit is ${MAX_PATH_DEPTH}`);
  }
  return segments;
}

// ---------------------------------------------------------------------------------------------
