// Off-site copies of backup files in an S3-compatible bucket (PLATFORM_BACKUP_S3_*), written with
// Bun's built-in S3 client. A file is streamed up (multipart once it passes one part) and then read
// back, streamed, to compare its SHA-256 with the backup's: only then is the copy `completed`. A
// remote failure is never thrown: the copy is `failed` with the reason, the keys masked out of it.
// A copy that failed leaves no object behind (Bun aborts a failed multipart upload; an object read
// back with another checksum is deleted). A bucket that takes a request and then goes silent fails
// the copy after PLATFORM_BACKUP_S3_STALL_SECONDS without progress, rather than hold it forever.
import { S3Client, type S3File } from "bun";
import type { BackupBucket } from "../config";
import { redact } from "../crypto/redact";
import type { BackupCopy, BackupDestinations } from "./model";
import type { BackupStorage } from "./storage";

/** S3's smallest part (but the last) and most parts of one upload. */
const MIN_PART_BYTES = 5 * 1024 * 1024;
const MAX_PARTS = 10_000;
/** Parts in flight at once: memory held is about this many parts, whatever the file's size. */
const PARTS_IN_FLIGHT = 2;
/** Tries again per request (a part, the single PUT, the commit) before the copy fails. */
const RETRIES = 2;
const NO_ANSWER = "an unexpected error has occurred";

/** The smallest part size that keeps a file of `sizeBytes` within S3's 10,000 parts. */
export function partSizeFor(sizeBytes: number): number {
  return Math.max(MIN_PART_BYTES, Math.ceil(sizeBytes / MAX_PARTS));
}

export class S3BackupCopies implements BackupDestinations {
  private readonly client: S3Client;
  /** Fetches under way, by storage key: two downloads of a missing file share one. */
  private readonly fetching = new Map<string, Promise<boolean>>();

  constructor(
    private readonly bucket: BackupBucket,
    private readonly storage: BackupStorage,
  ) {
    this.client = new S3Client({
      endpoint: bucket.endpoint,
      region: bucket.region,
      bucket: bucket.bucket,
      accessKeyId: bucket.accessKeyId,
      secretAccessKey: bucket.secretAccessKey,
    });
  }

  /** Where the copy of the backup `key` goes. */
  locationOf(key: string): string {
    return `s3://${this.bucket.bucket}/${this.bucket.prefix}${key}`;
  }

  async copy(key: string, sha256: string): Promise<BackupCopy[]> {
    const location = this.locationOf(key);
    const object = this.objectAt(location)!;
    try {
      await this.upload(object, this.storage.pathOf(key));
    } catch (error) {
      return [failedCopy(location, `the upload failed: ${this.reasonOf(error)}`)];
    }
    let remoteSha256: string;
    try {
      remoteSha256 = await this.sha256Of(object);
    } catch (error) {
      return [failedCopy(location, `reading the copy back failed: ${this.reasonOf(error)}`)];
    }
    if (remoteSha256 !== sha256) {
      await this.deleteObject(location);
      return [failedCopy(location, "the copy read back from the bucket has another SHA-256 than the backup's file")];
    }
    return [{ destination: "s3", location, status: "completed", error: null, confirmedAt: new Date().toISOString() }];
  }

  fetchMissing(key: string, sha256: string, copies: BackupCopy[]): Promise<boolean> {
    const under = this.fetching.get(key);
    if (under) return under;
    const fetched = this.fetchFirst(key, sha256, copies).finally(() => this.fetching.delete(key));
    this.fetching.set(key, fetched);
    return fetched;
  }

  async remove(copies: BackupCopy[]): Promise<void> {
    for (const copy of copies) if (copy.destination === "s3" && copy.status === "completed") await this.deleteObject(copy.location);
  }

  /** Streams the file up; waiting for each part to be taken keeps memory flat whatever the file's size. */
  private async upload(object: S3File, path: string) {
    const local = Bun.file(path);
    const partSize = partSizeFor(local.size);
    const writer = object.writer({ partSize, queueSize: PARTS_IN_FLIGHT, retry: RETRIES, type: "application/gzip" });
    let unflushed = 0;
    for await (const chunk of local.stream()) {
      writer.write(chunk);
      unflushed += chunk.byteLength;
      if (unflushed >= partSize) {
        await this.progress(writer.flush());
        unflushed = 0;
      }
    }
    await this.progress(writer.end());
  }

  /** `step`, or an error once it has made no progress for the bucket's stall time. */
  private progress<T>(step: T | Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no progress from ${this.bucket.endpoint} for ${this.bucket.stallSeconds} s`)), this.bucket.stallSeconds * 1000);
    });
    return Promise.race([Promise.resolve(step), stalled]).finally(() => clearTimeout(timer));
  }

  /** The object's SHA-256, read back as a stream. */
  private async sha256Of(object: S3File): Promise<string> {
    const hash = new Bun.CryptoHasher("sha256");
    const reader = object.stream().getReader();
    try {
      for (;;) {
        const { value, done } = await this.progress(reader.read());
        if (done) return hash.digest("hex");
        hash.update(value);
      }
    } finally {
      reader.cancel().catch(() => undefined);
    }
  }

  /** The first completed copy that comes back whole with the right checksum is put in place. */
  private async fetchFirst(key: string, sha256: string, copies: BackupCopy[]): Promise<boolean> {
    for (const copy of copies) {
      const object = copy.destination === "s3" && copy.status === "completed" ? this.objectAt(copy.location) : null;
      if (!object) continue;
      try {
        if (await this.storage.receive(key, object.stream(), sha256)) return true;
        console.warn(`[backups] the copy at ${copy.location} has another SHA-256 than its backup; not used`);
      } catch (error) {
        console.warn(`[backups] could not fetch ${copy.location}: ${this.reasonOf(error)}`);
      }
    }
    return false;
  }

  private async deleteObject(location: string) {
    const object = this.objectAt(location);
    if (!object) return;
    try {
      // S3 answers a delete of a key that is not there with success.
      await this.progress(object.delete());
    } catch (error) {
      console.warn(`[backups] could not delete ${location}: ${this.reasonOf(error)}`);
    }
  }

  /** The object of an `s3://bucket/key` location, in the bucket it names (the setting may have changed since). */
  private objectAt(location: string): S3File | null {
    const match = /^s3:\/\/([^/]+)\/(.+)$/.exec(location);
    return match ? this.client.file(match[2]!, { bucket: match[1]! }) : null;
  }

  /** What an S3 error says (its code and message), with the keys masked. */
  private reasonOf(error: unknown): string {
    const { code, message } = error as { code?: unknown; message?: unknown };
    // Bun says only this when no S3 answer came (refused, reset, unknown host): the code says which.
    const said = typeof message !== "string" ? String(error) : message === NO_ANSWER ? `no answer from ${this.bucket.endpoint}` : message;
    return redact(typeof code === "string" ? `${code}: ${said}` : said, [this.bucket.accessKeyId, this.bucket.secretAccessKey]);
  }
}

function failedCopy(location: string, error: string): BackupCopy {
  return { destination: "s3", location, status: "failed", error, confirmedAt: null };
}
