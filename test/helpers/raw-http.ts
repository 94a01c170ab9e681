// HTTP/1.1 by hand over a TCP socket, for tests that need what fetch hides: a request head sent
// byte by byte, malformed framing, a connection held open or left idle, a chosen loopback source
// address (127.0.0.x is another client), reading paused to make backpressure, and the exact bytes
// of an answer (no decompression, no redirects followed). Also over TLS, with the name asked for
// (SNI) chosen by the test and the certificate the server presented.
import net from "node:net";
import tls from "node:tls";

export interface RawResponse {
  status: number;
  headers: Headers;
  /** The body as framed by Content-Length, chunked coding or the connection's close; empty when streamed to `onBody`. */
  body: Buffer;
  text(): string;
  json(): any;
}

export interface ReadOptions {
  /** Each body piece as it arrives; the response's `body` then stays empty. */
  onBody?: (piece: Buffer) => void;
  /** The whole response must be read by then. Default 10 s. */
  timeoutMs?: number;
  /** HEAD answers carry no body. */
  method?: string;
}

export class RawConnection {
  /** Resolves when the connection closes, whichever side closed it. */
  readonly closed: Promise<void>;
  isClosed = false;
  private buffer: Buffer = Buffer.alloc(0);
  private wake: (() => void) | null = null;

