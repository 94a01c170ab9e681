// S3BackupCopies against a real S3-compatible server (s3rver on loopback): a copy is uploaded
// (multipart past one part), read back and confirmed; a copy whose bytes changed on the way is
// `failed` and leaves nothing; a missing local file is brought back from its copy, whole and
// checked; copies are removed; and a server that is down gives `failed` copies whose reasons hold
// no key, never an exception.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { BackupStorage } from "../../../src/backups/storage";
import { partSizeFor, S3BackupCopies } from "../../../src/backups/copies";
import type { BackupBucket } from "../../../src/config";
import { tempDir } from "../../helpers/temp";
import { TestS3 } from "../../helpers/s3";

const MiB = 1024 * 1024;
const PREFIX = "site-a/";

let s3: TestS3;
let storage: BackupStorage;
let copies: S3BackupCopies;
let bucket: BackupBucket;

beforeAll(async () => {
  s3 = await TestS3.start();
  storage = new BackupStorage(tempDir());
  bucket = { endpoint: s3.endpoint, region: "us-east-1", bucket: s3.bucket, prefix: PREFIX, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, stallSeconds: 30 };
  copies = new S3BackupCopies(bucket, storage);
});

afterAll(async () => {
  await s3?.stop();
});

let fileCount = 0;

/** A backup file of `sizeBytes` random bytes under the storage, with its key and SHA-256. */
async function localBackup(sizeBytes: number): Promise<{ key: string; sha256: string; bytes: Uint8Array }> {
  fileCount += 1;
  const key = `db_unit/bk_unit${fileCount}.sql.gz`;
  const bytes = new Uint8Array(sizeBytes);
  for (let offset = 0; offset < sizeBytes; offset += 65_536) crypto.getRandomValues(bytes.subarray(offset, Math.min(sizeBytes, offset + 65_536)));
  await mkdir(dirname(storage.pathOf(key)), { recursive: true });
  await Bun.write(storage.pathOf(key), bytes);
  return { key, sha256: new Bun.CryptoHasher("sha256").update(bytes).digest("hex"), bytes };
}

describe("copy", () => {
  test("a small file: one PUT under the prefix, read back, completed with confirmedAt; the object has the file's bytes", async () => {
    const { key, sha256 } = await localBackup(10_000);
    const events: string[] = [];
    const unsubscribe = s3.onEvent((name, objectKey) => objectKey === PREFIX + key && events.push(name));
    const before = Date.now();
    const [copy, ...others] = await copies.copy(key, sha256);
    unsubscribe();

    expect(others).toEqual([]);
    expect(copy).toMatchObject({ destination: "s3", location: `s3://${s3.bucket}/${PREFIX}${key}`, status: "completed", error: null });
    expect(Date.parse(copy!.confirmedAt!)).toBeGreaterThanOrEqual(before - 1000);
    expect(events).toEqual(["ObjectCreated:Put"]);
    expect(await s3.objectSha256(PREFIX + key)).toBe(sha256);
  });

  test("a file larger than a part goes up as a multipart upload and is confirmed whole", async () => {
    const { key, sha256 } = await localBackup(11 * MiB + 123);
    const events: string[] = [];
    const unsubscribe = s3.onEvent((name, objectKey) => objectKey === PREFIX + key && events.push(name));
    const [copy] = await copies.copy(key, sha256);
    unsubscribe();

    expect({ status: copy!.status, error: copy!.error }).toEqual({ status: "completed", error: null });
    // s3rver names the object made by CompleteMultipartUpload `ObjectCreated:Post`, a PUT `ObjectCreated:Put`.
    expect(events).toEqual(["ObjectCreated:Post"]);
    expect(await s3.objectSha256(PREFIX + key)).toBe(sha256);
    expect((await s3.client().file(PREFIX + key).stat()).size).toBe(11 * MiB + 123);
  });

  test("bytes changed in the bucket before the read-back: failed with the reason, and the bad object is deleted", async () => {
    const { key, sha256 } = await localBackup(20_000);
    // Flips the first byte of the stored object as soon as it is made, before the answer to the upload goes out.
    const unsubscribe = s3.onEvent((name, objectKey) => {
      if (objectKey !== PREFIX + key || !name.startsWith("ObjectCreated")) return;
      const file = s3.objectFile(objectKey);
      const first = readFileSync(file).subarray(0, 1);
      const descriptor = openSync(file, "r+");
      writeSync(descriptor, Uint8Array.of(first[0]! ^ 0xff), 0, 1, 0);
      closeSync(descriptor);
    });
    const [copy] = await copies.copy(key, sha256);
    unsubscribe();

    expect(copy).toMatchObject({ status: "failed", confirmedAt: null });
    expect(copy!.error).toContain("another SHA-256");
    expect(await s3.objectExists(PREFIX + key)).toBe(false);
  });

  test("a bucket that does not exist: failed with S3's reason, no exception, no key in it", async () => {
    const { key, sha256 } = await localBackup(1_000);
    const elsewhere = new S3BackupCopies({ ...bucket, bucket: "no-such-bucket" }, storage);
    const [copy] = await elsewhere.copy(key, sha256);
    expect(copy).toMatchObject({ destination: "s3", location: `s3://no-such-bucket/${PREFIX}${key}`, status: "failed", confirmedAt: null });
    expect(copy!.error).toContain("NoSuchBucket");
    expect(copy!.error).not.toContain(s3.secretAccessKey);
    expect(copy!.error).not.toContain(s3.accessKeyId);
  });

  test("an unknown access key id: failed, and the reason masks the key", async () => {
    const { key, sha256 } = await localBackup(1_000);
    // s3rver's message does not name the key; one that did would be masked the same way.
    const unknown = new S3BackupCopies({ ...bucket, accessKeyId: "AKIAUNKNOWNKEY000000" }, storage);
    const [copy] = await unknown.copy(key, sha256);
    expect(copy!.status).toBe("failed");
    expect(copy!.error).toContain("InvalidAccessKeyId");
    expect(copy!.error).not.toContain("AKIAUNKNOWNKEY000000");
  });
});

