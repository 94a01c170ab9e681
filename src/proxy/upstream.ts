// How the public proxy sends a request to an app's container and gets its answer back.
//
// The default strategy, "socket-pool", is an HTTP/1.1 client on Bun.connect TCP sockets with a
// keep-alive pool per upstream: Bun's fetch keeps only a small pool of upstream sockets, so under
// many concurrent clients requests queued behind it (scripts/bench/proxy.ts measures this). The
// client is deliberately strict about response framing: a response is framed by Content-Length,
// by chunked Transfer-Encoding, or by the connection's close, and anything ambiguous (both
// headers, differing Content-Lengths, a transfer coding other than chunked, obsolete line folding)
// is refused before the response is passed on, and its connection is never reused.
//
// Bodies stream both ways with backpressure (the upstream socket is paused while the client reads
// slowly), gzip and any other content coding pass through untouched, and redirects are returned,
// not followed. "fetch" and "node-http" are the alternatives the benchmark compares.
import type { Socket } from "bun";
import http from "node:http";
import { Readable } from "node:stream";
import type { Upstream } from "./routes";

export type { Upstream } from "./routes";
import { HOP_BY_HOP as HOP_BY_HOP_HEADERS, withoutHopByHop } from "./forwarding";

export interface ForwardRequest {
  method: string;
  /** Path and query, e.g. `/cart?x=1`. */
  pathAndQuery: string;
  /** Headers as the upstream should see them (Host, X-Forwarded-*): prepared by the caller. Hop-by-hop ones are dropped here. */
  headers: Headers;
  body: ReadableStream<Uint8Array> | null;
}

export interface Forwarder {
  /**
   * Sends the request (method, path+query, headers already prepared by the caller, streaming body)
   * to the upstream and returns its response with streaming body. Throws UpstreamUnavailable when it
   * cannot connect / the connection fails before a response head.
   */
  forward(upstream: Upstream, request: ForwardRequest, signal?: AbortSignal): Promise<Response>;
  close(): void;
}

export type ForwarderStrategy = "socket-pool" | "fetch" | "node-http";

export interface ForwarderOptions {
  /** Default "socket-pool". */
  strategy?: ForwarderStrategy;
  /** Most connections open to one upstream at once; requests past it wait their turn. Default 1024. */
  maxSocketsPerUpstream?: number;
  /** Most idle keep-alive connections kept per upstream. Default 256. */
  maxIdlePerUpstream?: number;
  /** An idle pooled connection is closed after this long. Default 4 s (Node's servers close idle ones after 5 s). */
  idleTimeoutMs?: number;
  /** Connecting longer than this fails with UpstreamUnavailable. Default 10 s. */
  connectTimeoutMs?: number;
  /** Largest response head (status line and headers). Default 64 KiB. */
  maxHeadBytes?: number;
}

/** The upstream could not be reached, or the connection failed or broke the protocol before a response head. */
export class UpstreamUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "UpstreamUnavailable";
  }
}

/** The upstream's response broke HTTP/1.1 framing (a smuggling risk): refused, its connection closed. */
export class UpstreamProtocolError extends UpstreamUnavailable {
  constructor(message: string) {
    super(message);
    this.name = "UpstreamProtocolError";
  }
}

const HOP_BY_HOP = new Set(HOP_BY_HOP_HEADERS);
const METHOD = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PATH = /^(\/[\x21-\x7e]*|\*)$/;

export function createForwarder(options: ForwarderOptions = {}): Forwarder {
  const strategy = options.strategy ?? "socket-pool";
  if (strategy === "fetch") return new FetchForwarder();
  if (strategy === "node-http") return new NodeHttpForwarder(options);
  return new SocketPoolForwarder(options);
}

function checkRequestLine(request: ForwardRequest) {
  if (!METHOD.test(request.method)) throw new TypeError(`invalid method ${JSON.stringify(request.method)}`);
  if (!PATH.test(request.pathAndQuery)) throw new TypeError(`invalid request target ${JSON.stringify(request.pathAndQuery)}`);
}


