// Build logs: one file per build, appended as the build produces output, read by byte range, and
// followable live by any number of readers while the build runs. A file never grows much past
// its cap: once output passes it, the first part is kept, then a marker line saying how many
// bytes were dropped, then the most recent output. Lines the platform writes start with `==> `;
// no text written here can forge one (continuation lines are indented, program output starting
// with `==>` gets a leading space). Each file's size is kept as it is written, for the disk quota.
import { closeSync, existsSync, fstatSync, openSync, readSync, renameSync, rmSync, statSync, writeFileSync, appendFileSync, truncateSync } from "node:fs";
import { lstat } from "node:fs/promises";
import { entryCharge } from "../quotas/usage";
import { isDiskFull } from "../http/errors";

type Listener = (text: string | null) => void;

export const DEFAULT_LOG_MAX_BYTES = 5 * 1024 * 1024;
/** What GET …/builds/:buildId returns when no range is asked for: the end of the log. */
export const DEFAULT_RANGE_BYTES = 256 * 1024;
export const MAX_RANGE_BYTES = 1024 * 1024;
/** Bytes a live reader may lag behind before the output in between is skipped for it. */
const MAX_FOLLOWER_BACKLOG = 1024 * 1024;
const FOLLOW_CHUNK = 64 * 1024;
const DROPPED_MARKER = /\n==> (\d+) bytes of build output dropped/;

export interface LogRange {
  text: string;
  /** Byte offset of `text` in the file, and of the byte after it. */
  offset: number;
  nextOffset: number;
  /** Size of the whole file now. */
  totalBytes: number;
  /** Build output dropped by the cap (0: the log is complete). */
  droppedBytes: number;
}

interface FileState {
  bytes: number;
  /** Length of the kept first part once the cap was passed; the marker and the tail follow it. */
  headBytes: number | null;
  /** Where the tail starts (after the marker). */
  tailStart: number;
  dropped: number;
}

/** A platform line: one line per entry, whatever the text holds. */
export function logLine(entry: string): string {
  const lines = entry.split(/\r\n|\r|\n/);
  while (lines.length > 1 && lines.at(-1) === "") lines.pop();
  return `${lines.join("\n    ")}\n`;
}

/** Program output (whole lines): carriage returns become line ends, and it can't start a platform line. */
export function outputLines(text: string): string {
  const normalized = text.replace(/\r\n?/g, "\n").replace(/^==>/gm, " ==>");
  return normalized.endsWith("\n") ? normalized : `${normalized}\n`;
}

export class BuildLogs {
  /** Builds queued or running, with the readers following each. */
  private readonly live = new Map<string, Set<Listener>>();
  private readonly files = new Map<string, FileState>();
  /** Bytes of each build's log file, per app (null: no file): from the writes, or measured once. */
  private readonly sizes = new Map<string, Map<string, number | null>>();
  private readonly headLimit: number;
  private readonly tailKeep: number;

  constructor(
    private readonly fileOf: (appId: string, buildId: string) => string,
    private readonly maxBytes = DEFAULT_LOG_MAX_BYTES,
  ) {
    this.headLimit = Math.min(16 * 1024, Math.floor(maxBytes / 4));
    this.tailKeep = Math.floor(maxBytes / 2);
  }

  /** From now until `finish`, readers of this build's log wait for more lines. */
  open(buildId: string) {
    if (!this.live.has(buildId)) this.live.set(buildId, new Set());
  }

  /** A line of the platform's own (`==> …`). */
  append(appId: string, buildId: string, entry: string) {
    this.write(appId, buildId, logLine(entry));
  }

  /** Whole lines of what the build's programs printed. */
  appendOutput(appId: string, buildId: string, text: string) {
    if (text) this.write(appId, buildId, outputLines(text));
  }

  private write(appId: string, buildId: string, text: string) {
    const file = this.fileOf(appId, buildId);
    try {
      const state = this.stateOf(buildId, file);
      const bytes = Buffer.byteLength(text);
      if (state.bytes + bytes > this.maxBytes) this.rewriteWithTail(file, state, Buffer.from(text));
      else {
        try {
          appendFileSync(file, text, { mode: 0o600 });
        } catch (error) {
          // Part of the text may have been written before the disk filled up: not a cut line in the log.
          // Shrinking needs no space; when even that fails, the size is measured again next time.
          try {
            truncateSync(file, state.bytes);
          } catch {}
          throw error;
        }
        state.bytes += bytes;
      }
      this.sizesOf(appId).set(buildId, state.bytes);
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      // The log is not worth failing the build (or leaving it unrecorded) over: the text is dropped
      // from the file, live readers still get it, and the file's size is measured again next time.
      this.files.delete(buildId);
      this.sizesOf(appId).delete(buildId);
      console.warn(`[apps] build ${buildId}: ${Buffer.byteLength(text)} bytes of its log dropped, the disk is full`);
    }
    for (const listener of this.live.get(buildId) ?? []) listener(text);
  }