  private constructor(readonly socket: net.Socket) {
    socket.on("data", (piece: Buffer) => {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, piece]) : piece;
      this.notify();
    });
    // A reset or a write after the peer closed: the connection is over, which is what tests look for.
    socket.on("error", () => {});
    this.closed = new Promise((resolve) =>
      socket.once("close", () => {
        this.isClosed = true;
        this.notify();
        resolve();
      }),
    );
  }

  /** Connects to 127.0.0.1:`port`, from `localAddress` when given. */
  static open(port: number, localAddress?: string): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: "127.0.0.1", port, localAddress });
      socket.once("connect", () => {
        socket.off("error", reject);
        resolve(new RawConnection(socket));
      });
      socket.once("error", reject);
    });
  }

  /**
   * Connects over TLS to 127.0.0.1:`port` asking for `serverName` (SNI), trusting only `ca`; rejects
   * when the certificate does not verify for that name.
   */
  static openTls(port: number, serverName: string, ca: string): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect({ host: "127.0.0.1", port, servername: serverName, ca });
      socket.once("secureConnect", () => {
        socket.off("error", reject);
        resolve(new RawConnection(socket));
      });
      socket.once("error", reject);
    });
  }

  /** The certificate the server presented, on a TLS connection. */
  get peerCertificate(): tls.PeerCertificate {
    return (this.socket as tls.TLSSocket).getPeerCertificate();
  }

  /** Writes, waiting for the socket to drain when its buffer is full. Rejects once the connection is closed. */
  async write(data: string | Uint8Array): Promise<void> {
    if (this.isClosed) throw new Error("connection closed");
    if (this.socket.write(data)) return;
    await new Promise<void>((resolve, reject) => {
      const onDrain = () => {
        this.socket.off("close", onClose);
        resolve();
      };
      const onClose = () => {
        this.socket.off("drain", onDrain);
        reject(new Error("connection closed while writing"));
      };
      this.socket.once("drain", onDrain);
      this.socket.once("close", onClose);
    });
  }

  /** Stops reading from the socket: the kernel's buffers fill and the sender is held back. */
  pause() {
    this.socket.pause();
  }

  resume() {
    this.socket.resume();
  }

  close() {
    this.socket.destroy();
  }

  /** How many ms from now the connection closed (0 if it was closed already), or null if it is still open after `timeoutMs`. */
  async closedWithin(timeoutMs: number): Promise<number | null> {
    const from = performance.now();
    return Promise.race([this.closed.then(() => performance.now() - from), Bun.sleep(timeoutMs).then(() => null)]);
  }

  /** Whatever arrived and was not read as a response, as text. */
  unread(): string {
    return this.buffer.toString("latin1");
  }

  /** Reads one response (skipping 1xx ones); throws if the connection closes first or time runs out. */
  async readResponse(options: ReadOptions = {}): Promise<RawResponse> {
    const deadline = performance.now() + (options.timeoutMs ?? 10_000);
    for (;;) {
      let headEnd: number;
      while ((headEnd = this.buffer.indexOf("\r\n\r\n")) < 0) await this.more(deadline, "a response head");
      const [statusLine = "", ...lines] = this.buffer.subarray(0, headEnd).toString("latin1").split("\r\n");
      this.buffer = this.buffer.subarray(headEnd + 4);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
      if (!status) throw new Error(`not an HTTP response: ${JSON.stringify(statusLine)}`);
      const headers = new Headers();
      for (const line of lines) headers.append(line.slice(0, line.indexOf(":")).trim(), line.slice(line.indexOf(":") + 1).trim());
      if (status < 200) continue;

      const pieces: Buffer[] = [];
      const sink = options.onBody ?? ((piece: Buffer) => pieces.push(piece));
      const bodiless = options.method?.toUpperCase() === "HEAD" || status === 204 || status === 304;
      if (bodiless) {
        // nothing to read
      } else if (headers.get("transfer-encoding")?.toLowerCase() === "chunked") {
        await this.readChunked(sink, deadline);
      } else if (headers.has("content-length")) {
        await this.readExactly(Number(headers.get("content-length")), sink, deadline);
      } else {
        for (;;) {
          if (this.buffer.length) sink(this.take(this.buffer.length));
          if (this.isClosed) break;
          await this.more(deadline, "the end of a body framed by the connection's close");
        }
      }
      const body = Buffer.concat(pieces);
      return { status, headers, body, text: () => body.toString("utf8"), json: () => JSON.parse(body.toString("utf8")) };
    }
  }

  private async readChunked(sink: (piece: Buffer) => void, deadline: number) {
    for (;;) {
      const sizeLine = await this.readLine(deadline);
      const size = parseInt(sizeLine.split(";")[0]!, 16);
      if (Number.isNaN(size)) throw new Error(`bad chunk size line: ${JSON.stringify(sizeLine)}`);
      if (size === 0) {
        while ((await this.readLine(deadline)) !== "");
        return;
      }
      await this.readExactly(size, sink, deadline);
      if ((await this.readLine(deadline)) !== "") throw new Error("chunk not followed by CRLF");
    }
  }

  private async readLine(deadline: number): Promise<string> {
    let end: number;
    while ((end = this.buffer.indexOf("\r\n")) < 0) await this.more(deadline, "a chunk line");
    const line = this.buffer.subarray(0, end).toString("latin1");
    this.buffer = this.buffer.subarray(end + 2);
    return line;
  }

  private async readExactly(length: number, sink: (piece: Buffer) => void, deadline: number) {
    let left = length;
    while (left > 0) {
      if (this.buffer.length === 0) await this.more(deadline, `${left} more body bytes of ${length}`);
      const piece = this.take(Math.min(left, this.buffer.length));
      left -= piece.length;
      sink(piece);
    }
  }

  private take(length: number): Buffer {
    const piece = this.buffer.subarray(0, length);
    this.buffer = this.buffer.subarray(length);
    return piece;
  }

  private notify() {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** Waits for more bytes; throws when the connection is closed or the deadline passes. */
  private async more(deadline: number, waitingFor: string): Promise<void> {
    if (this.isClosed) throw new Error(`connection closed while waiting for ${waitingFor}; unread: ${JSON.stringify(this.unread().slice(0, 300))}`);
    const left = deadline - performance.now();
    let timer: Timer | undefined;
    const arrived = await Promise.race([
      new Promise<boolean>((resolve) => (this.wake = () => resolve(true))),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, left)))),
    ]);
    clearTimeout(timer);
    if (!arrived) throw new Error(`timed out waiting for ${waitingFor}; unread: ${JSON.stringify(this.unread().slice(0, 300))}`);
  }
}

/** A request head, Host first; `body` adds its Content-Length unless a framing header is given. */
export function requestHead(method: string, path: string, host: string, headers: Record<string, string> = {}, bodyLength?: number): string {
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${host}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  const framed = Object.keys(headers).some((name) => /^(content-length|transfer-encoding)$/i.test(name));
  if (bodyLength !== undefined && !framed) lines.push(`Content-Length: ${bodyLength}`);
  return lines.join("\r\n") + "\r\n\r\n";
}

/** One request on a connection of its own (closed after it), from `localAddress` when given. */
export async function rawRequest(
  port: number,
  host: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string; timeoutMs?: number } = {},
): Promise<RawResponse> {
  const connection = await RawConnection.open(port, options.localAddress);
  try {
    const method = options.method ?? "GET";
    const headers = { Connection: "close", ...options.headers };
    await connection.write(requestHead(method, path, host, headers, options.body === undefined ? undefined : Buffer.byteLength(options.body)) + (options.body ?? ""));
    return await connection.readResponse({ timeoutMs: options.timeoutMs, method });
  } finally {
    connection.close();
  }
}