// ---------------------------------------------------------------------------------------------
// fetch: what the proxy did before (Bun's fetch and its connection pool).

class FetchForwarder implements Forwarder {
  async forward(upstream: Upstream, request: ForwardRequest, signal?: AbortSignal): Promise<Response> {
    checkRequestLine(request);
    const headers = new Headers(request.headers);
    for (const name of HOP_BY_HOP) headers.delete(name);
    let response: Response;
    try {
      response = await fetch(`http://${upstream.host}:${upstream.port}${request.pathAndQuery}`, {
        method: request.method,
        headers,
        body: request.body,
        redirect: "manual",
        decompress: false,
        signal,
        // Bun needs this to stream a request body.
        duplex: "half",
      } as RequestInit);
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new UpstreamUnavailable(`${upstream.host}:${upstream.port}: ${(error as Error)?.message ?? error}`, { cause: error });
    }
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers: withoutHopByHop(response.headers) });
  }

  close() {}
}

// ---------------------------------------------------------------------------------------------
// node-http: node:http with a keep-alive Agent.

class NodeHttpForwarder implements Forwarder {
  private readonly agent: http.Agent;

  constructor(options: ForwarderOptions) {
    this.agent = new http.Agent({
      keepAlive: true,
      maxSockets: options.maxSocketsPerUpstream ?? 1024,
      maxFreeSockets: options.maxIdlePerUpstream ?? 256,
      timeout: options.idleTimeoutMs ?? 4_000,
    });
  }

