// The backup files of src/backups/storage.ts on a temp folder: a write that fails before
// it reads its dump (the folder or the file cannot be made, as on a full disk) stops the dump, so
// that its producer (pg_dump on a full pipe) does not hang on, holding its lock; so does putting
// back a remote copy.
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BackupStorage } from "../../../src/backups/storage";
import { tempDir } from "../../helpers/temp";

/** A dump that never ends by itself, as pg_dump's output would not until someone reads it; tells when it is cancelled. */
function endlessDump() {
  let cancelled!: () => void;
  const wasCancelled = new Promise<void>((resolve) => (cancelled = resolve));
  const stream = new ReadableStream<Uint8Array>({
    pull: (controller) => controller.enqueue(new Uint8Array(64 * 1024).fill(65)),
    cancel: () => cancelled(),
  });
  return { stream, wasCancelled };
}

const withinSeconds = (promise: Promise<void>, seconds: number) =>
  Promise.race([promise.then(() => "cancelled"), Bun.sleep(seconds * 1000).then(() => "still running")]);

describe("a backup write that fails before reading its dump", () => {
  test("when the folder cannot be made, stops the dump", async () => {
    const notAFolder = join(tempDir(), "file");
    writeFileSync(notAFolder, "");
    const storage = new BackupStorage(notAFolder);
    const dump = endlessDump();
    await expect(storage.write(storage.keyOf("db1", "b1", "sql"), dump.stream)).rejects.toThrow();
    expect(await withinSeconds(dump.wasCancelled, 5)).toBe("cancelled");
  });

  test("when the file cannot be opened, stops the dump", async () => {
    const storage = new BackupStorage(tempDir());
    const key = storage.keyOf("db1", "b1", "sql");
    // A folder where the partial file goes: opening it for writing fails.
    mkdirSync(`${storage.pathOf(key)}.partial`, { recursive: true });
    const dump = endlessDump();
    await expect(storage.write(key, dump.stream)).rejects.toThrow();
    expect(await withinSeconds(dump.wasCancelled, 5)).toBe("cancelled");
  });

  test("a remote copy that cannot be put back (no folder) is let go", async () => {
    const notAFolder = join(tempDir(), "file");
    writeFileSync(notAFolder, "");
    const storage = new BackupStorage(notAFolder);
    const copy = endlessDump();
    await expect(storage.receive(storage.keyOf("db1", "b1", "sql"), copy.stream, "0".repeat(64))).rejects.toThrow();
    expect(await withinSeconds(copy.wasCancelled, 5)).toBe("cancelled");
  });
});
