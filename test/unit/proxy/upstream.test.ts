// The proxy's forwarder (src/proxy/upstream.ts) against real loopback upstreams: Bun.serve apps,
// and raw TCP servers that answer exactly the bytes a test gives them (framing and smuggling cases).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import type { Server, Socket, TCPSocketListener } from "bun";
import { createForwarder, UpstreamProtocolError, UpstreamUnavailable, type Forwarder, type ForwardRequest } from "../../../src/proxy/upstream";

const forwarders: Forwarder[] = [];
const servers: { stop(force?: boolean): unknown }[] = [];
afterEach(() => {
  for (const forwarder of forwarders.splice(0)) forwarder.close();
});
afterAll(() => {
  for (const server of servers.splice(0)) server.stop(true);
});

function forwarder(options: Parameters<typeof createForwarder>[0] = {}): Forwarder {
  const made = createForwarder(options);
  forwarders.push(made);
  return made;
}

function get(pathAndQuery = "/", init: Partial<ForwardRequest> = {}): ForwardRequest {
  return { method: "GET", pathAndQuery, headers: new Headers({ host: "app.localhost" }), body: null, ...init };
}

/** A Bun.serve upstream; `ports` collects the client port of every request (one per upstream connection). */
function app(fetch: (request: Request, server: Server<undefined>) => Response | Promise<Response>) {
  const ports = new Set<number>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    maxRequestBodySize: 1024 * 1024 * 1024,
    fetch(request, server) {
      ports.add(server.requestIP(request)!.port);
      return fetch(request, server);
    },
  });
  servers.push(server);
  return { upstream: { host: "127.0.0.1", port: server.port! }, ports, server };
}

/**
 * A raw TCP upstream: `answer` gets each request head (the text up to the blank line) and the
 * socket, and writes whatever bytes it likes. Request bodies are not parsed.
 */
function raw(answer: (head: string, socket: Socket<{ buffer: string }>, index: number) => void) {
  let connections = 0;
  let requests = 0;
  const listener: TCPSocketListener<{ buffer: string }> = Bun.listen<{ buffer: string }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        connections++;
        socket.data = { buffer: "" };
      },
      data(socket, chunk) {
        socket.data.buffer += chunk.toString("latin1");
        for (let end = socket.data.buffer.indexOf("\r\n\r\n"); end >= 0; end = socket.data.buffer.indexOf("\r\n\r\n")) {
          const head = socket.data.buffer.slice(0, end);
          socket.data.buffer = socket.data.buffer.slice(end + 4);
          answer(head, socket, requests++);
        }
      },
    },
  });
  servers.push(listener);
  return {
    upstream: { host: "127.0.0.1", port: listener.port },
    get connections() {
      return connections;
    },
  };
}

async function bytesOf(body: ReadableStream<Uint8Array> | null): Promise<number> {
  let total = 0;
  if (!body) return 0;
  for await (const chunk of body) total += chunk.byteLength;
  return total;
}

function generated(totalBytes: number, chunkBytes = 64 * 1024): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(chunkBytes).fill(120);
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= totalBytes) return controller.close();
      const size = Math.min(chunkBytes, totalBytes - sent);
      sent += size;
      controller.enqueue(size === chunkBytes ? chunk.slice() : chunk.slice(0, size));
    },
  });
}

const rssMegabytes = () => {
  Bun.gc(true);
  return process.memoryUsage.rss() / 1024 / 1024;
};

