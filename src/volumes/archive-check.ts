// Reads a volume backup's tar back as a stream and says what it holds: files, folders, symlinks and
// the bytes of the files, or why it is not a whole tar (a header whose checksum is wrong, content
// cut short, no end-of-archive marker). Only headers are looked at; content is skipped, so memory
// stays flat whatever the size. This counts, it decides nothing about safety: a restore hands the
// archive to the engine, which extracts it.
const BLOCK = 512;
/** PAX extended headers are a few records; a longer one is not a tar the engine wrote. */
const MAX_PAX_BYTES = 1024 * 1024;

export interface ArchiveContent {
  files: number;
  directories: number;
  symlinks: number;
  /** Hard links, devices, fifos: kept as they are, counted here. */
  otherEntries: number;
  /** Bytes of the regular files' content. */
  fileBytes: number;
  /** Bytes of the tar itself. */
  archiveBytes: number;
}

export class ArchiveDamaged extends Error {}

function octalField(block: Uint8Array, offset: number, length: number): number {
  // GNU base-256: the high bit of the first byte set, the value big-endian in the rest.
  if (block[offset]! & 0x80) {
    let value = block[offset]! & 0x7f;
    for (let at = offset + 1; at < offset + length; at++) value = value * 256 + block[at]!;
    return value;
  }
  const text = new TextDecoder().decode(block.subarray(offset, offset + length)).replace(/\0.*$/s, "").trim();
  if (text === "") return 0;
  if (!/^[0-7]+$/.test(text)) return Number.NaN;
  return Number.parseInt(text, 8);
}

function checksumMatches(block: Uint8Array): boolean {
  let sum = 0;
  for (let at = 0; at < BLOCK; at++) sum += at >= 148 && at < 156 ? 0x20 : block[at]!;
  return octalField(block, 148, 8) === sum;
}

/** The `size` a PAX header sets for the next entry, if any (files past 8 GiB). */
function paxSize(records: Uint8Array): number | null {
  const match = /(?:^|\n)\d+ size=(\d+)\n/.exec(new TextDecoder().decode(records));
  return match ? Number(match[1]) : null;
}

/**
 * Walks the tar in `archive` to its end-of-archive marker (two zero blocks; only zeros may follow).
 * Throws ArchiveDamaged saying what is wrong; the stream's own error (a damaged gzip) is thrown as it is.
 */
export async function readArchive(archive: ReadableStream<Uint8Array>): Promise<ArchiveContent> {
  const content: ArchiveContent = { files: 0, directories: 0, symlinks: 0, otherEntries: 0, fileBytes: 0, archiveBytes: 0 };
  let pending = new Uint8Array(0);
  /** Content bytes still to skip (padded to whole blocks), and whether they are a PAX header to read. */
  let skip = 0;
  let pax = null as { bytes: Uint8Array[]; left: number } | null;
  let nextSize: number | null = null;
  let zeroBlocks = 0;
  let ended = false;

  const header = (block: Uint8Array) => {
    if (block.every((byte) => byte === 0)) {
      zeroBlocks++;
      if (zeroBlocks === 2) ended = true;
      return;
    }
    if (zeroBlocks > 0) throw new ArchiveDamaged(`a zero block sits inside the archive, before the entry at byte ${content.archiveBytes}`);
    if (!checksumMatches(block)) throw new ArchiveDamaged(`the header at byte ${content.archiveBytes} has a wrong checksum`);
    const type = String.fromCharCode(block[156]!);
    let size = octalField(block, 124, 12);
    if (!Number.isSafeInteger(size)) throw new ArchiveDamaged(`the header at byte ${content.archiveBytes} has no readable size`);
    if (type === "x") {
      if (size > MAX_PAX_BYTES) throw new ArchiveDamaged(`a PAX header of ${size} bytes`);
      pax = { bytes: [], left: size };
    } else if (type === "g" || type === "L" || type === "K") {
      // Global PAX records, GNU long names: metadata, skipped.
    } else {
      if (nextSize !== null) size = nextSize;
      nextSize = null;
      if (type === "0" || type === "\0" || type === "7") {
        content.files++;
        content.fileBytes += size;
      } else if (type === "5") content.directories++;
      else if (type === "2") content.symlinks++;
      else content.otherEntries++;
      // Links, folders, devices and fifos carry no content whatever their size field says.
      if (!["0", "\0", "7"].includes(type)) size = 0;
    }
    skip = Math.ceil(size / BLOCK) * BLOCK;
  };

  for await (const chunk of archive) {
    content.archiveBytes += chunk.byteLength;
    let data = pending.byteLength ? Buffer.concat([pending, chunk]) : chunk;
    while (data.byteLength > 0) {
      if (ended) {
        if (!data.every((byte) => byte === 0)) throw new ArchiveDamaged("bytes other than zeros follow the end-of-archive marker");
        data = data.subarray(data.byteLength);
        break;
      }
      if (skip > 0) {
        const taken = Math.min(skip, data.byteLength);
        if (pax) {
          const useful = Math.min(taken, pax.left);
          pax.bytes.push(data.slice(0, useful));
          pax.left -= useful;
        }
        skip -= taken;
        data = data.subarray(taken);
        if (skip === 0 && pax) {
          nextSize = paxSize(Buffer.concat(pax.bytes)) ?? nextSize;
          pax = null;
        }
        continue;
      }
      if (data.byteLength < BLOCK) break;
      header(data.subarray(0, BLOCK));
      data = data.subarray(BLOCK);
    }
    pending = data.byteLength ? data.slice() : new Uint8Array(0);
  }
  if (skip > 0 || pending.byteLength > 0) throw new ArchiveDamaged(`the archive is cut short after ${content.archiveBytes} bytes, inside an entry`);
  if (!ended) throw new ArchiveDamaged(`the archive ends after ${content.archiveBytes} bytes without its end-of-archive marker (cut short)`);
  return content;
}