describe("fetchMissing", () => {
  test("a file gone from the data dir comes back from its completed copy, whole, with no partial file left", async () => {
    const { key, sha256, bytes } = await localBackup(6 * MiB);
    const made = await copies.copy(key, sha256);
    await rm(storage.pathOf(key));

    // Two downloads at once share one fetch.
    expect(await Promise.all([copies.fetchMissing(key, sha256, made), copies.fetchMissing(key, sha256, made)])).toEqual([true, true]);
    expect(Buffer.from(readFileSync(storage.pathOf(key))).equals(Buffer.from(bytes))).toBe(true);
    expect(readdirSync(dirname(storage.pathOf(key))).filter((name) => name.endsWith(".partial"))).toEqual([]);
  });

  test("a copy whose bytes are not the backup's is not put in place: false, and no file", async () => {
    const { key, sha256 } = await localBackup(5_000);
    const made = await copies.copy(key, sha256);
    await rm(storage.pathOf(key));
    const file = s3.objectFile(PREFIX + key);
    const descriptor = openSync(file, "r+");
    writeSync(descriptor, Uint8Array.of(0, 1, 2, 3), 0, 4, 100);
    closeSync(descriptor);

    expect(await copies.fetchMissing(key, sha256, made)).toBe(false);
    expect(existsSync(storage.pathOf(key))).toBe(false);
    expect(readdirSync(dirname(storage.pathOf(key))).filter((name) => name.endsWith(".partial"))).toEqual([]);
  });

  test("no completed copy, or an object gone from the bucket: false", async () => {
    const { key, sha256 } = await localBackup(3_000);
    const location = copies.locationOf(key);
    expect(await copies.fetchMissing(key, sha256, [])).toBe(false);
    expect(await copies.fetchMissing(key, sha256, [{ destination: "s3", location, status: "failed", error: "x", confirmedAt: null }])).toBe(false);
    await rm(storage.pathOf(key));
    expect(await copies.fetchMissing(key, sha256, [{ destination: "s3", location, status: "completed", error: null, confirmedAt: new Date().toISOString() }])).toBe(false);
  });
});

describe("remove", () => {
  test("deletes the objects of completed copies; one already gone is no error", async () => {
    const { key, sha256 } = await localBackup(2_000);
    const made = await copies.copy(key, sha256);
    expect(made).toMatchObject([{ status: "completed", error: null }]);
    expect(await s3.objectExists(PREFIX + key)).toBe(true);
    await copies.remove(made);
    expect(await s3.objectExists(PREFIX + key)).toBe(false);
    await copies.remove(made);
  });
});

describe("a server that is down", () => {
  test("copy answers failed (connection refused) and never throws; remove and fetchMissing do not throw either; all works again once it is back", async () => {
    const { key, sha256 } = await localBackup(4_000);
    const made = await copies.copy(key, sha256);
    await s3.stop();
    try {
      const [copy] = await copies.copy(key, sha256);
      expect(copy!.status).toBe("failed");
      expect(copy!.error).toMatch(/ConnectionRefused/);
      expect(copy!.error).not.toContain(s3.secretAccessKey);
      await rm(storage.pathOf(key));
      expect(await copies.fetchMissing(key, sha256, made)).toBe(false);
      await copies.remove(made);
    } finally {
      await s3.run();
    }
    expect(await s3.objectExists(PREFIX + key)).toBe(true);
    expect(await copies.fetchMissing(key, sha256, made)).toBe(true);
    expect((await copies.copy(key, sha256))[0]!.status).toBe("completed");
  });
});

describe("a bucket that takes the connection and never answers", () => {
  test("the copy fails after PLATFORM_BACKUP_S3_STALL_SECONDS without progress, saying so, instead of holding the backup", async () => {
    // A loopback listener that accepts and stays silent: what a hung proxy or a stuck endpoint does.
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const stuck = new S3BackupCopies({ ...bucket, endpoint: `http://127.0.0.1:${silent.port}`, stallSeconds: 1 }, storage);
      const { key, sha256 } = await localBackup(3_000);
      const started = Date.now();
      const [copy] = await stuck.copy(key, sha256);
      expect(copy).toMatchObject({ status: "failed", confirmedAt: null });
      expect(copy!.error).toContain("no progress");
      expect(copy!.error).not.toContain(s3.secretAccessKey);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      silent.stop(true);
    }
  });
});

test("part size: 5 MiB, or larger so that a file never needs more than 10,000 parts", () => {
  expect(partSizeFor(0)).toBe(5 * MiB);
  expect(partSizeFor(1000 * MiB)).toBe(5 * MiB);
  const huge = 200 * 1024 * MiB;
  expect(partSizeFor(huge)).toBeGreaterThan(5 * MiB);
  expect(Math.ceil(huge / partSizeFor(huge))).toBeLessThanOrEqual(10_000);
});
