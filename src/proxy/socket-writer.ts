import type { Socket } from "bun";

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
   * Writes `bytes`, or an ASCII string as its bytes (no buffer to allocate: Bun encodes it into the
   * socket's own); false when some of them wait for the drain.
   */
  write(bytes: Uint8Array | string): boolean {
    if (this.waiting.length) {
      this.waiting.push(typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes);
      return false;
    }
    const written = this.socket.write(bytes);
    const length = typeof bytes === "string" ? bytes.length : bytes.byteLength;
    if (written === length) return true;
    const rest = typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes;
    this.waiting.push(written > 0 ? rest.subarray(written) : rest);
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

/**
 * A head as written: its text when it is ASCII (Bun writes that without a buffer of ours), else its
 * latin1 bytes. What the proxy adds to a head is ASCII; the parser says whether the rest is.
 */
export const headForSocket = (text: string, ascii: boolean): string | Uint8Array => (ascii ? text : Buffer.from(text, "latin1"));

/** `second` after `first` (none or empty: `second` itself, not a copy). */
export const joined = (first: Uint8Array | null, second: Uint8Array): Uint8Array => (first?.byteLength ? Buffer.concat([first, second]) : second);