  private stateOf(buildId: string, file: string): FileState {
    let state = this.files.get(buildId);
    if (!state) {
      const bytes = existsSync(file) ? statSync(file).size : 0;
      state = { bytes, headBytes: null, tailStart: 0, dropped: 0 };
      this.files.set(buildId, state);
    }
    return state;
  }

  /** head + marker + the last `tailKeep` bytes of (tail so far + `incoming`), written whole and renamed into place. */
  private rewriteWithTail(file: string, state: FileState, incoming: Buffer) {
    const fd = existsSync(file) ? openSync(file, "r") : null;
    try {
      if (state.headBytes === null) {
        const head = readAt(fd, 0, Math.min(this.headLimit, state.bytes));
        const lastNewline = head.lastIndexOf(10);
        state.headBytes = lastNewline >= 0 ? lastNewline + 1 : head.length;
        state.tailStart = state.headBytes;
      }
      const fromFile = Math.max(0, this.tailKeep - incoming.length);
      const fileTailStart = Math.max(state.tailStart, state.bytes - fromFile);
      const region = Buffer.concat([readAt(fd, fileTailStart, state.bytes - fileTailStart), incoming]);
      let keepFrom = Math.max(0, region.length - this.tailKeep);
      if (keepFrom > 0 || fileTailStart > state.tailStart) {
        // Start the kept part on a line of its own when one begins soon enough.
        const newline = region.indexOf(10, keepFrom > 0 ? keepFrom - 1 : 0);
        if (newline >= 0 && newline - keepFrom < 4096) keepFrom = newline + 1;
      }
      state.dropped += fileTailStart - state.tailStart + keepFrom;
      const head = readAt(fd, 0, state.headBytes);
      const lineEnd = head.length > 0 && head[head.length - 1] !== 10 ? "\n" : "";
      const marker = Buffer.from(`${lineEnd}==> ${state.dropped} bytes of build output dropped here (the log keeps its first and last part)\n`);
      const tail = region.subarray(keepFrom);
      const temporary = `${file}.rewrite`;
      try {
        writeFileSync(temporary, Buffer.concat([head, marker, tail]), { mode: 0o600 });
        renameSync(temporary, file);
      } catch (error) {
        rmSync(temporary, { force: true });
        throw error;
      }
      state.tailStart = head.length + marker.length;
      state.bytes = state.tailStart + tail.length;
    } finally {
      if (fd !== null) closeSync(fd);
    }
  }

  /**
   * Bytes `offset`… of the log, at most `limit`; without `offset`, the last `limit` bytes starting
   * at a line. Never reads more than `limit` bytes (plus the first part, to find the marker).
   */
  read(appId: string, buildId: string, range: { offset?: number; limit?: number } = {}): LogRange {
    const limit = Math.min(range.limit ?? DEFAULT_RANGE_BYTES, MAX_RANGE_BYTES);
    const file = this.fileOf(appId, buildId);
    if (!existsSync(file)) return { text: "", offset: 0, nextOffset: 0, totalBytes: 0, droppedBytes: 0 };
    const fd = openSync(file, "r");
    try {
      const totalBytes = fstatSync(fd).size;
      let offset = Math.min(range.offset ?? Math.max(0, totalBytes - limit), totalBytes);
      let bytes = readAt(fd, offset, Math.min(limit, totalBytes - offset));
      if (range.offset === undefined && offset > 0) {
        const newline = bytes.indexOf(10);
        if (newline >= 0) {
          bytes = bytes.subarray(newline + 1);
          offset += newline + 1;
        }
      }
      // Whole characters only: skip a cut one at the start, leave a cut one at the end for the next range.
      let start = 0;
      while (start < bytes.length && start < 3 && (bytes[start]! & 0xc0) === 0x80) start++;
      const end = completeUtf8End(bytes);
      const text = bytes.subarray(start, end).toString("utf8");
      const head = readAt(fd, 0, Math.min(totalBytes, this.headLimit + 200)).toString("utf8");
      const dropped = DROPPED_MARKER.exec(`\n${head}`);
      return { text, offset: offset + start, nextOffset: offset + end, totalBytes, droppedBytes: dropped ? Number(dropped[1]) : 0 };
    } finally {
      closeSync(fd);
    }
  }

