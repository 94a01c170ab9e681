// The public proxy: `<subdomain>.<PLATFORM_DOMAIN>` on PLATFORM_PROXY_PORT goes to the app's
// serving container. Bodies stream both ways; the app sees the client in X-Forwarded-*.
import type { Server } from "bun";
import type { ProxyRoutes } from "./routes";

const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"];

function plain(status: number, text: string) {
  return new Response(text, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

export function startProxy(options: { hostname: string; port: number; domain: string; routes: ProxyRoutes }): Server<undefined> {
  return Bun.serve({
    hostname: options.hostname,
    port: options.port,
    async fetch(request, server) {
      const upstream = options.routes.resolve(request.headers.get("host"), options.domain);
      if (!upstream) return plain(404, "No app is published at this address");
      const url = new URL(request.url);
      const headers = new Headers(request.headers);
      for (const name of HOP_BY_HOP) headers.delete(name);
      const client = server.requestIP(request)?.address;
      if (client) headers.set("x-forwarded-for", [request.headers.get("x-forwarded-for"), client].filter(Boolean).join(", "));
      headers.set("x-forwarded-host", request.headers.get("host") ?? "");
      headers.set("x-forwarded-proto", url.protocol.replace(":", ""));
      try {
        const response = await fetch(`http://${upstream.host}:${upstream.port}${url.pathname}${url.search}`, {
          method: request.method,
          headers,
          body: request.body,
          redirect: "manual",
          decompress: false,
        } as RequestInit);
        const responseHeaders = new Headers(response.headers);
        for (const name of HOP_BY_HOP) responseHeaders.delete(name);
        return new Response(response.body, { status: response.status, statusText: response.statusText, headers: responseHeaders });
      } catch {
        return plain(502, "The app did not answer");
      }
    },
  });
}
