// Backup files under `<data dir>/backups/<ownerId>/<backupId>.<format>.gz`, the owner being the
// database or volume backed up (ids of both are unique). What is backed up (a dump, an archive) is streamed
// through gzip into a `.partial` file while its SHA-256 is computed; the file is fsynced, checked
// and recorded, and only then renamed into place, so a crash never leaves a finished-looking file
// its row cannot vouch for. A full disk fails the write with a reason that says so. Downloads stream
// from disk (whole or one byte range), with constant memory whatever the size.
import { mkdir, open, rename, rm } from "node:fs/promises";
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { isDiskFull } from "../http/errors";

const PARTIAL = ".partial";
/** What a backup's gzip holds: a database dump (sql, rdb, archive) or a tar of a volume's content. */
export type BackupFormat = "sql" | "rdb" | "archive" | "tar";
/** How many of the first and last bytes of what is stored are kept aside for its checks. */
export const DUMP_SAMPLE_BYTES = 256;

/** The size of a dump's output and its first and last bytes (up to DUMP_SAMPLE_BYTES each). */
export interface DumpSample {
  bytes: number;
  head: Uint8Array;
  tail: Uint8Array;
}
const SAFE_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** Written to disk in batches this large: one write per chunk would be one syscall each. */
const FLUSH_BYTES = 1024 * 1024;

export interface StoredBackup {
  /** Of the gzip file. */
  sizeBytes: number;
  sha256: string;
  /** What went in, before compression. */
  dump: DumpSample;
}

// The DOM typings give (de)compression streams a BufferSource side; they take Uint8Array chunks.
export const gzip = () => new CompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>;
export const gunzip = () => new DecompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>;

/** Keeps the first and last bytes of a stream, and counts them. */
class DumpSampler {
  bytes = 0;
  private head = new Uint8Array(0);
  private tail = new Uint8Array(0);

  add(chunk: Uint8Array) {
    this.bytes += chunk.byteLength;
    if (this.head.byteLength < DUMP_SAMPLE_BYTES) this.head = Buffer.concat([this.head, chunk.subarray(0, DUMP_SAMPLE_BYTES - this.head.byteLength)]);
    this.tail = Buffer.concat([this.tail, chunk.subarray(Math.max(0, chunk.byteLength - DUMP_SAMPLE_BYTES))]);
    if (this.tail.byteLength > DUMP_SAMPLE_BYTES) this.tail = this.tail.subarray(this.tail.byteLength - DUMP_SAMPLE_BYTES);
  }

  sample(): DumpSample {
    return { bytes: this.bytes, head: this.head, tail: this.tail };
  }
}

/**
 * Writes `chunks` to a new file at `path` and fsyncs it; answers its size and SHA-256. Chunks are
 * gathered into one reused buffer and each write is awaited: an error (ENOSPC) fails this call,
 * never the process. Bun's file writer did neither: its writes reject with no one listening, which
 * ends the process, and its flush resolves on a file cut short. Memory stays flat whatever the size.
 */
async function writeFileOf(path: string, chunks: ReadableStream<Uint8Array>, onWrite?: (bytes: number) => void): Promise<{ sizeBytes: number; sha256: string }> {
  const hash = new Bun.CryptoHasher("sha256");
  const buffer = Buffer.allocUnsafe(FLUSH_BYTES);
  let buffered = 0;
  let sizeBytes = 0;
  const file = await open(path, "w");
  const flush = async () => {
    for (let at = 0; at < buffered; ) {
      const { bytesWritten } = await file.write(buffer, at, buffered - at);
      if (bytesWritten === 0) throw new Error(`no byte could be written to ${path}`);
      at += bytesWritten;
    }
    buffered = 0;
  };
  try {
    for await (const chunk of chunks) {
      onWrite?.(chunk.byteLength);
      hash.update(chunk);
      sizeBytes += chunk.byteLength;
      for (let at = 0; at < chunk.byteLength; ) {
        const taken = Math.min(chunk.byteLength - at, buffer.byteLength - buffered);
        buffer.set(chunk.subarray(at, at + taken), buffered);
        buffered += taken;
        at += taken;
        if (buffered === buffer.byteLength) await flush();
      }
    }
    await flush();
    await file.sync();
  } finally {
    await file.close();
  }
  return { sizeBytes, sha256: hash.digest("hex") };
}

