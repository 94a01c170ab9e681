// The public proxy: `<subdomain>.<PLATFORM_DOMAIN>` on PLATFORM_PROXY_PORT goes to the app's
// serving container, rate limited per client address and per app (./rate-limit.ts). It speaks
// HTTP/1.1 on Bun's TCP sockets itself (./client-connection.ts): Bun.serve's request and response
// objects cost more than the forwarding (0.41x nginx's throughput; this way about 1x, measured by
// scripts/bench/proxy.ts), and only a server of its own can limit connections per client address
// and time out a request head that trickles in (slowloris) while letting a slow answer through.
// What the proxy answers itself (no such app, app not running, app not answering, too many
// requests) is a small page with a stable code (./pages.ts).
// The same connections come over TLS on PLATFORM_PROXY_TLS_PORT once a certificate exists, each
// handshake served the certificate of the host it names (src/certificates).
// The platform runs it on a thread of its own (./thread.ts); the tests also run it on theirs.
import type { Socket, SocketHandler, TCPSocketListener } from "bun";
import type { SecureContext } from "node:tls";
import type { Config } from "../config";
import { inAnyRange } from "../http/trusted-proxies";
import { ClientConnection, type ProxyHttps, type RelayContext } from "./client-connection";
import { now, readClock, syncWallClock } from "./clock";
import { proxyErrorAnswer } from "./pages";
import { clientKey, ProxyRateLimiter } from "./rate-limit";
import type { ProxyRoutes } from "./routes";
import type { TrafficRecorder } from "./traffic";
import { UpstreamPools } from "./upstream-pool";

/** The HTTPS side: certificates by server name (src/certificates), and the ACME challenges. */
export interface ProxyTls extends ProxyHttps {
  port: number;
  /** The certificate for a handshake that names this host (SNI); undefined: the default one. */
  secureContextFor(serverName: string): SecureContext | undefined;
  /** For handshakes without a name the proxy knows. */
  defaultPair(): { chainPem: string; keyPem: string } | null;
}

export interface ProxyOptions {
  hostname: string;
  port: number;
  domain: string;
  /** Absent: plain HTTP only. */
  tls?: ProxyTls;
  routes: ProxyRoutes;
  traffic: TrafficRecorder;
  config: Pick<Config, "trustedProxies" | "proxyRateLimits" | "proxyTimeouts" | "proxyMaxConnectionsPerClient">;
}

export interface PublicProxy {
  port: number;
  /**
   * Opens the HTTPS listener, once a certificate exists (it needs a default one); returns its port.
   * Opened already: its port.
   */
  startTls(): number;
  /**
   * Stops taking connections; idle ones close at once, the others after their current exchange.
   * Resolves once all are closed. `force`: closes everything now.
   */
  stop(force?: boolean): Promise<void>;
  /**
   * Requests (and WebSockets) in flight to the upstream at this address: a release retires its old
   * container once none are left. Counted when asked, over the open connections, so that the
   * requests themselves pay nothing for it.
   */
  inFlight(host: string, port: number): number;
}

/** How often the timeouts are checked. */
const SWEEP_MS = 500;
/** Upstream connections kept idle per app, and for how long. */
const MAX_IDLE_PER_UPSTREAM = 1024;
const UPSTREAM_IDLE_MS = 4_000;

