import type { Socket } from "bun";

/**
 * Where a head is encoded, with the first body bytes after it for one write (so one packet for a
 * small answer). One for all sockets: a write copies what the socket takes, and what it does not
 * take is copied out to wait. A buffer allocated per answer cost a tenth of a proxied request's CPU
 * time, and a string handed to the socket about as much.
 */
const scratch = Buffer.allocUnsafe(32 * 1024);
const NO_BYTES = new Uint8Array(0);

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
   * Writes `bytes`, or a head's text as latin1 (one byte per character, as it was read); false when
   * some of them wait for the drain. Text must be latin1 (no character above U+00FF, which would
   * lose its high byte): heads as read, with ASCII added. The proxy's own pages are bytes.
   */
  write(bytes: Uint8Array | string): boolean {
    if (typeof bytes === "string") return this.writeJoined(bytes, NO_BYTES, 0, 0);
    if (this.waiting.length) {
      this.waiting.push(bytes);
      return false;
    }
    const written = this.socket.write(bytes);
    if (written === bytes.byteLength) return true;
    this.waiting.push(written > 0 ? bytes.subarray(written) : bytes);
    return false;
  }

  /**
   * A head (latin1 text) and the body bytes of `data` from `start` to `end` after it, in one write
   * when they fit the scratch buffer.
   */
  writeJoined(head: string, data: Uint8Array, start: number, end: number): boolean {
    const length = head.length + end - start;
    if (this.waiting.length || length > scratch.byteLength) {
      const headSent = this.write(Buffer.from(head, "latin1"));
      return (end === start || this.write(data.subarray(start, end))) && headSent;
    }
    scratch.write(head, 0, "latin1");
    if (end > start) (data as Buffer).copy(scratch, head.length, start, end);
    const written = Math.max(0, this.socket.write(scratch, 0, length));
    if (written === length) return true;
    this.waiting.push(Uint8Array.prototype.slice.call(scratch, written, length));
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
