// Writes of the file manager that are whole or absent: a file is written to a temp name in its
// folder, every byte checked and flushed, then linked or renamed into place and the folder
// flushed; a failure leaves no temp file, and the folders a failed change made are removed.
import { randomUUID } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { open, rmdir, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";

const OPEN_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** The name of a file being written (see writeWhole), followed by a UUID; one a crash left is removed at start. */
const WRITE_TEMP_PREFIX = ".platform-write-";
export const WRITE_TEMP_NAME = /^\.platform-write-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function syncFolder(absolute: string): Promise<void> {
  const folder = await open(absolute, constants.O_RDONLY | constants.O_DIRECTORY);
  await folder.sync().finally(() => folder.close());
}

/** Writes a new file (O_EXCL: never through an existing entry), every byte of it, flushed to disk. */
async function writeNewFile(absolute: string, bytes: Uint8Array, mode: number): Promise<Stats> {
  const handle = await open(absolute, OPEN_NEW, mode);
  try {
    await handle.chmod(mode);
    // A write may take fewer bytes than asked (a disk nearly full): the next one says why, or takes the rest.
    for (let written = 0; written < bytes.length; ) {
      const { bytesWritten } = await handle.write(bytes, written, bytes.length - written, written);
      // Neither a byte nor an error: asking again would never end.
      if (bytesWritten === 0) throw new Error(`a write of ${absolute} took no byte`);
      written += bytesWritten;
    }
    await handle.sync();
    return await handle.stat();
  } finally {
    await handle.close();
  }
}

/**
 * Writes `bytes` to a new temp file in `folder`, hands its path to `place` (which links or renames
 * it where it belongs) and flushes the folder: the file appears whole or not at all, and a
 * failure at any step leaves no temp file behind.
 */
export async function writeWhole(folder: string, bytes: Uint8Array, mode: number, place: (temp: string) => Promise<void>): Promise<Stats> {
  const temp = join(folder, `${WRITE_TEMP_PREFIX}${randomUUID()}`);
  try {
    const stats = await writeNewFile(temp, bytes, mode);
    await place(temp);
    // Unlinked (when linked, not renamed) before the folder is flushed: a crash after the flush leaves no temp name in the tree.
    await unlink(temp).catch(() => undefined);
    await syncFolder(folder);
    return stats;
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

/**
 * Removes the `count` innermost folders of `absolute`'s path, made for it by a change that failed;
 * one never made (the change failed before it) is passed over, a folder not empty (anymore) stays.
 */
export async function removeMadeFolders(absolute: string, count: number): Promise<void> {
  let folder = dirname(absolute);
  for (let made = 0; made < count; made++, folder = dirname(folder)) {
    const removed = await rmdir(folder).then(
      () => true,
      (error: NodeJS.ErrnoException) => error.code === "ENOENT",
    );
    if (!removed) return;
  }
}
