// The public proxy (src/proxy/server.ts) on 127.0.0.1 with apps a test makes itself: Bun.serve
// apps, and raw TCP apps that read request heads and bodies and answer exactly the bytes a test
// writes (framing, smuggling, stalls). Everything made through a harness is stopped by its
// cleanup(), which a test file calls after each test.
import type { Server, Socket, TCPSocketListener } from "bun";
import { dlopen, FFIType, ptr } from "bun:ffi";
import net from "node:net";
import type { RateLimit } from "../../src/config";
import type { CidrRange } from "../../src/http/trusted-proxies";
import { ProxyRoutes, type Upstream } from "../../src/proxy/routes";
import { startProxy, type ProxyOptions, type ProxyTls, type PublicProxy } from "../../src/proxy/server";
import { TrafficRecorder } from "../../src/proxy/traffic";

export const DOMAIN = "apps.test";
/** The Host of an app's subdomain. */
export const hostOf = (subdomain: string) => `${subdomain}.${DOMAIN}`;

const UNLIMITED: RateLimit = { burst: 1_000_000, refillPerSecond: 1_000_000 };

export interface ProxySettings {
  trustedProxies?: CidrRange[];
  rateLimits?: { perClient: RateLimit; perHost: RateLimit };
  /** In seconds; fractions are fine (the proxy checks its timeouts every 500 ms). */
  timeouts?: Partial<ProxyOptions["config"]["proxyTimeouts"]>;
  maxConnectionsPerClient?: number;
  /** Certificates and challenges: the proxy can then open its HTTPS listener (`startTls`). */
  tls?: ProxyTls;
}

export interface TestProxy {
  port: number;
  routes: ProxyRoutes;
  traffic: TrafficRecorder;
  stop(force?: boolean): Promise<void>;
  /** Opens the HTTPS listener (settings `tls`); its port. */
  startTls(): number;
  /** Routes `subdomain` to an app. */
  route(subdomain: string, upstream: Upstream): void;
  /** fetch() through the proxy to `subdomain`; redirects are not followed. */
  fetch(subdomain: string, path?: string, init?: RequestInit): Promise<Response>;
  /** Requests in flight to the upstream at this address (PublicProxy.inFlight). */
  inFlight(upstream: Upstream): number;
}

export interface BunApp {
  upstream: Upstream;
  server: Server<undefined>;
  /** The source port of each request: one per upstream connection the proxy used. */
  ports: Set<number>;
}

/** One connection to a raw app: request heads and bodies read from it, and what is written back. */
export class RawAppConnection {
  private buffer = Buffer.alloc(0);
  private wake: (() => void) | null = null;
  private drained: (() => void) | null = null;
  closed = false;
  /** Bytes the kernel took from send(). */
  sent = 0;

  constructor(readonly socket: Socket<RawAppConnection>) {}

  onData(chunk: Buffer) {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : Buffer.from(chunk);
    this.notify();
  }

  onDrain() {
    const drained = this.drained;
    this.drained = null;
    drained?.();
  }

  onClose() {
    this.closed = true;
    this.notify();
    this.onDrain();
  }

