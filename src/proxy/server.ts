// The public proxy: `<subdomain>.<PLATFORM_DOMAIN>` on PLATFORM_PROXY_PORT goes to the app's
// serving container, rate limited per client address and per app (./rate-limit.ts). Bodies
// stream both ways; the app sees the client in X-Forwarded-* (./forwarding.ts). What the proxy
// answers itself (no such app, app not running, app not answering, too many requests) is a
// small page with a stable code (./pages.ts). WebSockets are proxied too (./websocket.ts).
import type { Server } from "bun";
import type { Config } from "../config";
import { requestSourceOf } from "../http/request-source";
import { inAnyRange } from "../http/trusted-proxies";
import { subdomainOf, type ProxyRoutes } from "./routes";
import { proxyErrorResponse } from "./pages";
import { ProxyRateLimiter, refusalHeaders } from "./rate-limit";
import { requestIdOf, upstreamRequestHeaders } from "./forwarding";
import type { TrafficRecorder } from "./traffic";
import { createForwarder } from "./upstream";
import { isWebSocketUpgrade, proxiedWebSocketHandlers, upgradeToUpstream, type ProxiedSocketData } from "./websocket";

export interface ProxyOptions {
  hostname: string;
  port: number;
  domain: string;
  routes: ProxyRoutes;
  traffic: TrafficRecorder;
  config: Pick<Config, "trustedProxies" | "proxyRateLimits">;
}

/** How long a client is told to wait before asking a stopped app again. */
const NOT_RUNNING_RETRY_SECONDS = 30;

export function startProxy(options: ProxyOptions): Server<ProxiedSocketData> {
  const limiter = new ProxyRateLimiter(options.config.proxyRateLimits);
  // Bun's fetch keeps too few upstream sockets: at 256 clients requests queued behind them (0.02x
  // nginx). A keep-alive pool of its own sized to demand does not collapse (scripts/bench/proxy.ts).
  const forwarder = createForwarder();
  return Bun.serve<ProxiedSocketData>({
    hostname: options.hostname,
    port: options.port,
    websocket: proxiedWebSocketHandlers,
    async fetch(request, server) {
      const accept = request.headers.get("accept");
      const subdomain = subdomainOf(request.headers.get("host"), options.domain);
      const upstream = subdomain === null ? undefined : options.routes.get(subdomain);
      if (!upstream) {
        if (subdomain !== null && options.routes.unrouted(subdomain)) {
          return proxyErrorResponse(503, "APP_UNAVAILABLE", "The app published at this address is not running right now.", accept, {
            "retry-after": String(NOT_RUNNING_RETRY_SECONDS),
          });
        }
        return proxyErrorResponse(404, "APP_NOT_FOUND", "No app is published at this address.", accept);
      }

      const source = requestSourceOf(options.config, server, request);
      const refusal = limiter.admit(subdomain!, source.clientAddress);
      if (refusal) {
        options.traffic.record(subdomain!, { status: 429, bytesIn: 0, bytesOut: 0, upstreamMs: null });
        return proxyErrorResponse(429, "RATE_LIMITED", `Too many requests: try again in ${refusal.retryAfterSeconds} s.`, accept, refusalHeaders(refusal));
      }

      const trustedPeer = inAnyRange(options.config.trustedProxies, source.peerAddress);
      const requestId = requestIdOf(request);
      const headers = upstreamRequestHeaders(request, source, trustedPeer, server.port ?? options.port, requestId);
      // A WebSocket counts once against the limits, at its upgrade.
      if (isWebSocketUpgrade(request)) return upgradeToUpstream(server, request, upstream, headers);
      const url = new URL(request.url);
      const bytesIn = Number(request.headers.get("content-length")) || 0;
      const sentAt = performance.now();
      try {
        const response = await forwarder.forward(
          upstream,
          { method: request.method, pathAndQuery: url.pathname + url.search, headers, body: request.body },
          request.signal,
        );
        options.traffic.record(subdomain!, {
          status: response.status,
          bytesIn,
          bytesOut: Number(response.headers.get("content-length")) || 0,
          upstreamMs: performance.now() - sentAt,
        });
        // The forwarder has dropped the answer's hop-by-hop headers already.
        response.headers.set("x-request-id", requestId);
        return response;
      } catch {
        options.traffic.record(subdomain!, { status: 502, bytesIn, bytesOut: 0, upstreamMs: null });
        return proxyErrorResponse(502, "APP_NOT_ANSWERING", "The app published at this address did not answer.", accept, { "x-request-id": requestId });
      }
    },
  });
}