  /**
   * What the logs of these builds take on disk, each file counted as entryCharge. A file not
   * written since the platform started is measured once; after that its size is known, so asking
   * costs no file system access.
   */
  async diskBytes(logs: { appId: string; buildId: string }[]): Promise<number> {
    const sizes = await Promise.all(logs.map(({ appId, buildId }) => this.sizeOf(appId, buildId)));
    return sizes.reduce<number>((sum, size) => sum + (size === null ? 0 : entryCharge(size)), 0);
  }

  private async sizeOf(appId: string, buildId: string): Promise<number | null> {
    const known = this.sizes.get(appId)?.get(buildId);
    if (known !== undefined) return known;
    const measured = await lstat(this.fileOf(appId, buildId)).then((stats) => stats.size, () => null);
    const sizes = this.sizesOf(appId);
    // A write while it was measured knows better.
    if (!sizes.has(buildId)) sizes.set(buildId, measured);
    return sizes.get(buildId)!;
  }

  private sizesOf(appId: string): Map<string, number | null> {
    let sizes = this.sizes.get(appId);
    if (!sizes) this.sizes.set(appId, (sizes = new Map()));
    return sizes;
  }

  /** Deletes a finished build's log (retention). */
  remove(appId: string, buildId: string) {
    rmSync(this.fileOf(appId, buildId), { force: true });
    this.sizes.get(appId)?.delete(buildId);
  }

  /** The app and its logs are gone: their sizes are no longer kept. */
  forgetApp(appId: string) {
    this.sizes.delete(appId);
  }

  /** The build is over: live readers get the end of their stream. */
  finish(buildId: string) {
    for (const listener of this.live.get(buildId) ?? []) listener(null);
    this.live.delete(buildId);
    this.files.delete(buildId);
  }

  /**
   * What was logged so far, read from the file in chunks as the reader asks, then each new piece
   * until the build ends. A reader more than MAX_FOLLOWER_BACKLOG behind skips the output between.
   */
  follow(appId: string, buildId: string, signal?: AbortSignal): ReadableStream<Uint8Array> {
    const file = this.fileOf(appId, buildId);
    // Opened now: a rewrite renames a new file into place, and this one keeps what was read so far.
    let fd: number | null = existsSync(file) ? openSync(file, "r") : null;
    const size = fd === null ? 0 : fstatSync(fd).size;
    let position = 0;
    let backlog: string[] = [];
    let backlogBytes = 0;
    let skipped = 0;
    const listeners = this.live.get(buildId);
    let ended = !listeners;
    let wake: (() => void) | null = null;
    const listener: Listener = (text) => {
      if (text === null) ended = true;
      else if (backlogBytes + text.length > MAX_FOLLOWER_BACKLOG) {
        skipped += backlogBytes + text.length;
        backlog = [];
        backlogBytes = 0;
      } else {
        backlog.push(text);
        backlogBytes += text.length;
      }
      wake?.();
    };
    const stop = () => {
      listeners?.delete(listener);
      if (fd !== null) closeSync(fd);
      fd = null;
      ended = true;
      wake?.();
    };
    listeners?.add(listener);
    signal?.addEventListener("abort", stop, { once: true });
    const encoder = new TextEncoder();
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        for (;;) {
          if (fd !== null && position < size) {
            const chunk = readAt(fd, position, Math.min(FOLLOW_CHUNK, size - position));
            position += chunk.length;
            if (chunk.length === 0) position = size;
            return controller.enqueue(new Uint8Array(chunk));
          }
          if (fd !== null) {
            closeSync(fd);
            fd = null;
          }
          if (skipped > 0) {
            controller.enqueue(encoder.encode(`==> ${skipped} bytes of live output skipped: this reader fell behind\n`));
            skipped = 0;
            return;
          }
          if (backlog.length > 0) {
            const text = backlog.join("");
            backlog = [];
            backlogBytes = 0;
            return controller.enqueue(encoder.encode(text));
          }
          if (ended) {
            stop();
            return controller.close();
          }
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
        }
      },
      cancel: stop,
    });
  }
}

function readAt(fd: number | null, position: number, length: number): Buffer {
  if (fd === null || length <= 0) return Buffer.alloc(0);
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const read = readSync(fd, buffer, filled, length - filled, position + filled);
    if (read === 0) break;
    filled += read;
  }
  return buffer.subarray(0, filled);
}

/** Length of `bytes` without a UTF-8 sequence cut off at its end. */
function completeUtf8End(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: look further back
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needed > back ? bytes.length - back : bytes.length;
  }
  return bytes.length;
}
