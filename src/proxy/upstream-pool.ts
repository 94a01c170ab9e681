// Connections from the proxy to apps' containers, kept alive between requests: one pool of idle
// connections per upstream address, sized by demand (a client connection holds at most one
// upstream connection at a time). Bun's fetch kept too few sockets: at 256 clients requests queued
// behind them (0.02x nginx, scripts/bench/proxy.ts). An idle connection is closed after a while,
// before the app's own keep-alive timeout would close it under a request (Node's is 5 s).
import type { Socket } from "bun";
import { now, readClock } from "./clock";
import type { ResponseHead } from "./http1";
import type { Upstream } from "./routes";
import { SocketWriter } from "./socket-writer";

/** What an exchange hears from the upstream connection it holds. */
export interface UpstreamListener {
  onUpstreamData(chunk: Uint8Array): void;
  onUpstreamDrain(): void;
  onUpstreamClose(): void;
}

export interface UpstreamPoolOptions {
  connectTimeoutMs: number;
  /** An idle connection is closed after this long. */
  idleTimeoutMs: number;
  /** Most idle connections kept per upstream. */
  maxIdlePerUpstream: number;
}

export class UpstreamUnavailable extends Error {
  constructor(
    message: string,
    /** The app did not accept the connection in time (rather than refusing it). */
    readonly timedOut = false,
  ) {
    super(message);
    this.name = "UpstreamUnavailable";
  }
}

export class UpstreamConnection {
  listener: UpstreamListener | null = null;
  closed = false;
  /** Requests it has carried to their end. */
  uses = 0;
  idleSince = 0;
  readonly writer: SocketWriter;
  /** The last response head read on it (from a small piece): the next, when byte for byte the same, is not read again. */
  lastResponseHead: ResponseHead | null = null;

  constructor(
    readonly socket: Socket<UpstreamConnection>,
    readonly key: string,
  ) {
    this.writer = new SocketWriter(socket);
  }

  destroy() {
    if (this.closed) return;
    this.closed = true;
    this.writer.clear();
    this.socket.terminate();
  }
}

const handlers = {
  // Plain Uint8Arrays rather than Buffers, as the client side gets (src/proxy/server.ts).
  binaryType: "uint8array" as const,
  data(socket: Socket<UpstreamConnection>, chunk: Uint8Array) {
    readClock();
    const connection = socket.data;
    // Bytes on an idle connection belong to no request: it cannot be trusted any more.
    if (connection.listener) connection.listener.onUpstreamData(chunk);
    else connection.destroy();
  },
  drain(socket: Socket<UpstreamConnection>) {
    readClock();
    const connection = socket.data;
    if (connection.writer.flush()) connection.listener?.onUpstreamDrain();
  },
  close(socket: Socket<UpstreamConnection>) {
    readClock();
    const connection = socket.data;
    if (!connection) return;
    connection.closed = true;
    connection.writer.clear();
    const listener = connection.listener;
    connection.listener = null;
    listener?.onUpstreamClose();
  },
  end(socket: Socket<UpstreamConnection>) {
    readClock();
    socket.end();
  },
  error() {
    // close follows.
  },
};

/** `host:port` of each route's upstream, made once rather than for every request. */
const addressKeys = new WeakMap<Upstream, string>();

function addressKeyOf(upstream: Upstream): string {
  let key = addressKeys.get(upstream);
  if (key === undefined) addressKeys.set(upstream, (key = `${upstream.host}:${upstream.port}`));
  return key;
}

export class UpstreamPools {
  private readonly idle = new Map<string, UpstreamConnection[]>();
  private sweeper: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly options: UpstreamPoolOptions) {}

  /** An idle connection to the upstream, or null when a new one must be made. */
  takeIdle(upstream: Upstream): UpstreamConnection | null {
    const idle = this.idle.get(addressKeyOf(upstream));
    for (let connection = idle?.pop(); connection; connection = idle!.pop()) {
      if (!connection.closed && connection.socket.readyState === 1) return connection;
    }
    return null;
  }

  async connect(upstream: Upstream): Promise<UpstreamConnection> {
    const key = addressKeyOf(upstream);
    let timer: ReturnType<typeof setTimeout> | undefined;
    let timedOut = false;
    const connecting = Bun.connect<UpstreamConnection>({
      hostname: upstream.host,
      port: upstream.port,
      socket: {
        ...handlers,
        open(socket) {
          socket.data = new UpstreamConnection(socket, key);
          // One that completes after the time limit is not wanted any more.
          if (timedOut) socket.data.destroy();
        },
      },
    });
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(new UpstreamUnavailable(`${key}: no connection within ${this.options.connectTimeoutMs} ms`, true));
      }, this.options.connectTimeoutMs);
    });
    try {
      const socket = await Promise.race([connecting, timeout]);
      socket.setNoDelay(true);
      return socket.data;
    } catch (error) {
      if (error instanceof UpstreamUnavailable) throw error;
      throw new UpstreamUnavailable(`${key}: ${(error as Error)?.message ?? error}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A connection whose exchange ended cleanly: kept for the next request to the same upstream. */
  release(connection: UpstreamConnection) {
    connection.listener = null;
    connection.uses++;
    if (connection.closed) return;
    let idle = this.idle.get(connection.key);
    if (!idle) this.idle.set(connection.key, (idle = []));
    if (idle.length >= this.options.maxIdlePerUpstream) {
      connection.destroy();
      return;
    }
    connection.idleSince = now();
    idle.push(connection);
    // One timer for all pools, not one per request.
    this.sweeper ??= setInterval(() => this.sweep(), Math.max(100, this.options.idleTimeoutMs / 4));
  }

  /** Closes the connections idle longer than the limit (the oldest are first in each list). */
  private sweep() {
    const limit = readClock() - this.options.idleTimeoutMs;
    for (const [key, idle] of this.idle) {
      let stale = 0;
      while (stale < idle.length && (idle[stale]!.idleSince <= limit || idle[stale]!.closed)) idle[stale++]!.destroy();
      if (stale) idle.splice(0, stale);
      if (!idle.length) this.idle.delete(key);
    }
    if (!this.idle.size && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  close() {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    for (const idle of this.idle.values()) for (const connection of idle) connection.destroy();
    this.idle.clear();
  }
}
