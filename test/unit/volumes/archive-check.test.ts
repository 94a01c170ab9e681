// The tar walker of volume backup verifies (src/volumes/archive-check.ts), on archives made by GNU
// tar: what it counts, and each way a damaged archive is told apart from a whole one.
import { expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ArchiveDamaged, readArchive } from "../../../src/volumes/archive-check";
import { tempDir } from "../../helpers/temp";

/** A tar of a small tree as GNU tar writes it (PAX headers for the long name), not padded past its end marker, as the engine writes it. */
function sampleTar(): Uint8Array {
  const root = tempDir("archive-check-");
  mkdirSync(join(root, "tree/nested/deeper"), { recursive: true });
  writeFileSync(join(root, "tree/empty"), "");
  writeFileSync(join(root, "tree/nested/data.bin"), new Uint8Array(70_000).fill(7));
  writeFileSync(join(root, "tree/nested/deeper", "n".repeat(150)), "long name");
  symlinkSync("nested/data.bin", join(root, "tree/link"));
  const made = Bun.spawnSync(["tar", "--format=posix", "--blocking-factor=1", "-C", join(root, "tree"), "-cf", "-", "."]);
  if (made.exitCode !== 0) throw new Error(made.stderr.toString());
  return new Uint8Array(made.stdout);
}

/** The bytes as a stream of chunks of `size`, as the gunzip hands them over. */
function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

test("a whole archive: files, folders, symlinks and the files' bytes are counted, whatever the chunking", async () => {
  const tar = sampleTar();
  for (const size of [1, 511, 512, 4096, tar.byteLength]) {
    const content = await readArchive(chunked(tar, size === 1 ? 97 : size));
    expect(content).toEqual({ files: 3, directories: 3, symlinks: 1, otherEntries: 0, fileBytes: 70_009, archiveBytes: tar.byteLength });
  }
});

test("cut short anywhere (inside an entry, or before its end marker), the archive is damaged", async () => {
  const tar = sampleTar();
  for (const length of [700, 512 * 3, tar.byteLength - 1024, tar.byteLength - 512]) {
    await expect(readArchive(chunked(tar.slice(0, length), 4096))).rejects.toThrow(ArchiveDamaged);
  }
  await expect(readArchive(chunked(tar.slice(0, tar.byteLength - 1024), 4096))).rejects.toThrow(/without its end-of-archive marker/);
});

test("a header with a changed byte fails its checksum; bytes after the end marker are refused", async () => {
  const tar = sampleTar();
  const flipped = tar.slice();
  flipped[512 * 0 + 10] ^= 0x20;
  await expect(readArchive(chunked(flipped, 4096))).rejects.toThrow(/wrong checksum/);
  const trailing = new Uint8Array([...tar, ...new TextEncoder().encode("junk")]);
  await expect(readArchive(chunked(trailing, 4096))).rejects.toThrow(/follow the end-of-archive marker/);
});
