import type { Socket } from "bun";

/**
 * The head the proxy is about to send, built in one buffer for all sockets: the byte runs it keeps
 * of the head it received, copied, and the lines it adds, written as latin1. A head is built and
 * written in one go (nothing else runs in between), so one buffer serves every connection; what a
 * socket does not take is copied out to wait. Strings joined and handed to the socket cost as much
 * as all the parsing of a proxied request, and a buffer allocated per answer a tenth of its time.
 */
export class OutgoingHead {
  private buffer = Buffer.allocUnsafe(32 * 1024);
  /** Bytes of the head so far. */
  length = 0;

  /** Starts a new head (what was built before is dropped). */
  begin(): this {
    this.length = 0;
    return this;
  }

  /** Appends `source` from `start` to `end`. */
  bytes(source: Uint8Array, start: number, end: number): this {
    this.reserve(end - start);
    this.length += Buffer.prototype.copy.call(source, this.buffer, this.length, start, end);
    return this;
  }

  /**
   * Appends text as latin1, one byte per character. It must be latin1 (no character above U+00FF,
   * which would lose its high byte): parts of heads as read, or ASCII.
   */
  text(latin1: string): this {
    this.reserve(latin1.length);
    this.length += this.buffer.write(latin1, this.length, "latin1");
    return this;
  }

  /** Appends CRLF. */
  crlf(): this {
    this.reserve(2);
    this.buffer[this.length++] = 0x0d;
    this.buffer[this.length++] = 0x0a;
    return this;
  }

  /** The head built, as latin1 text (for tests). */
  toString(): string {
    return this.buffer.toString("latin1", 0, this.length);
  }

  /** Writes what was built to the socket; what it did not take is returned, copied, or null when it took all. */
  writeTo(socket: Socket<unknown>): Uint8Array | null {
    const length = this.length;
    const written = Math.max(0, socket.write(this.buffer, 0, length));
    return written < length ? this.copied(written) : null;
  }

  /** What was built from `from` on, copied out of the shared buffer. */
  copied(from = 0): Uint8Array {
    return Uint8Array.prototype.slice.call(this.buffer, from, this.length);
  }

  /** Room for `more` bytes; the buffer grows for a head larger than any before (heads are bounded). */
  private reserve(more: number) {
    if (this.length + more <= this.buffer.byteLength) return;
    const larger = Buffer.allocUnsafe(Math.max(this.buffer.byteLength * 2, this.length + more));
    this.buffer.copy(larger, 0, 0, this.length);
    this.buffer = larger;
  }
}

/** The one head being built at a time. */
export const outgoingHead = new OutgoingHead();

/**
 * Writes to a socket and keeps what it did not take until its drain. The relay pauses the other
 * side while anything waits here, so this holds at most about one piece per direction.
 */
export class SocketWriter {
  private waiting: Uint8Array[] = [];

  constructor(private readonly socket: Socket<unknown>) {}

  /** Something waits for the socket's drain. */
  get blocked(): boolean {
    return this.waiting.length > 0;
  }

  /**
   * Writes `bytes`, or text as latin1 (the proxy's own small answers, ASCII); false when some of
   * them wait for the drain.
   */
  write(bytes: Uint8Array | string): boolean {
    if (typeof bytes === "string") return this.writeHead(outgoingHead.begin().text(bytes));
    if (this.waiting.length) {
      this.waiting.push(bytes);
      return false;
    }
    const written = this.socket.write(bytes);
    if (written === bytes.byteLength) return true;
    this.waiting.push(written > 0 ? bytes.subarray(written) : bytes);
    return false;
  }

  /** Writes the head just built (bytes may follow it there); false when some of it waits for the drain. */
  writeHead(head: OutgoingHead): boolean {
    if (this.waiting.length) {
      this.waiting.push(head.copied());
      return false;
    }
    const rest = head.writeTo(this.socket);
    if (!rest) return true;
    this.waiting.push(rest);
    return false;
  }

  /** On the socket's drain: writes what waited; true once nothing waits. */
  flush(): boolean {
    while (this.waiting.length) {
      const next = this.waiting[0]!;
      const written = this.socket.write(next);
      if (written < next.byteLength) {
        if (written > 0) this.waiting[0] = next.subarray(written);
        return false;
      }
      this.waiting.shift();
    }
    return true;
  }

  /** Forgets what waits (the socket is gone). */
  clear() {
    this.waiting = [];
  }
}

/** `second` after `first` (none or empty: `second` itself, not a copy). */
export const joined = (first: Uint8Array | null, second: Uint8Array): Uint8Array => (first?.byteLength ? Buffer.concat([first, second]) : second);