  forward(upstream: Upstream, request: ForwardRequest, signal?: AbortSignal): Promise<Response> {
    checkRequestLine(request);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name)) headers[name] = value;
    });
    return new Promise<Response>((resolve, reject) => {
      const outgoing = http.request({ host: upstream.host, port: upstream.port, method: request.method, path: request.pathAndQuery, headers, agent: this.agent, signal });
      outgoing.on("error", (error) => reject(signal?.aborted ? error : new UpstreamUnavailable(`${upstream.host}:${upstream.port}: ${error.message}`, { cause: error })));
      outgoing.on("response", (incoming) => {
        const responseHeaders = new Headers();
        for (let i = 0; i < incoming.rawHeaders.length; i += 2) responseHeaders.append(incoming.rawHeaders[i]!, incoming.rawHeaders[i + 1]!);
        const bodyless = request.method === "HEAD" || incoming.statusCode === 204 || incoming.statusCode === 304;
        resolve(
          new Response(bodyless ? null : (Readable.toWeb(incoming) as unknown as ReadableStream<Uint8Array>), {
            status: incoming.statusCode,
            statusText: incoming.statusMessage,
            headers: withoutHopByHop(responseHeaders),
          }),
        );
      });
      if (!request.body) {
        outgoing.end();
        return;
      }
      Readable.fromWeb(request.body as any).pipe(outgoing);
    });
  }

  close() {
    this.agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// socket-pool: HTTP/1.1 on Bun.connect sockets, kept alive per upstream.

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
const ascii = (text: string) => Buffer.from(text, "latin1");
const BODY_HIGH_WATER_MARK = 64 * 1024;
const MAX_CHUNK_LINE = 1024;

type BodyMode = "none" | "length" | "chunked" | "close";
type ChunkState = "size" | "data" | "data-crlf" | "trailers" | "done";

interface Exchange {
  method: string;
  resolve(response: Response): void;
  reject(error: unknown): void;
  /** Set once the response head is parsed. */
  controller: ReadableStreamDefaultController<Uint8Array> | null;
  headDone: boolean;
  receivedAny: boolean;
  /** The parsed head, until the response is made. */
  head: { status: number; statusText: string; headers: Headers } | null;
  resolved: boolean;
  bodyMode: BodyMode;
  remaining: number;
  chunkState: ChunkState;
  /** The request body is fully sent (or there is none). */
  requestDone: boolean;
  /** The response was fully received. */
  responseDone: boolean;
  keepAlive: boolean;
  finished: boolean;
  onFinish(): void;
}

class Connection {
  socket: Socket<Connection> | null = null;
  exchange: Exchange | null = null;
  /** Unparsed bytes: a partial head, or a partial chunk-size line / trailer. */
  pending: Uint8Array | null = null;
  /** Bytes the socket did not take yet. */
  private unsent: Uint8Array[] = [];
  private drained: (() => void)[] = [];
  closed = false;
  private closeHandled = false;
  uses = 0;
  /** When it went back to the pool (Date.now()). */
  idleSince = 0;
  paused = false;

  constructor(readonly pool: UpstreamPool) {}

  /** Writes, keeping what the socket does not take for its drain; the promise settles once all of it is handed over. */
  write(bytes: Uint8Array): Promise<void> | undefined {
    if (this.closed || !this.socket) return Promise.reject(new Error("connection closed"));
    if (this.unsent.length) {
      this.unsent.push(bytes);
      return new Promise((resolve) => this.drained.push(resolve));
    }
    const written = this.socket.write(bytes);
    if (written === bytes.byteLength) return undefined;
    this.unsent.push(bytes.subarray(Math.max(0, written)));
    return new Promise((resolve) => this.drained.push(resolve));
  }

  onDrain() {
    while (this.unsent.length && this.socket && !this.closed) {
      const next = this.unsent[0]!;
      const written = this.socket.write(next);
      if (written < next.byteLength) {
        this.unsent[0] = next.subarray(Math.max(0, written));
        return;
      }
      this.unsent.shift();
    }
    for (const resolve of this.drained.splice(0)) resolve();
  }

  destroy() {
    if (this.closed) return;
    this.closed = true;
    this.socket?.terminate();
    this.afterClose(new Error("connection closed"));
  }

  afterClose(error: Error) {
    if (this.closeHandled) return;
    this.closeHandled = true;
    this.closed = true;
    this.unsent = [];
    for (const resolve of this.drained.splice(0)) resolve();
    this.pool.forget(this);
    const exchange = this.exchange;
    if (!exchange || exchange.finished) return;
    if (!exchange.resolved) {
      exchange.finished = true;
      const unavailable = new UpstreamUnavailable(`${this.pool.label}: ${error.message} before a response`, { cause: error });
      // Nothing came back: a pooled connection the upstream had just closed.
      if (!exchange.receivedAny) retryable.add(unavailable);
      exchange.reject(unavailable);
      exchange.onFinish();
      return;
    }
    if (exchange.bodyMode === "close") {
      this.finishResponse(exchange);
      return;
    }
    exchange.finished = true;
    try {
      exchange.controller?.error(new Error(`${this.pool.label}: connection closed mid-response`));
    } catch {}
    exchange.onFinish();
  }

  /** Fails the exchange on a protocol error and closes the connection. */
  fail(error: Error) {
    const exchange = this.exchange;
    if (exchange && !exchange.finished) {
      exchange.finished = true;
      if (!exchange.resolved) exchange.reject(error);
      else
        try {
          exchange.controller?.error(error);
        } catch {}
      exchange.onFinish();
    }
    this.destroy();
  }

  onData(chunk: Uint8Array) {
    const exchange = this.exchange;
    if (!exchange || exchange.finished) {
      // Bytes nobody asked for: the connection cannot be trusted any more.
      this.destroy();
      return;
    }
    exchange.receivedAny = true;
    let data = chunk;
    if (this.pending) {
      const joined = new Uint8Array(this.pending.byteLength + chunk.byteLength);
      joined.set(this.pending);
      joined.set(chunk, this.pending.byteLength);
      data = joined;
      this.pending = null;
    }
    try {
      while (!exchange.headDone) {
        const end = indexOfHeadEnd(data);
        if (end < 0) {
          if (data.byteLength > this.pool.maxHeadBytes) throw new UpstreamProtocolError(`${this.pool.label}: response head over ${this.pool.maxHeadBytes} bytes`);
          this.pending = data;
          return;
        }
        const head = latin1(data.subarray(0, end));
        data = data.subarray(end + 4);
        this.onHead(exchange, head);
      }
      if (exchange.finished) return;
      if (!exchange.resolved) {
        exchange.resolved = true;
        const { status, statusText, headers } = exchange.head!;
        exchange.head = null;
        if (exchange.bodyMode === "none") {
          exchange.resolve(new Response(null, { status, statusText, headers }));
          // Bytes after a response without a body: the connection is out of step, not reused.
          if (data.byteLength) this.noReuse(exchange);
          this.finishResponse(exchange);
          return;
        }
        if (exchange.bodyMode === "length" && data.byteLength >= exchange.remaining) {
          // The whole body came with the head (small answers): no stream needed.
          if (data.byteLength > exchange.remaining) this.noReuse(exchange);
          const body = data.slice(0, exchange.remaining);
          exchange.remaining = 0;
          exchange.resolve(new Response(body, { status, statusText, headers }));
          this.finishResponse(exchange);
          return;
        }
        exchange.resolve(new Response(this.bodyStream(exchange), { status, statusText, headers }));
      }
      this.onBody(exchange, data);
    } catch (error) {
      this.fail(error instanceof UpstreamUnavailable ? error : new UpstreamProtocolError(`${this.pool.label}: ${(error as Error).message}`));
    }
  }

  private noReuse(exchange: Exchange) {
    exchange.keepAlive = false;
  }

  private onHead(exchange: Exchange, head: string) {
    const lines = head.split("\r\n");
    const status = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: (.*))?$/.exec(lines[0]!);
    if (!status) throw new UpstreamProtocolError(`${this.pool.label}: invalid status line ${JSON.stringify(lines[0]!.slice(0, 100))}`);
    const minor = status[1];
    const code = Number(status[2]);
    const headers = new Headers();
    const contentLengths: string[] = [];
    const transferEncodings: string[] = [];
    let connectionTokens: string[] = [];
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(":");
      if (colon <= 0 || line.charCodeAt(0) === 0x20 || line.charCodeAt(0) === 0x09) throw new UpstreamProtocolError(`${this.pool.label}: invalid header line ${JSON.stringify(line.slice(0, 100))}`);
      const name = line.slice(0, colon);
      if (!METHOD.test(name)) throw new UpstreamProtocolError(`${this.pool.label}: invalid header name ${JSON.stringify(name.slice(0, 100))}`);
      const value = line.slice(colon + 1).trim();
      if (/[\0\r\n]/.test(value)) throw new UpstreamProtocolError(`${this.pool.label}: invalid value of ${name}`);
      const lower = name.toLowerCase();
      if (lower === "content-length") contentLengths.push(...value.split(",").map((part) => part.trim()));
      else if (lower === "transfer-encoding") transferEncodings.push(...value.split(",").map((part) => part.trim().toLowerCase()).filter(Boolean));
      else if (lower === "connection") connectionTokens = connectionTokens.concat(value.toLowerCase().split(",").map((part) => part.trim()));
      if (!HOP_BY_HOP.has(lower)) headers.append(name, value);
    }
    if (code < 200) {
      // 100 Continue, 103 Early Hints: informational, the real head follows. 101 is never asked for.
      if (code === 101) throw new UpstreamProtocolError(`${this.pool.label}: unexpected 101 Switching Protocols`);
      return;
    }
    for (const token of connectionTokens) if (!HOP_BY_HOP.has(token) && token !== "close") headers.delete(token);
    exchange.keepAlive = minor === "1" && !connectionTokens.includes("close");

    const bodyless = exchange.method === "HEAD" || code === 204 || code === 304;
    if (transferEncodings.length) {
      if (contentLengths.length) throw new UpstreamProtocolError(`${this.pool.label}: response has both Content-Length and Transfer-Encoding`);
      if (transferEncodings.length !== 1 || transferEncodings[0] !== "chunked") throw new UpstreamProtocolError(`${this.pool.label}: unsupported Transfer-Encoding ${transferEncodings.join(", ")}`);
      if (minor === "0") throw new UpstreamProtocolError(`${this.pool.label}: Transfer-Encoding in an HTTP/1.0 response`);
      exchange.bodyMode = bodyless ? "none" : "chunked";
      exchange.chunkState = "size";
    } else if (contentLengths.length) {
      if (!contentLengths.every((value) => /^\d{1,15}$/.test(value))) throw new UpstreamProtocolError(`${this.pool.label}: invalid Content-Length`);
      if (new Set(contentLengths.map(Number)).size !== 1) throw new UpstreamProtocolError(`${this.pool.label}: conflicting Content-Length values`);
      headers.set("content-length", String(Number(contentLengths[0])));
      exchange.remaining = Number(contentLengths[0]);
      exchange.bodyMode = bodyless || exchange.remaining === 0 ? "none" : "length";
    } else {
      exchange.bodyMode = bodyless ? "none" : "close";
      if (!bodyless) exchange.keepAlive = false;
    }
    if (code === 204 || code === 304) headers.delete("content-length");
    exchange.headDone = true;

    exchange.head = { status: code, statusText: status[3] ?? "", headers };
  }

  private bodyStream(exchange: Exchange): ReadableStream<Uint8Array> {
    const connection = this;
    const body = new ReadableStream<Uint8Array>(
      {
        start(controller) {
          exchange.controller = controller;
        },
        pull() {
          if (connection.paused && !connection.closed) {
            connection.paused = false;
            connection.socket?.resume();
          }
        },
        cancel() {
          if (!exchange.finished) {
            exchange.finished = true;
            exchange.onFinish();
          }
          connection.destroy();
        },
      },
      { highWaterMark: BODY_HIGH_WATER_MARK, size: (chunk) => chunk?.byteLength ?? 0 },
    );
    return body;
  }

  private emit(exchange: Exchange, bytes: Uint8Array) {
    if (!bytes.byteLength) return;
    const controller = exchange.controller!;
    controller.enqueue(bytes);
    if ((controller.desiredSize ?? 1) <= 0 && !this.paused) {
      this.paused = true;
      this.socket?.pause();
    }
  }

  private onBody(exchange: Exchange, data: Uint8Array) {
    if (exchange.bodyMode === "close") {
      this.emit(exchange, data);
      return;
    }
    if (exchange.bodyMode === "length") {
      const take = Math.min(exchange.remaining, data.byteLength);
      this.emit(exchange, data.subarray(0, take));
      exchange.remaining -= take;
      if (take < data.byteLength) this.noReuse(exchange);
      if (exchange.remaining === 0) this.finishResponse(exchange);
      return;
    }
    // chunked
    let offset = 0;
    while (offset < data.byteLength && exchange.chunkState !== "done") {
      if (exchange.chunkState === "data") {
        const take = Math.min(exchange.remaining, data.byteLength - offset);
        this.emit(exchange, data.subarray(offset, offset + take));
        offset += take;
        exchange.remaining -= take;
        if (exchange.remaining === 0) exchange.chunkState = "data-crlf";
        continue;
      }
      const lineEnd = indexOfCrlf(data, offset);
      if (lineEnd < 0) {
        if (data.byteLength - offset > MAX_CHUNK_LINE) throw new UpstreamProtocolError(`${this.pool.label}: chunk line too long`);
        this.pending = data.slice(offset);
        return;
      }
      const line = latin1(data.subarray(offset, lineEnd));
      offset = lineEnd + 2;
      if (exchange.chunkState === "data-crlf") {
        if (line !== "") throw new UpstreamProtocolError(`${this.pool.label}: chunk data longer than its size`);
        exchange.chunkState = "size";
      } else if (exchange.chunkState === "size") {
        const size = /^([0-9a-fA-F]{1,12})[ \t]*(;.*)?$/.exec(line);
        if (!size) throw new UpstreamProtocolError(`${this.pool.label}: invalid chunk size ${JSON.stringify(line.slice(0, 40))}`);
        exchange.remaining = Number.parseInt(size[1]!, 16);
        exchange.chunkState = exchange.remaining === 0 ? "trailers" : "data";
      } else if (exchange.chunkState === "trailers") {
        // Trailers are dropped; an empty line ends the message.
        if (line === "") exchange.chunkState = "done";
      }
    }
    if (exchange.chunkState === "done") {
      if (offset < data.byteLength) this.noReuse(exchange);
      this.finishResponse(exchange);
    }
  }

  private finishResponse(exchange: Exchange) {
    if (exchange.responseDone) return;
    exchange.responseDone = true;
    if (exchange.controller && !exchange.finished)
      try {
        exchange.controller.close();
      } catch {}
    if (!exchange.requestDone) exchange.keepAlive = false; // the upstream answered before the whole body arrived
    this.settle(exchange);
  }

  /** Once both directions are done: back to the pool, or closed. */
  settle(exchange: Exchange) {
    if (!exchange.responseDone || !exchange.requestDone) {
      if (exchange.responseDone && !exchange.keepAlive) this.endExchange(exchange);
      return;
    }
    this.endExchange(exchange);
  }

  private endExchange(exchange: Exchange) {
    if (this.exchange !== exchange) return;
    const wasFinished = exchange.finished;
    exchange.finished = true;
    this.exchange = null;
    this.pending = null;
    if (this.paused && !this.closed) {
      this.paused = false;
      this.socket?.resume();
    }
    if (exchange.keepAlive && !this.closed) this.pool.release(this);
    else this.destroy();
    if (!wasFinished) exchange.onFinish();
  }
}