/** A full disk, said so that whoever reads a failed backup knows what to free; the code stays for callers that answer 507. */
function diskFullSaid(error: unknown): unknown {
  if (!isDiskFull(error)) return error;
  const code = (error as NodeJS.ErrnoException).code;
  return Object.assign(new Error(`the disk of the data directory is full (${code}: no space left on device); free some space and try again`), { code });
}

export class BackupStorage {
  constructor(readonly root: string) {}

  keyOf(ownerId: string, backupId: string, format: BackupFormat): string {
    if (!SAFE_ID.test(ownerId) || !SAFE_ID.test(backupId)) throw new Error("unsafe backup id");
    return `${ownerId}/${backupId}.${format}.gz`;
  }

  pathOf(key: string): string {
    const [ownerId, file] = key.split("/");
    if (!ownerId || !file || !SAFE_ID.test(ownerId) || !/^[A-Za-z0-9_-]{1,64}\.(sql|rdb|archive|tar)\.gz$/.test(file)) throw new Error("unsafe backup key");
    return join(this.root, ownerId, file);
  }

  /**
   * Streams `dump` through gzip into the file of `key`; it exists under its name only once whole,
   * on disk, and accepted. `onWrite` is told each compressed chunk's size before it is written;
   * `accept` is given the finished file before it takes its name (to check it and record its size
   * and SHA-256, so that a crash right after the rename leaves a row the file can be checked
   * against). Either stops the write, leaving no file, by throwing.
   */
  async write(key: string, dump: ReadableStream<Uint8Array>, options: { onWrite?: (bytes: number) => void; accept?: (stored: StoredBackup) => void | Promise<void> } = {}): Promise<StoredBackup> {
    const path = this.pathOf(key);
    const partial = path + PARTIAL;
    const sampler = new DumpSampler();
    const sampled = dump.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          sampler.add(chunk);
          controller.enqueue(chunk);
        },
      }),
    );
    const compressed = sampled.pipeThrough(gzip());
    try {
      await mkdir(join(path, ".."), { recursive: true });
      const stored = { ...(await writeFileOf(partial, compressed, options.onWrite)), dump: sampler.sample() };
      await options.accept?.(stored);
      await rename(partial, path);
      await syncDirectory(join(path, ".."));
      return stored;
    } catch (error) {
      // Failed before its first read (mkdir or open on a full disk): the dump is stopped, or its
      // producer (pg_dump) would block on a full pipe, holding its lock, until the idle timeout.
      await compressed.cancel(error).catch(() => {});
      await rm(partial, { force: true });
      throw diskFullSaid(error);
    }
  }

  /**
   * Puts the file of `key` back from `copy` (a remote copy's bytes), the way backup files are made:
   * into a `.partial` file of its own (two fetches never mix), hashed as it is written, fsynced, and
   * renamed into place only when its SHA-256 is `sha256`. False, and nothing left, when it is not.
   */
  async receive(key: string, copy: ReadableStream<Uint8Array>, sha256: string): Promise<boolean> {
    const path = this.pathOf(key);
    const partial = `${path}.${crypto.randomUUID()}${PARTIAL}`;
    try {
      await mkdir(join(path, ".."), { recursive: true });
      if ((await writeFileOf(partial, copy)).sha256 !== sha256) return false;
      await rename(partial, path);
      await syncDirectory(join(path, ".."));
      return true;
    } catch (error) {
      // Not read at all (mkdir or open failed): the download is let go rather than left to time out.
      await copy.cancel(error).catch(() => {});
      throw error;
    } finally {
      await rm(partial, { force: true });
    }
  }

  /**
   * Why the file of `key` is not the backup recorded (missing, another size, another checksum), or
   * null when it is. The SHA-256 was taken of the whole gzip file as it was written, so a match
   * also vouches for its gzip stream; only hashing is needed, at disk speed.
   */
  async problemWith(key: string, sizeBytes: number, sha256: string | null): Promise<string | null> {
    const file = Bun.file(this.pathOf(key));
    if (!(await file.exists())) return "its file is missing";
    if (file.size !== sizeBytes) return `its file has ${file.size} bytes where ${sizeBytes} were recorded (cut short or added to)`;
    return (await sha256Of(this.pathOf(key))) === sha256 ? null : "its file's SHA-256 differs from the one recorded when it was made";
  }

  /**
   * The dump decompressed into a file beside the backup (named `.partial`, so a crash leaves
   * nothing that survives the next start); `remove` deletes it.
   */
  async unpack(key: string): Promise<{ path: string; sizeBytes: number; remove(): Promise<void> }> {
    const path = this.pathOf(key).replace(/\.gz$/, `.unpacked${PARTIAL}`);
    try {
      const { sizeBytes } = await writeFileOf(path, this.dumpOf(key));
      return { path, sizeBytes, remove: () => rm(path, { force: true }) };
    } catch (error) {
      await rm(path, { force: true });
      throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    return Bun.file(this.pathOf(key)).exists();
  }

  /** The backup's dump, decompressed as it is read (a truncated or damaged file errors the stream). */
  dumpOf(key: string): ReadableStream<Uint8Array> {
    return Bun.file(this.pathOf(key)).stream().pipeThrough(gunzip());
  }

  async remove(key: string) {
    await rm(this.pathOf(key), { force: true });
  }

  /** Every backup file of a database or volume. */
  async removeOwner(ownerId: string) {
    if (!SAFE_ID.test(ownerId)) return;
    await rm(join(this.root, ownerId), { recursive: true, force: true });
  }

  /** At start, before anything is served: files of dumps (and uploads) cut off by a stop or crash are removed. */
  removePartials() {
    const entries = (folder: string) => {
      try {
        return readdirSync(folder, { withFileTypes: true });
      } catch {
        return [];
      }
    };
    for (const entry of entries(this.root)) {
      if (entry.isFile() && entry.name.endsWith(PARTIAL)) rmSync(join(this.root, entry.name), { force: true });
      if (!entry.isDirectory()) continue;
      for (const file of entries(join(this.root, entry.name))) if (file.name.endsWith(PARTIAL)) rmSync(join(this.root, entry.name, file.name), { force: true });
    }
  }

  /**
   * The file as a download: whole, or the one byte range a `Range: bytes=a-b` header asks for (206).
   * Null for a range that cannot be served (the caller answers 416).
   */
  download(key: string, sizeBytes: number, filename: string, range: string | null): Response | null {
    const file = Bun.file(this.pathOf(key));
    const headers: Record<string, string> = {
      "content-type": "application/gzip",
      "content-disposition": `attachment; filename="${filename}"`,
      "accept-ranges": "bytes",
      "cache-control": "no-store",
    };
    if (range === null) return new Response(file, { headers: { ...headers, "content-length": String(sizeBytes) } });
    const wanted = byteRange(range, sizeBytes);
    if (!wanted) return null;
    const [start, end] = wanted;
    return new Response(file.slice(start, end + 1), {
      status: 206,
      headers: { ...headers, "content-length": String(end - start + 1), "content-range": `bytes ${start}-${end}/${sizeBytes}` },
    });
  }
}

/** `bytes=a-b`, `bytes=a-` or `bytes=-n` within a file of `size` bytes, as [first, last]; null when unsatisfiable or not one range. */
export function byteRange(header: string, size: number): [number, number] | null {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === "" && match[2] === "")) return null;
  let start: number;
  let end: number;
  if (match[1] === "") {
    const suffix = Number(match[2]);
    if (suffix === 0) return null;
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(match[1]);
    end = match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1);
  }
  if (!Number.isSafeInteger(start) || start >= size || end < start) return null;
  return [start, end];
}

/** The file's SHA-256, read through one reused buffer: no garbage, whatever its size. */
async function sha256Of(path: string): Promise<string> {
  const hash = new Bun.CryptoHasher("sha256");
  const buffer = Buffer.alloc(FLUSH_BYTES);
  const file = await open(path, "r");
  try {
    for (;;) {
      const { bytesRead } = await file.read(buffer, 0, buffer.byteLength, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
  } finally {
    await file.close();
  }
  return hash.digest("hex");
}

/** A rename is on disk only once its folder is. */
async function syncDirectory(path: string) {
  const folder = await open(path, "r");
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}