describe("socket-pool forwarder", () => {
  test("a plain GET: status, headers and body; hop-by-hop headers dropped both ways", async () => {
    let seen: Headers | undefined;
    const { upstream } = app((request) => {
      seen = request.headers;
      return new Response("hello", { headers: { "x-app": "1", "keep-alive": "timeout=5", "content-type": "text/plain" } });
    });
    const headers = new Headers({ host: "shop.localhost", "x-forwarded-for": "10.0.0.1", connection: "keep-alive, x-secret", "x-secret": "s", te: "trailers" });
    const response = await forwarder().forward(upstream, get("/cart?x=1", { headers }));
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("hello");
    expect(response.headers.get("x-app")).toBe("1");
    expect(response.headers.get("content-length")).toBe("5");
    expect(response.headers.has("keep-alive")).toBe(false);
    expect(seen!.get("host")).toBe("shop.localhost");
    expect(seen!.get("x-forwarded-for")).toBe("10.0.0.1");
    expect(seen!.has("x-secret")).toBe(false);
    expect(seen!.has("te")).toBe(false);
  });

  test("keep-alive: sequential requests share one upstream connection, concurrent ones are pooled", async () => {
    const { upstream, ports } = app(() => new Response("ok"));
    const proxy = forwarder();
    for (let i = 0; i < 50; i++) expect(await (await proxy.forward(upstream, get())).text()).toBe("ok");
    expect(ports.size).toBe(1);
    ports.clear();
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => proxy.forward(upstream, get()).then((response) => response.text())));
      expect(answers.every((text) => text === "ok")).toBe(true);
    }
    expect(ports.size).toBeLessThanOrEqual(21);
    expect(ports.size).toBeGreaterThan(1);
  });

  test("maxSocketsPerUpstream bounds the connections; the others wait their turn", async () => {
    const { upstream, ports } = app(async () => {
      await Bun.sleep(5);
      return new Response("ok");
    });
    const proxy = forwarder({ maxSocketsPerUpstream: 4 });
    const answers = await Promise.all(Array.from({ length: 40 }, () => proxy.forward(upstream, get()).then((response) => response.text())));
    expect(answers.filter((text) => text === "ok").length).toBe(40);
    expect(ports.size).toBeLessThanOrEqual(4);
  });

  test("a chunked response streams through, without Transfer-Encoding", async () => {
    const { upstream } = app(
      () =>
        new Response(
          new ReadableStream({
            async pull(controller) {
              for (let i = 0; i < 5; i++) {
                controller.enqueue(new TextEncoder().encode(`part ${i};`));
                await Bun.sleep(5);
              }
              controller.close();
            },
          }),
        ),
    );
    const response = await forwarder().forward(upstream, get());
    expect(response.headers.has("transfer-encoding")).toBe(false);
    expect(await response.text()).toBe("part 0;part 1;part 2;part 3;part 4;");
  });

  test("chunked framing split byte by byte, with extensions and trailers, then the connection is reused", async () => {
    const body = "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nx-trailer: 1\r\n\r\n";
    const upstream = raw(async (_head, socket) => {
      const bytes = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${body}`;
      for (const char of bytes) {
        socket.write(char);
        socket.flush();
        await Bun.sleep(0);
      }
    });
    const proxy = forwarder();
    expect(await (await proxy.forward(upstream.upstream, get())).text()).toBe("Wikipedia in\r\n\r\nchunks.");
    expect(await (await proxy.forward(upstream.upstream, get())).text()).toBe("Wikipedia in\r\n\r\nchunks.");
    expect(upstream.connections).toBe(1);
  });

  test("a large response body streams with flat memory", async () => {
    const size = 256 * 1024 * 1024;
    const { upstream } = app(() => new Response(generated(size), { headers: { "content-length": String(size) } }));
    const before = rssMegabytes();
    const response = await forwarder().forward(upstream, get());
    expect(await bytesOf(response.body)).toBe(size);
    expect(rssMegabytes() - before).toBeLessThan(96);
  });

  test("a large request body streams with flat memory, with and without Content-Length", async () => {
    const size = 256 * 1024 * 1024;
    const { upstream } = app(async (request) => new Response(String(await bytesOf(request.body))));
    const proxy = forwarder();
    const before = rssMegabytes();
    const chunked = await proxy.forward(upstream, get("/upload", { method: "POST", body: generated(size) }));
    expect(chunked.status).toBe(200);
    expect(await chunked.text()).toBe(String(size));
    const headers = new Headers({ host: "app.localhost", "content-length": String(size) });
    const sized = await proxy.forward(upstream, get("/upload", { method: "PUT", headers, body: generated(size) }));
    expect(await sized.text()).toBe(String(size));
    expect(rssMegabytes() - before).toBeLessThan(96);
  });

  test("an echo of a large body both ways at once", async () => {
    const size = 64 * 1024 * 1024;
    const { upstream } = app((request) => new Response(request.body));
    const response = await forwarder().forward(upstream, get("/echo", { method: "POST", body: generated(size) }));
    expect(await bytesOf(response.body)).toBe(size);
  });

  test("a client reading slowly pauses the upstream instead of buffering its body", async () => {
    const size = 128 * 1024 * 1024;
    const { upstream } = app(() => new Response(generated(size), { headers: { "content-length": String(size) } }));
    const before = rssMegabytes();
    const response = await forwarder().forward(upstream, get());
    const reader = response.body!.getReader();
    await reader.read();
    await Bun.sleep(500);
    // Without backpressure the whole body would be in memory by now.
    expect(rssMegabytes() - before).toBeLessThan(48);
    let total = 0;
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) total += chunk.value.byteLength;
    expect(total).toBeGreaterThan(size - 1024 * 1024);
  });

  test("the upstream closing mid-response errors the body, and the connection is not reused", async () => {
    const upstream = raw((_head, socket, index) => {
      if (index === 0) {
        socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
        setTimeout(() => socket.end(), 20);
      } else socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    });
    const proxy = forwarder();
    const response = await proxy.forward(upstream.upstream, get());
    expect(response.text()).rejects.toThrow();
    await Bun.sleep(50);
    expect(await (await proxy.forward(upstream.upstream, get())).text()).toBe("ok");
    expect(upstream.connections).toBe(2);
  });

  test("a response without Content-Length or chunking ends at the close", async () => {
    const upstream = raw((_head, socket) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end");
      setTimeout(() => socket.end(), 20);
    });
    const response = await forwarder().forward(upstream.upstream, get());
    expect(await response.text()).toBe("until the end");
  });

  test("the upstream closing before a response head: UpstreamUnavailable", async () => {
    const upstream = raw((_head, socket) => socket.end());
    expect(forwarder().forward(upstream.upstream, get("/", { method: "POST", body: generated(10) }))).rejects.toBeInstanceOf(UpstreamUnavailable);
  });

  test("connection refused: UpstreamUnavailable", async () => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    const error = await forwarder().forward({ host: "127.0.0.1", port }, get()).catch((caught) => caught);
    expect(error).toBeInstanceOf(UpstreamUnavailable);
    expect(error.message).toContain(`127.0.0.1:${port}`);
  });

  test("HEAD, 204 and 304 have no body, and the connection stays usable", async () => {
    const { upstream, ports } = app((request) => {
      const path = new URL(request.url).pathname;
      if (path === "/204") return new Response(null, { status: 204 });
      if (path === "/304") return new Response(null, { status: 304, headers: { etag: '"v1"' } });
      return new Response("x".repeat(1234));
    });
    const proxy = forwarder();
    const head = await proxy.forward(upstream, get("/", { method: "HEAD" }));
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("1234");
    expect(head.body).toBeNull();
    const noContent = await proxy.forward(upstream, get("/204"));
    expect(noContent.status).toBe(204);
    expect(noContent.body).toBeNull();
    const notModified = await proxy.forward(upstream, get("/304"));
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get("etag")).toBe('"v1"');
    expect(notModified.body).toBeNull();
    expect((await (await proxy.forward(upstream, get("/"))).text()).length).toBe(1234);
    expect(ports.size).toBe(1);
  });

  test("a 304 with a Content-Length from a raw upstream has no body either", async () => {
    const upstream = raw((_head, socket, index) =>
      socket.write(index === 0 ? "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\nETag: x\r\n\r\n" : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
    );
    const proxy = forwarder();
    const response = await proxy.forward(upstream.upstream, get());
    expect(response.status).toBe(304);
    expect(response.body).toBeNull();
    expect(await (await proxy.forward(upstream.upstream, get())).text()).toBe("ok");
    expect(upstream.connections).toBe(1);
  });

  test("gzip passes through compressed, with its Content-Encoding", async () => {
    const text = "compress me ".repeat(1000);
    const gzipped = gzipSync(text);
    const { upstream } = app(() => new Response(gzipped, { headers: { "content-encoding": "gzip", "content-type": "text/plain" } }));
    const response = await forwarder().forward(upstream, get("/", { headers: new Headers({ host: "a.localhost", "accept-encoding": "gzip" }) }));
    expect(response.headers.get("content-encoding")).toBe("gzip");
    expect(response.headers.get("content-length")).toBe(String(gzipped.byteLength));
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect(Buffer.from(bytes).equals(gzipped)).toBe(true);
  });

  test("redirects are returned, not followed", async () => {
    const { upstream } = app(() => new Response(null, { status: 302, headers: { location: "/elsewhere" } }));
    const response = await forwarder().forward(upstream, get());
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/elsewhere");
  });

  test("informational 1xx responses are skipped", async () => {
    const upstream = raw((_head, socket) => socket.write("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    const response = await forwarder().forward(upstream.upstream, get());
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("ok");
  });

  test("an aborted request closes its upstream connection", async () => {
    const upstream = raw((_head, socket) => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial"));
    const controller = new AbortController();
    const response = await forwarder().forward(upstream.upstream, get(), controller.signal);
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    expect(reader.read()).rejects.toThrow();
  });

  test("a pooled connection the upstream closed is replaced for a request without a body", async () => {
    const upstream = raw((_head, socket) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      socket.flush();
      // Closed right away, as an upstream with a short keep-alive timeout does.
      setTimeout(() => socket.end(), 1);
    });
    const proxy = forwarder();
    for (let i = 0; i < 5; i++) expect(await (await proxy.forward(upstream.upstream, get())).text()).toBe("ok");
  });

  test("invalid method or request target is refused before anything is sent", async () => {
    const upstream = raw(() => {});
    expect(forwarder().forward(upstream.upstream, get("/a b"))).rejects.toThrow(TypeError);
    expect(forwarder().forward(upstream.upstream, get("/", { method: "GET /x HTTP/1.1\r\n" }))).rejects.toThrow(TypeError);
    expect(upstream.connections).toBe(0);
  });
});

describe("response smuggling: ambiguous framing is refused and the connection dropped", () => {
  const refused = async (answer: string) => {
    const upstream = raw((_head, socket, index) => socket.write(index === 0 ? answer : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    const proxy = forwarder();
    const error = await proxy.forward(upstream.upstream, get()).catch((caught) => caught);
    expect(error).toBeInstanceOf(UpstreamProtocolError);
    expect(error).toBeInstanceOf(UpstreamUnavailable);
    // The next request gets a new connection, not what followed on the refused one.
    expect(await (await proxy.forward(upstream.upstream, get())).text()).toBe("ok");
    expect(upstream.connections).toBe(2);
  };

  test("both Content-Length and Transfer-Encoding", () =>
    refused("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil"));
  test("duplicate conflicting Content-Length", () => refused("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\nok"));
  test("a Content-Length list with different values", () => refused("HTTP/1.1 200 OK\r\nContent-Length: 2, 40\r\n\r\nok"));
  test("a non-numeric Content-Length", () => refused("HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok"));
  test("a transfer coding other than chunked", () => refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"));
  test("Transfer-Encoding in an HTTP/1.0 response", () => refused("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
  test("obsolete line folding", () => refused("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\nok"));
  test("a malformed status line", () => refused("HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok"));

  test("identical duplicate Content-Lengths are accepted as one", async () => {
    const upstream = raw((_head, socket) => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"));
    const response = await forwarder().forward(upstream.upstream, get());
    expect(response.headers.get("content-length")).toBe("2");
    expect(await response.text()).toBe("ok");
  });

  test("an invalid chunk size errors the body", async () => {
    const upstream = raw((_head, socket) => socket.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nzz\r\n"));
    const response = await forwarder().forward(upstream.upstream, get());
    expect(response.text()).rejects.toThrow();
  });

  test("bytes past the end of a response are not taken as the next response", async () => {
    const upstream = raw((_head, socket, index) =>
      socket.write(index === 0 ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil" : "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood"),
    );
    const proxy = forwarder();
    expect(await (await proxy.forward(upstream.upstream, get())).text()).toBe("ok");
    expect(await (await proxy.forward(upstream.upstream, get())).text()).toBe("good");
    expect(upstream.connections).toBe(2);
  });

  test("a body after a HEAD response is not taken as the next response", async () => {
    const upstream = raw((_head, socket, index) =>
      socket.write(index === 0 ? "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil" : "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood"),
    );
    const proxy = forwarder();
    expect((await proxy.forward(upstream.upstream, get("/", { method: "HEAD" }))).body).toBeNull();
    expect(await (await proxy.forward(upstream.upstream, get())).text()).toBe("good");
    expect(upstream.connections).toBe(2);
  });
});

describe("fetch strategy (the former behaviour)", () => {
  test("streams, keeps gzip and does not follow redirects", async () => {
    const gzipped = gzipSync("z".repeat(5000));
    const { upstream } = app((request) =>
      new URL(request.url).pathname === "/r" ? new Response(null, { status: 301, headers: { location: "/x" } }) : new Response(gzipped, { headers: { "content-encoding": "gzip" } }),
    );
    const proxy = forwarder({ strategy: "fetch" });
    const response = await proxy.forward(upstream, get());
    expect(Buffer.from(await response.arrayBuffer()).equals(gzipped)).toBe(true);
    expect((await proxy.forward(upstream, get("/r"))).status).toBe(301);
  });

  test("connection refused: UpstreamUnavailable", async () => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    expect(forwarder({ strategy: "fetch" }).forward({ host: "127.0.0.1", port }, get())).rejects.toBeInstanceOf(UpstreamUnavailable);
  });
});


describe("idle connections", () => {
  test("are closed after idleTimeoutMs", async () => {
    let closed = 0;
    const listener = Bun.listen<{ buffer: string }>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open(socket) {
          socket.data = { buffer: "" };
        },
        data(socket, chunk) {
          socket.data.buffer += chunk.toString("latin1");
          if (socket.data.buffer.includes("\r\n\r\n")) {
            socket.data.buffer = "";
            socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
          }
        },
        close() {
          closed++;
        },
      },
    });
    servers.push(listener);
    const proxy = forwarder({ idleTimeoutMs: 200 });
    await Promise.all(Array.from({ length: 3 }, () => proxy.forward({ host: "127.0.0.1", port: listener.port }, get()).then((response) => response.text())));
    expect(closed).toBe(0);
    await Bun.sleep(500);
    expect(closed).toBe(3);
  });
});