function indexOfHeadEnd(data: Uint8Array): number {
  for (let i = data.indexOf(0x0d); i >= 0 && i + 3 < data.byteLength; i = data.indexOf(0x0d, i + 1)) {
    if (data[i + 1] === 0x0a && data[i + 2] === 0x0d && data[i + 3] === 0x0a) return i;
  }
  return -1;
}

function indexOfCrlf(data: Uint8Array, from: number): number {
  for (let i = data.indexOf(0x0d, from); i >= 0 && i + 1 < data.byteLength; i = data.indexOf(0x0d, i + 1)) {
    if (data[i + 1] === 0x0a) return i;
  }
  return -1;
}

const noop = () => {};

/** Errors of an exchange that may be sent again on a new connection. */
const retryable = new WeakSet<object>();

const handlers = {
  data(socket: Socket<Connection>, chunk: Uint8Array) {
    socket.data.onData(chunk);
  },
  drain(socket: Socket<Connection>) {
    socket.data.onDrain();
  },
  close(socket: Socket<Connection>, error?: Error) {
    socket.data.afterClose(error ?? new Error("connection closed"));
  },
  end(socket: Socket<Connection>) {
    socket.end();
  },
  error(socket: Socket<Connection>, error: Error) {
    socket.data.afterClose(error);
  },
};

