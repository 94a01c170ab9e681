// A streaming tar (POSIX ustar, with PAX headers for long paths) writer for build contexts: it
// reads files from disk one at a time, so a large source tree never sits in memory whole.
// (Bun.Archive buffers everything and writes lazily-read Bun.file entries as empty.)
import { open } from "node:fs/promises";

export interface TarEntry {
  /** Path inside the archive, with forward slashes. */
  path: string;
  mode: number;
  /** Content given inline, or read from this file on disk as the stream reaches it. */
  content: Uint8Array | { file: string; size: number };
}

const BLOCK = 512;
const encoder = new TextEncoder();

function writeField(header: Uint8Array, offset: number, length: number, value: string) {
  header.set(encoder.encode(value).subarray(0, length), offset);
}

function octal(value: number, length: number): string {
  return value.toString(8).padStart(length - 1, "0");
}

function header(path: string, size: number, mode: number, type: "0" | "x"): Uint8Array {
  const block = new Uint8Array(BLOCK);
  writeField(block, 0, 100, path);
  writeField(block, 100, 8, octal(mode & 0o7777, 8));
  writeField(block, 108, 8, octal(0, 8));
  writeField(block, 116, 8, octal(0, 8));
  writeField(block, 124, 12, octal(size, 12));
  writeField(block, 136, 12, octal(0, 12));
  block.fill(0x20, 148, 156); // checksum is computed with its own field as spaces
  writeField(block, 156, 1, type);
  writeField(block, 257, 6, "ustar");
  writeField(block, 263, 2, "00");
  let sum = 0;
  for (const byte of block) sum += byte;
  writeField(block, 148, 8, `${octal(sum, 7)}\0`);
  return block;
}

/** A PAX extended header carrying a path too long for ustar's 100-byte name field. */
function paxPath(path: string): Uint8Array[] {
  const body = (length: number) => `${length} path=${path}\n`;
  let length = encoder.encode(body(0)).length;
  while (encoder.encode(body(length)).length !== length) length = encoder.encode(body(length)).length;
  const record = encoder.encode(body(length));
  return [header("PaxHeader", record.length, 0o644, "x"), record, padding(record.length)];
}

function padding(size: number): Uint8Array {
  return new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK);
}

export function tarStream(entries: Iterable<TarEntry> | AsyncIterable<TarEntry>): ReadableStream<Uint8Array> {
  const iterator = (async function* () {
    for await (const entry of entries as AsyncIterable<TarEntry>) {
      const size = entry.content instanceof Uint8Array ? entry.content.length : entry.content.size;
      if (encoder.encode(entry.path).length > 100) yield* paxPath(entry.path);
      yield header(entry.path.slice(0, 100), size, entry.mode, "0");
      if (entry.content instanceof Uint8Array) {
        yield entry.content;
      } else {
        const handle = await open(entry.content.file, "r");
        try {
          let remaining = size;
          while (remaining > 0) {
            const chunk = new Uint8Array(Math.min(remaining, 256 * 1024));
            const { bytesRead } = await handle.read(chunk, 0, chunk.length, size - remaining);
            if (bytesRead === 0) throw new Error(`${entry.path} shrank while it was being archived`);
            yield chunk.subarray(0, bytesRead);
            remaining -= bytesRead;
          }
        } finally {
          await handle.close();
        }
      }
      yield padding(size);
    }
    yield new Uint8Array(BLOCK * 2);
  })();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await iterator.return(undefined);
    },
  });
}
