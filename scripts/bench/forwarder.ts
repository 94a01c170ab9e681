// A bare Bun.serve forwarding every request to one upstream through createForwarder
// (src/proxy/upstream.ts), with the same header work as the platform's proxy: scripts/bench/proxy.ts
// --compare runs one per strategy, to compare strategies without the platform around them.
//
//   FORWARDER_PORT=8080 FORWARDER_UPSTREAM=172.18.0.2:3000 FORWARDER_STRATEGY=socket-pool bun scripts/bench/forwarder.ts
//
// FORWARDER_THREADS=N (default 1) serves the port from N threads (Workers, SO_REUSEPORT), each with
// its own forwarder: an experiment for a proxy that uses more than one core.
import { isMainThread } from "node:worker_threads";
import { createForwarder, UpstreamUnavailable, type ForwarderStrategy } from "../../src/proxy/upstream";

const [host, port] = (process.env.FORWARDER_UPSTREAM ?? "").split(":");
if (!host || !port) throw new Error("FORWARDER_UPSTREAM=host:port is required");
const upstream = { host, port: Number(port) };
const forwarder = createForwarder({ strategy: (process.env.FORWARDER_STRATEGY ?? "socket-pool") as ForwarderStrategy });

const threads = Number(process.env.FORWARDER_THREADS ?? 1);
if (isMainThread) for (let i = 1; i < threads; i++) new Worker(import.meta.path);

Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.FORWARDER_PORT ?? 0),
  reusePort: threads > 1,
  async fetch(request, server) {
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    const client = server.requestIP(request)?.address;
    if (client) headers.set("x-forwarded-for", [request.headers.get("x-forwarded-for"), client].filter(Boolean).join(", "));
    headers.set("x-forwarded-host", request.headers.get("host") ?? "");
    headers.set("x-forwarded-proto", "http");
    try {
      return await forwarder.forward(upstream, { method: request.method, pathAndQuery: url.pathname + url.search, headers, body: request.body }, request.signal);
    } catch (error) {
      if (error instanceof UpstreamUnavailable) return new Response("The app did not answer", { status: 502 });
      throw error;
    }
  },
});
process.on("SIGTERM", () => {
  forwarder.close();
  process.exit(0);
});