class UpstreamPool {
  readonly idle: Connection[] = [];
  readonly all = new Set<Connection>();
  readonly waiting: ((connection: Connection | Error) => void)[] = [];
  readonly label: string;

  constructor(
    readonly upstream: Upstream,
    readonly options: Required<Omit<ForwarderOptions, "strategy">>,
    private readonly onEmpty: () => void,
  ) {
    this.label = `${upstream.host}:${upstream.port}`;
  }

  get maxHeadBytes() {
    return this.options.maxHeadBytes;
  }

  async acquire(): Promise<Connection> {
    for (let connection = this.idle.pop(); connection; connection = this.idle.pop()) {
      if (!connection.closed && connection.socket?.readyState === 1) return connection;
      connection.destroy();
    }
    if (this.all.size >= this.options.maxSocketsPerUpstream) {
      const next = await new Promise<Connection | Error>((resolve) => this.waiting.push(resolve));
      if (next instanceof Error) throw next;
      return next;
    }
    return this.connect();
  }

  private async connect(): Promise<Connection> {
    const connection = new Connection(this);
    this.all.add(connection);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const connecting = Bun.connect<Connection>({ hostname: this.upstream.host, port: this.upstream.port, data: connection, socket: handlers });
      // A connection that completes after the timeout is not wanted any more.
      connecting.then((socket) => connection.closed && socket.terminate(), () => {});
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no connection within ${this.options.connectTimeoutMs} ms`)), this.options.connectTimeoutMs);
      });
      connection.socket = await Promise.race([connecting, timeout]);
      connection.socket.setNoDelay(true);
      if (connection.closed) throw new Error("connection closed");
      return connection;
    } catch (error) {
      connection.closed = true;
      this.forget(connection);
      throw new UpstreamUnavailable(`${this.label}: ${(error as Error)?.message ?? error}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  release(connection: Connection) {
    connection.uses++;
    const waiter = this.waiting.shift();
    if (waiter) {
      waiter(connection);
      return;
    }
    if (this.idle.length >= this.options.maxIdlePerUpstream) {
      connection.destroy();
      return;
    }
    connection.idleSince = Date.now();
    this.idle.push(connection);
    // One timer per pool, not one per request: idle connections are closed by a periodic sweep.
    this.sweeper ??= setInterval(() => this.sweep(), Math.max(100, this.options.idleTimeoutMs / 4));
    this.sweeper.unref?.();
  }

  private sweeper: ReturnType<typeof setInterval> | null = null;

  /** Closes the connections idle for longer than idleTimeoutMs (the oldest are first in `idle`). */
  private sweep() {
    const limit = Date.now() - this.options.idleTimeoutMs;
    while (this.idle.length && this.idle[0]!.idleSince <= limit) this.idle.shift()!.destroy();
    if (!this.idle.length && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  forget(connection: Connection) {
    if (!this.all.delete(connection)) return;
    const index = this.idle.indexOf(connection);
    if (index >= 0) this.idle.splice(index, 1);
    // A slot freed up: someone waiting gets a new connection.
    const waiter = this.waiting.shift();
    if (waiter) this.connect().then(waiter, waiter);
    else if (this.all.size === 0) this.onEmpty();
  }

  close() {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    for (const waiter of this.waiting.splice(0)) waiter(new UpstreamUnavailable(`${this.label}: forwarder closed`));
    for (const connection of [...this.all]) connection.destroy();
  }
}

class SocketPoolForwarder implements Forwarder {
  private readonly pools = new Map<string, UpstreamPool>();
  private readonly options: Required<Omit<ForwarderOptions, "strategy">>;
  private closed = false;

  constructor(options: ForwarderOptions) {
    this.options = {
      maxSocketsPerUpstream: options.maxSocketsPerUpstream ?? 1024,
      maxIdlePerUpstream: options.maxIdlePerUpstream ?? 256,
      idleTimeoutMs: options.idleTimeoutMs ?? 4_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      maxHeadBytes: options.maxHeadBytes ?? 64 * 1024,
    };
  }

  private pool(upstream: Upstream): UpstreamPool {
    const key = `${upstream.host}:${upstream.port}`;
    let pool = this.pools.get(key);
    if (!pool) {
      const made = new UpstreamPool(upstream, this.options, () => {
        if (this.pools.get(key) === made) this.pools.delete(key);
      });
      pool = made;
      this.pools.set(key, pool);
    }
    return pool;
  }

  async forward(upstream: Upstream, request: ForwardRequest, signal?: AbortSignal): Promise<Response> {
    if (this.closed) throw new UpstreamUnavailable("forwarder closed");
    checkRequestLine(request);
    signal?.throwIfAborted();
    const head = requestHead(upstream, request);
    const pool = this.pool(upstream);
    // A pooled connection the upstream closed while we picked it fails before any response byte:
    // a request without a body is then sent once more on a new connection.
    for (let attempt = 0; ; attempt++) {
      const connection = await pool.acquire();
      const reused = connection.uses > 0;
      try {
        return await this.exchange(connection, head, request, signal);
      } catch (error) {
        const retry = reused && attempt === 0 && !request.body && retryable.has(error as object) && !signal?.aborted;
        if (!retry) throw error;
      }
    }
  }

  private exchange(connection: Connection, head: Uint8Array, request: ForwardRequest, signal?: AbortSignal): Promise<Response> {
    return new Promise<Response>((resolve, reject) => {
      const onAbort = () => connection.fail(signal!.reason ?? new DOMException("aborted", "AbortError"));
      const exchange: Exchange = {
        method: request.method,
        resolve,
        reject,
        controller: null,
        headDone: false,
        receivedAny: false,
        head: null,
        resolved: false,
        bodyMode: "none",
        remaining: 0,
        chunkState: "size",
        requestDone: !request.body,
        responseDone: false,
        keepAlive: true,
        finished: false,
        onFinish: signal ? () => signal.removeEventListener("abort", onAbort) : noop,
      };
      connection.exchange = exchange;
      signal?.addEventListener("abort", onAbort, { once: true });
      void connection.write(head)?.catch(() => {});
      if (request.body) void this.sendBody(connection, exchange, request.body, request.headers.get("content-length"));
    });
  }

  private async sendBody(connection: Connection, exchange: Exchange, body: ReadableStream<Uint8Array>, contentLength: string | null) {
    const length = contentLength === null ? null : Number(contentLength);
    let sent = 0;
    const reader = body.getReader();
    try {
      if (length !== null && !(Number.isSafeInteger(length) && length >= 0)) throw new Error(`invalid Content-Length ${contentLength}`);
      while (length === null || sent < length) {
        if (connection.closed || connection.exchange !== exchange) {
          await reader.cancel().catch(() => {});
          return;
        }
        const { done, value } = await reader.read();
        if (done) break;
        if (!value?.byteLength) continue;
        sent += value.byteLength;
        if (length !== null) {
          if (sent > length) throw new Error("request body longer than its Content-Length");
          await connection.write(value);
        } else {
          connection.write(ascii(`${value.byteLength.toString(16)}\r\n`));
          connection.write(value);
          await connection.write(ascii("\r\n"));
        }
      }
      if (length !== null && sent < length) throw new Error("request body shorter than its Content-Length");
      if (length === null) await connection.write(ascii("0\r\n\r\n"));
      exchange.requestDone = true;
      connection.settle(exchange);
    } catch (error) {
      // The client's body failed (it went away): the upstream must not take a truncated request.
      connection.fail(new UpstreamUnavailable(`request body failed: ${(error as Error)?.message ?? error}`, { cause: error }));
    } finally {
      reader.releaseLock();
    }
  }

  close() {
    this.closed = true;
    for (const pool of this.pools.values()) pool.close();
    this.pools.clear();
  }
}

function requestHead(upstream: Upstream, request: ForwardRequest): Uint8Array {
  let head = `${request.method} ${request.pathAndQuery} HTTP/1.1\r\n`;
  let hasHost = false;
  const named = (request.headers.get("connection") ?? "").toLowerCase().split(",").map((token) => token.trim());
  request.headers.forEach((value, name) => {
    if (HOP_BY_HOP.has(name) || named.includes(name)) return;
    if (name === "content-length" && !request.body) return;
    if (name === "host") hasHost = true;
    head += `${name}: ${value}\r\n`;
  });
  if (!hasHost) head += `host: ${upstream.host}:${upstream.port}\r\n`;
  if (request.body) {
    if (!request.headers.has("content-length")) head += "transfer-encoding: chunked\r\n";
  } else if (request.method !== "GET" && request.method !== "HEAD" && request.method !== "OPTIONS" && request.method !== "DELETE" && request.method !== "TRACE") {
    head += "content-length: 0\r\n";
  }
  return ascii(`${head}\r\n`);
}
