// Backup files under `<data dir>/backups/<databaseId>/<backupId>.<format>.gz`. A dump is streamed
// through gzip into a `.partial` file while its SHA-256 is computed; the file is fsynced and only
// then renamed into place, so a crash never leaves a file that looks finished. Downloads stream
// from disk (whole or one byte range), with constant memory whatever the size.
import { createHash } from "node:crypto";
import { mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createWriteStream } from "node:fs";
import { createGunzip, createGzip } from "node:zlib";
import { Writable } from "node:stream";
import { DUMP_SAMPLE_BYTES, type DumpFormat, type DumpSample } from "./engines";

const PARTIAL = ".partial";
const SAFE_ID = /^[A-Za-z0-9_-]{1,64}$/;

export interface StoredBackup {
  /** Of the gzip file. */
  sizeBytes: number;
  sha256: string;
  /** What went in, before compression. */
  dump: DumpSample;
}

/** Keeps the first and last bytes of what passes, and counts it. */
class SampleTap extends Transform {
  bytes = 0;
  private head = new Uint8Array(0);
  private tail = new Uint8Array(0);

  override _transform(chunk: Buffer, _encoding: string, done: (error?: Error | null, data?: Buffer) => void) {
    this.bytes += chunk.byteLength;
    if (this.head.byteLength < DUMP_SAMPLE_BYTES) this.head = Buffer.concat([this.head, chunk.subarray(0, DUMP_SAMPLE_BYTES - this.head.byteLength)]);
    this.tail = Buffer.concat([this.tail, chunk.subarray(Math.max(0, chunk.byteLength - DUMP_SAMPLE_BYTES))]);
    if (this.tail.byteLength > DUMP_SAMPLE_BYTES) this.tail = this.tail.subarray(this.tail.byteLength - DUMP_SAMPLE_BYTES);
    done(null, chunk);
  }

  sample(): DumpSample {
    return { bytes: this.bytes, head: this.head, tail: this.tail };
  }
}

/** Hashes and counts what passes. */
class HashTap extends Transform {
  readonly hash = createHash("sha256");
  bytes = 0;

  override _transform(chunk: Buffer, _encoding: string, done: (error?: Error | null, data?: Buffer) => void) {
    this.hash.update(chunk);
    this.bytes += chunk.byteLength;
    done(null, chunk);
  }
}

export class BackupStorage {
  constructor(readonly root: string) {}

  keyOf(databaseId: string, backupId: string, format: DumpFormat): string {
    if (!SAFE_ID.test(databaseId) || !SAFE_ID.test(backupId)) throw new Error("unsafe backup id");
    return `${databaseId}/${backupId}.${format}.gz`;
  }

  pathOf(key: string): string {
    const [databaseId, file] = key.split("/");
    if (!databaseId || !file || !SAFE_ID.test(databaseId) || !/^[A-Za-z0-9_-]{1,64}\.(sql|rdb|archive)\.gz$/.test(file)) throw new Error("unsafe backup key");
    return join(this.root, databaseId, file);
  }

  /** Streams `dump` through gzip into the file of `key`; it exists under its name only once whole and on disk. */
  async write(key: string, dump: ReadableStream<Uint8Array>): Promise<StoredBackup> {
    const path = this.pathOf(key);
    await mkdir(join(path, ".."), { recursive: true });
    const partial = path + PARTIAL;
    const sample = new SampleTap();
    const hashed = new HashTap();
    try {
      await pipeline(Readable.fromWeb(dump as unknown as import("node:stream/web").ReadableStream), sample, createGzip(), hashed, createWriteStream(partial));
      const file = await open(partial, "r+");
      try {
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(partial, path);
      await syncDirectory(join(path, ".."));
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    return { sizeBytes: hashed.bytes, sha256: hashed.hash.digest("hex"), dump: sample.sample() };
  }

  /**
   * Why the file of `key` is not the backup recorded (missing, another checksum, not a whole gzip
   * stream), or null when it is: read once, hashed and decompressed to nowhere.
   */
  async problemWith(key: string, sha256: string | null): Promise<string | null> {
    const file = Bun.file(this.pathOf(key));
    if (!(await file.exists())) return "its file is missing";
    const hash = createHash("sha256");
    const hashed = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(Readable.fromWeb(file.stream() as unknown as import("node:stream/web").ReadableStream), hashed, createGunzip(), new Writable({ write: (_chunk, _encoding, done) => done() }));
    } catch (error) {
      return `its file is not a whole gzip stream (${(error as Error).message})`;
    }
    return hash.digest("hex") === sha256 ? null : "its file's SHA-256 differs from the one recorded when it was made";
  }

  /** The backup's dump, decompressed as it is read. */
  dumpOf(key: string): ReadableStream<Uint8Array> {
    const source = Readable.fromWeb(Bun.file(this.pathOf(key)).stream() as unknown as import("node:stream/web").ReadableStream);
    return Readable.toWeb(source.pipe(createGunzip())) as unknown as ReadableStream<Uint8Array>;
  }

  async remove(key: string) {
    await rm(this.pathOf(key), { force: true });
  }

  async removeDatabase(databaseId: string) {
    if (!SAFE_ID.test(databaseId)) return;
    await rm(join(this.root, databaseId), { recursive: true, force: true });
  }

  /** At start: files of dumps cut off by a stop or crash are removed. */
  async removePartials() {
    const folders = await readdir(this.root, { withFileTypes: true }).catch(() => []);
    for (const folder of folders) {
      if (!folder.isDirectory()) continue;
      const files = await readdir(join(this.root, folder.name)).catch(() => []);
      for (const file of files) if (file.endsWith(PARTIAL)) await rm(join(this.root, folder.name, file), { force: true });
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

/** A rename is on disk only once its folder is. */
async function syncDirectory(path: string) {
  const folder = await open(path, "r");
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}
