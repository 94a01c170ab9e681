// Docker multiplexes a non-TTY container's stdout and stderr into one stream of frames: an
// 8-byte header (stream type, 3 zero bytes, big-endian payload length) then the payload.
// These pure helpers split such a stream into frames and the frames into clean text lines.

export type StreamName = "stdout" | "stderr";

export interface Frame {
  stream: StreamName;
  payload: Uint8Array;
}

export interface LogLine {
  stream: StreamName;
  /** RFC 3339 time the engine stamped the line with, when timestamps were asked for. */
  timestamp: string | null;
  text: string;
}

const HEADER_BYTES = 8;

/** Incremental frame parser: push chunks as they arrive, get back the complete frames. */
export class FrameDemuxer {
  private pending = new Uint8Array(0);

  push(chunk: Uint8Array): Frame[] {
    const buffer = this.pending.length ? concat(this.pending, chunk) : chunk;
    const frames: Frame[] = [];
    let offset = 0;
    while (buffer.length - offset >= HEADER_BYTES) {
      const type = buffer[offset]!;
      const size = new DataView(buffer.buffer, buffer.byteOffset + offset + 4, 4).getUint32(0);
      if (buffer.length - offset - HEADER_BYTES < size) break;
      const payload = buffer.subarray(offset + HEADER_BYTES, offset + HEADER_BYTES + size);
      // Type 0 is stdin echoed back, 1 stdout, 2 stderr; stdin is never attached here.
      frames.push({ stream: type === 2 ? "stderr" : "stdout", payload });
      offset += HEADER_BYTES + size;
    }
    this.pending = buffer.slice(offset);
    return frames;
  }
}

/** Turns frames into whole lines per stream, keeping a partial last line until it completes. */
export class LineSplitter {
  private readonly partial: Record<StreamName, string> = { stdout: "", stderr: "" };
  private readonly decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };

  constructor(private readonly withTimestamps: boolean) {}

  push(frame: Frame): LogLine[] {
    const text = this.partial[frame.stream] + this.decoders[frame.stream].decode(frame.payload, { stream: true });
    const pieces = text.split("\n");
    this.partial[frame.stream] = pieces.pop()!;
    return pieces.map((piece) => this.toLine(frame.stream, piece));
  }

  flush(): LogLine[] {
    const lines: LogLine[] = [];
    for (const stream of ["stdout", "stderr"] as const) {
      if (this.partial[stream]) lines.push(this.toLine(stream, this.partial[stream]));
      this.partial[stream] = "";
    }
    return lines;
  }

  private toLine(stream: StreamName, raw: string): LogLine {
    const clean = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (!this.withTimestamps) return { stream, timestamp: null, text: clean };
    const space = clean.indexOf(" ");
    return space > 0
      ? { stream, timestamp: clean.slice(0, space), text: clean.slice(space + 1) }
      : { stream, timestamp: null, text: clean };
  }
}

export function demuxToLines(buffer: Uint8Array, withTimestamps: boolean): LogLine[] {
  const splitter = new LineSplitter(withTimestamps);
  const lines = new FrameDemuxer().push(buffer).flatMap((frame) => splitter.push(frame));
  return [...lines, ...splitter.flush()];
}

export function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a, 0);
  joined.set(b, a.length);
  return joined;
}