  /** The next request head (its text before CRLF CRLF), or null when the connection closes first. */
  async head(): Promise<string | null> {
    for (;;) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end >= 0) {
        const head = this.buffer.toString("latin1", 0, end);
        this.buffer = this.buffer.subarray(end + 4);
        return head;
      }
      if (this.closed) return null;
      await this.more();
    }
  }

  /** Exactly `length` bytes (a request body); fewer when the connection closes first. */
  async read(length: number): Promise<Buffer> {
    while (this.buffer.length < length && !this.closed) await this.more();
    const taken = this.buffer.subarray(0, length);
    this.buffer = this.buffer.subarray(taken.length);
    return taken;
  }

  /** What arrived and was not read. */
  unread(): string {
    return this.buffer.toString("latin1");
  }

  /** Writes latin1 text or bytes at once (the socket's buffer takes small writes whole). */
  write(data: string | Uint8Array) {
    this.socket.write(typeof data === "string" ? Buffer.from(data, "latin1") : data);
    this.socket.flush();
  }

  /** Writes `bytes`, waiting for drains; counts what the kernel took in `sent`. False when the connection closed first. */
  async send(bytes: Uint8Array): Promise<boolean> {
    let offset = 0;
    while (offset < bytes.byteLength) {
      if (this.closed) return false;
      const written = this.socket.write(bytes.subarray(offset));
      if (written > 0) {
        offset += written;
        this.sent += written;
      }
      if (offset < bytes.byteLength) await new Promise<void>((resolve) => (this.drained = resolve));
    }
    return true;
  }

  end() {
    this.socket.end();
  }

  private more(): Promise<void> {
    return new Promise((resolve) => (this.wake = resolve));
  }

  private notify() {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

export interface RawApp {
  upstream: Upstream;
  /** Every request head received, in order. */
  heads: string[];
  /** The connections made to it, open or closed. */
  connections: RawAppConnection[];
}

/** Answers one request on a raw app: `index` counts the app's requests over all its connections. */
export type RawAnswer = (head: string, connection: RawAppConnection, index: number) => void | Promise<void>;

export class ProxyHarness {
  private readonly stops: (() => unknown)[] = [];

  /** The proxy with unlimited rates and connections and long timeouts, unless `settings` say otherwise. */
  proxy(settings: ProxySettings = {}): TestProxy {
    const routes = new ProxyRoutes();
    const traffic = new TrafficRecorder();
    const proxy: PublicProxy = startProxy({
      hostname: "127.0.0.1",
      port: 0,
      domain: DOMAIN,
      routes,
      traffic,
      config: {
        trustedProxies: settings.trustedProxies ?? [],
        proxyRateLimits: settings.rateLimits ?? { perClient: UNLIMITED, perHost: UNLIMITED },
        proxyTimeouts: { headerSeconds: 30, idleSeconds: 30, upstreamSeconds: 30, connectSeconds: 5, ...settings.timeouts },
        proxyMaxConnectionsPerClient: settings.maxConnectionsPerClient ?? 100_000,
      },
      tls: settings.tls,
    });
    let stopped: Promise<void> | null = null;
    const stop = (force = false) => (stopped = force || !stopped ? proxy.stop(force) : stopped);
    this.stops.push(() => stop(true));
    return {
      port: proxy.port,
      routes,
      traffic,
      stop,
      startTls: () => proxy.startTls(),
      inFlight: (upstream) => proxy.inFlight(upstream.host, upstream.port),
      route: (subdomain, upstream) => routes.set(subdomain, upstream),
      fetch: (subdomain, path = "/", init = {}) => {
        const headers = new Headers(init.headers);
        headers.set("host", hostOf(subdomain));
        return fetch(`http://127.0.0.1:${proxy.port}${path}`, { redirect: "manual", ...init, headers });
      },
    };
  }

  /** A Bun.serve app. */
  app(handler: (request: Request, server: Server<undefined>) => Response | Promise<Response | undefined> | undefined, options: Partial<Parameters<typeof Bun.serve>[0]> = {}): BunApp {
    const ports = new Set<number>();
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      maxRequestBodySize: 1024 * 1024 * 1024,
      idleTimeout: 30,
      ...(options as object),
      fetch(request: Request, server: Server<undefined>) {
        const address = server.requestIP(request);
        if (address) ports.add(address.port);
        return handler(request, server);
      },
    } as Parameters<typeof Bun.serve>[0]) as Server<undefined>;
    this.stops.push(() => server.stop(true));
    return { upstream: { host: "127.0.0.1", port: server.port! }, server, ports };
  }

  /** A raw TCP app: `answer` is called with each request head in turn and writes what it likes. */
  rawApp(answer: RawAnswer): RawApp {
    const heads: string[] = [];
    const connections: RawAppConnection[] = [];
    let requests = 0;
    const serve = async (connection: RawAppConnection) => {
      for (let head = await connection.head(); head !== null; head = await connection.head()) {
        heads.push(head);
        await answer(head, connection, requests++);
      }
    };
    const listener: TCPSocketListener<RawAppConnection> = Bun.listen<RawAppConnection>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open(socket) {
          socket.data = new RawAppConnection(socket);
          connections.push(socket.data);
          void serve(socket.data);
        },
        data(socket, chunk) {
          socket.data.onData(chunk);
        },
        drain(socket) {
          socket.data.onDrain();
        },
        close(socket) {
          socket.data.onClose();
        },
        end(socket) {
          socket.end();
        },
        error() {},
      },
    });
    this.stops.push(() => listener.stop(true));
    return { upstream: { host: "127.0.0.1", port: listener.port }, heads, connections };
  }

  /** A loopback port nothing listens on. */
  closedPort(): number {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    return port;
  }

  /**
   * A loopback port whose listener never accepts: its accept queue (backlog 0) is filled by one
   * connection, so the kernel drops the next SYNs and a connect hangs, as to a host that is gone.
   * Node and Bun accept every connection at once, hence a socket of libc's own.
   */
  async unacceptingPort(): Promise<number> {
    const libc = dlopen("libc.so.6", {
      socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
      bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
      listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
      getsockname: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
      close: { args: [FFIType.i32], returns: FFIType.i32 },
    });
    const AF_INET = 2;
    const SOCK_STREAM = 1;
    const fd = libc.symbols.socket(AF_INET, SOCK_STREAM, 0);
    // struct sockaddr_in: family, port (0: any), 127.0.0.1.
    const address = new Uint8Array(16);
    address.set([AF_INET, 0, 0, 0, 127, 0, 0, 1]);
    const length = new Uint32Array([16]);
    if (fd < 0 || libc.symbols.bind(fd, ptr(address), 16) !== 0 || libc.symbols.listen(fd, 0) !== 0 || libc.symbols.getsockname(fd, ptr(address), ptr(length)) !== 0) {
      throw new Error("could not make a listening socket");
    }
    const port = (address[2]! << 8) | address[3]!;
    const filler = net.connect({ host: "127.0.0.1", port });
    filler.on("error", () => {});
    await new Promise((resolve) => filler.once("connect", resolve));
    this.stops.push(() => {
      filler.destroy();
      libc.symbols.close(fd);
      libc.close();
    });
    return port;
  }

  /** Something else to stop at cleanup. */
  onCleanup(stop: () => unknown) {
    this.stops.push(stop);
  }

  async cleanup() {
    for (const stop of this.stops.splice(0).reverse()) {
      try {
        await stop();
      } catch {
        // Stopped already.
      }
    }
  }
}

/** The process's resident memory in MiB, after a full collection. */
export function rssMegabytes(): number {
  Bun.gc(true);
  return process.memoryUsage.rss() / 1024 / 1024;
}

/** Waits until `condition` holds, polling every 5 ms. */
export async function until(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

/** Waits until a counter has not moved for `quietMs`, and returns it. */
export async function settled(read: () => number, quietMs = 200, timeoutMs = 10_000): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  let last = read();
  let since = performance.now();
  while (performance.now() - since < quietMs) {
    if (performance.now() > deadline) throw new Error("the counter did not settle");
    await Bun.sleep(20);
    const now = read();
    if (now !== last) {
      last = now;
      since = performance.now();
    }
  }
  return last;
}
