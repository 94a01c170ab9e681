// Where a message body ends, followed piece by piece as the proxy relays it: by its length, its
// chunked framing (chunk sizes, extensions, trailers) or the connection's close. Malformed chunked
// framing throws: the proxy then drops both connections (src/proxy/exchange.ts).
import type { BodyFraming } from "./http1";

const MAX_CHUNK_LINE = 4096;
const CHUNK_SIZE = /^([0-9a-fA-F]{1,12})[ \t]*(;[^\x00-\x08\x0a-\x1f\x7f]*)?$/;

/**
 * Follows a chunked body as it passes, to find its end: chunk-size lines (with extensions), data,
 * CRLFs and trailers. The bytes themselves are relayed untouched by the caller.
 */
export class ChunkedBody {
  private state: "size" | "data" | "data-end" | "trailer" | "done" = "size";
  private remaining = 0;
  /** A partial size or trailer line carried over from the previous piece. */
  private line = "";

  get done(): boolean {
    return this.state === "done";
  }

  /**
   * Reads `data` from `offset` and returns where the body ends in it (the index after its last
   * byte), or -1 when the body goes on past `data`. Throws on malformed framing.
   */
  feed(data: Uint8Array, offset = 0): number {
    let at = offset;
    while (at < data.byteLength) {
      if (this.state === "data") {
        const take = Math.min(this.remaining, data.byteLength - at);
        at += take;
        this.remaining -= take;
        if (this.remaining === 0) this.state = "data-end";
        continue;
      }
      const lf = data.indexOf(0x0a, at);
      const end = lf < 0 ? data.byteLength : lf + 1;
      if (this.line.length + end - at > MAX_CHUNK_LINE) throw new Error("chunk line too long");
      for (let i = at; i < end; i++) this.line += String.fromCharCode(data[i]!);
      at = end;
      if (lf < 0) return -1;
      if (!this.line.endsWith("\r\n")) throw new Error("a chunk line not ended by CRLF");
      const line = this.line.slice(0, -2);
      this.line = "";
      if (this.state === "data-end") {
        if (line !== "") throw new Error("chunk data longer than its size");
        this.state = "size";
      } else if (this.state === "size") {
        const size = CHUNK_SIZE.exec(line);
        if (!size) throw new Error(`invalid chunk size ${JSON.stringify(line.slice(0, 40))}`);
        this.remaining = Number.parseInt(size[1]!, 16);
        this.state = this.remaining === 0 ? "trailer" : "data";
      } else if (this.state === "trailer") {
        if (line === "") {
          this.state = "done";
          return at;
        }
        if (line.charCodeAt(0) === 0x20 || line.charCodeAt(0) === 0x09 || line.indexOf(":") <= 0) throw new Error("malformed trailer field");
      }
    }
    return this.state === "done" ? at : -1;
  }
}

/**
 * Follows any body framing: where the body ends in each piece that passes. `close` never ends
 * (its end is the connection's).
 */
export class BodyTracker {
  private remaining: number;
  private readonly chunked: ChunkedBody | null;
  /** Body bytes seen so far (chunk framing included). */
  bytes = 0;

  constructor(readonly framing: BodyFraming) {
    this.remaining = framing.kind === "length" ? framing.length : 0;
    this.chunked = framing.kind === "chunked" ? new ChunkedBody() : null;
  }

  get done(): boolean {
    if (this.framing.kind === "none") return true;
    if (this.framing.kind === "length") return this.remaining === 0;
    if (this.chunked) return this.chunked.done;
    return false;
  }

  /** Where the body ends in `data` from `offset` (index after its last byte), or -1 if it goes on. */
  feed(data: Uint8Array, offset = 0): number {
    if (this.done) return offset;
    let end: number;
    if (this.framing.kind === "length") {
      const take = Math.min(this.remaining, data.byteLength - offset);
      this.remaining -= take;
      end = this.remaining === 0 ? offset + take : -1;
    } else if (this.chunked) {
      end = this.chunked.feed(data, offset);
    } else {
      end = -1;
    }
    this.bytes += (end < 0 ? data.byteLength : end) - offset;
    return end;
  }
}