export function startProxy(options: ProxyOptions): PublicProxy {
  const { config } = options;
  const clients = new Set<ClientConnection>();
  const connectionsPerClient = new Map<string, number>();
  const pools = new UpstreamPools({
    connectTimeoutMs: config.proxyTimeouts.connectSeconds * 1000,
    idleTimeoutMs: UPSTREAM_IDLE_MS,
    maxIdlePerUpstream: MAX_IDLE_PER_UPSTREAM,
  });
  const context: RelayContext = {
    domain: options.domain,
    routes: options.routes,
    limiter: new ProxyRateLimiter(config.proxyRateLimits),
    traffic: options.traffic,
    pools,
    trustedProxies: config.trustedProxies,
    timeouts: {
      headerMs: config.proxyTimeouts.headerSeconds * 1000,
      idleMs: config.proxyTimeouts.idleSeconds * 1000,
      upstreamMs: config.proxyTimeouts.upstreamSeconds * 1000,
    },
    port: options.port,
    tlsPort: 0,
    https: options.tls ?? null,
    stopping: false,
  };
  let drained: (() => void) | null = null;

  const closed = (connection: ClientConnection) => {
    clients.delete(connection);
    const key = clientKey(connection.peerAddress);
    const count = connectionsPerClient.get(key);
    if (count !== undefined) {
      if (count <= 1) connectionsPerClient.delete(key);
      else connectionsPerClient.set(key, count - 1);
    }
    if (!clients.size) drained?.();
  };

  const handlers = (secure: boolean): SocketHandler<ClientConnection> => ({
    // Plain Uint8Arrays rather than Buffers: 1-2% more req/s, and the proxy uses no Buffer method on them.
    binaryType: "uint8array",
    open(socket: Socket<ClientConnection>) {
      readClock();
      const peer = socket.remoteAddress;
      // A trusted front proxy carries many clients on its connections: it is not limited.
      if (!inAnyRange(config.trustedProxies, peer)) {
        const key = clientKey(peer);
        const open = connectionsPerClient.get(key) ?? 0;
        if (open >= config.proxyMaxConnectionsPerClient) {
          socket.write(proxyErrorAnswer(429, "TOO_MANY_CONNECTIONS", `Too many connections from one address (at most ${config.proxyMaxConnectionsPerClient}).`, null, {}, true));
          socket.end();
          return;
        }
        connectionsPerClient.set(key, open + 1);
      }
      socket.setNoDelay(true);
      const connection = new ClientConnection(socket, context, peer, closed, secure);
      socket.data = connection;
      clients.add(connection);
      if (context.stopping) connection.end();
    },
    data(socket, chunk) {
      readClock();
      socket.data?.onData(chunk);
    },
    drain(socket) {
      readClock();
      socket.data?.onDrain();
    },
    close(socket) {
      readClock();
      socket.data?.onClose();
    },
    end(socket) {
      readClock();
      if (socket.data) socket.data.onEnd();
      else socket.end();
    },
    error() {
      // close follows.
    },
  });

  const listener: TCPSocketListener<ClientConnection> = Bun.listen<ClientConnection>({ hostname: options.hostname, port: options.port, socket: handlers(false) });
  let tlsListener: TCPSocketListener<ClientConnection> | null = null;

  const startTls = (): number => {
    if (tlsListener) return tlsListener.port;
    const tls = options.tls;
    const pair = tls?.defaultPair();
    if (!tls || !pair) throw new Error("the HTTPS listener needs a certificate");
    tlsListener = Bun.listen<ClientConnection>({
      hostname: options.hostname,
      port: tls.port,
      tls: { cert: pair.chainPem, key: pair.keyPem },
      socket: {
        ...handlers(true),
        // With this handler Bun calls `open` when the connection is accepted, not after the
        // handshake: the per-address limit and the header timeout then hold for a client that
        // never finishes (or never starts) one.
        handshake(socket: Socket<ClientConnection>, success: boolean) {
          if (!success) socket.end();
        },
        // Called at each handshake with the name the client asked for (SNI). Bun.listen does not
        // document this handler; it is the one Bun's own node:tls server uses (its SNICallback),
        // and it returns the native context inside a node:tls SecureContext. The HTTPS tests check
        // that each host gets its own certificate, so a Bun without it fails them.
        // A name without a certificate fails the handshake: the default certificate (another
        // host's) is not shown to whoever asks for any name.
        serverName(_listener: unknown, serverName: string) {
          const context = (tls.secureContextFor(serverName) as { context?: unknown } | undefined)?.context;
          return context ?? new Error(`no certificate for ${serverName}`);
        },
      } as SocketHandler<ClientConnection>,
    });
    context.tlsPort = tlsListener.port;
    return tlsListener.port;
  };

  // Port 0 asks the system for one: the forwarded port is the one it gave.
  context.port = listener.port;

  const sweeper = setInterval(() => {
    syncWallClock();
    for (const connection of clients) connection.tick(now());
  }, SWEEP_MS);
  // A proxy with nothing open does not keep the process alive (tests start and stop several).
  sweeper.unref();

  return {
    port: listener.port,
    startTls,
    inFlight(host, port) {
      let count = 0;
      for (const connection of clients) if (connection.relaysTo(host, port)) count++;
      return count;
    },
    stop(force = false) {
      readClock();
      context.stopping = true;
      listener.stop();
      tlsListener?.stop();
      if (force) {
        for (const connection of clients) connection.destroy();
      } else {
        for (const connection of clients) if (connection.idle) connection.end();
      }
      const allClosed = clients.size ? new Promise<void>((resolve) => (drained = resolve)) : Promise.resolve();
      return allClosed.then(() => {
        clearInterval(sweeper);
        pools.close();
      });
    },
  };
}
