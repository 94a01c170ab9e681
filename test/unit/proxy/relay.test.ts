// The public proxy end to end on loopback (src/proxy/server.ts and its relay): a client (raw TCP,
// fetch) through startProxy to apps made here, Bun.serve ones and raw TCP ones that answer exact
// bytes. Framing, keep-alive, streaming and backpressure, the proxy's own answers, the forwarded
// headers, the timeouts, the connection limit per address and a graceful stop.
import { afterEach, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { parseCidrList } from "../../../src/http/trusted-proxies";
import { RawConnection, rawRequest, requestHead, type RawResponse } from "../../helpers/raw-http";
import { ProxyHarness, hostOf, rssMegabytes, settled, until, type RawAppConnection, type TestProxy } from "../../helpers/proxy-harness";

const harness = new ProxyHarness();
afterEach(() => harness.cleanup());

const HOST = hostOf("shop");
const OK = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/** A raw client connection to the proxy, closed at cleanup. */
async function open(proxy: TestProxy, localAddress?: string): Promise<RawConnection> {
  const connection = await RawConnection.open(proxy.port, localAddress);
  harness.onCleanup(() => connection.close());
  return connection;
}

/** Sends a request on `connection` and reads its response. */
async function exchange(connection: RawConnection, method: string, path: string, headers: Record<string, string> = {}, body?: string, host = HOST): Promise<RawResponse> {
  await connection.write(requestHead(method, path, host, headers, body === undefined ? undefined : Buffer.byteLength(body)) + (body ?? ""));
  return connection.readResponse({ method, timeoutMs: 5000 });
}

/** A proxy with one raw app routed at `shop`. */
function rawSetup(answer: Parameters<ProxyHarness["rawApp"]>[0], settings?: Parameters<ProxyHarness["proxy"]>[0]) {
  const app = harness.rawApp(answer);
  const proxy = harness.proxy(settings);
  proxy.route("shop", app.upstream);
  return { app, proxy };
}

/** A proxy with one Bun.serve app routed at `shop`. */
function appSetup(handler: Parameters<ProxyHarness["app"]>[0], settings?: Parameters<ProxyHarness["proxy"]>[0]) {
  const app = harness.app(handler);
  const proxy = harness.proxy(settings);
  proxy.route("shop", app.upstream);
  return { app, proxy };
}

/** The value of a header line in a raw head, or null. */
function field(head: string, name: string): string | null {
  const values = head
    .split("\r\n")
    .slice(1)
    .filter((line) => line.slice(0, line.indexOf(":")).toLowerCase() === name)
    .map((line) => line.slice(line.indexOf(":") + 1).trim());
  if (values.length > 1) throw new Error(`${name} given ${values.length} times in ${JSON.stringify(head)}`);
  return values[0] ?? null;
}

const contentLengthOf = (head: string) => Number(field(head, "content-length") ?? 0);

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

async function bytesOf(body: ReadableStream<Uint8Array> | null): Promise<number> {
  let total = 0;
  if (body) for await (const chunk of body) total += chunk.byteLength;
  return total;
}

/** A promise and its resolver. */
function signal() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return { release, released };
}

describe("forwarding", () => {
  test("a plain GET: status, headers and body; hop-by-hop headers and those Connection names dropped both ways", async () => {
    const { app, proxy } = rawSetup((_head, connection) =>
      connection.write(
        "HTTP/1.1 200 Fine\r\nContent-Type: text/plain\r\nKeep-Alive: timeout=5\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n" +
          "Proxy-Authenticate: Basic\r\nTrailer: X-T\r\nX-App: 1\r\nContent-Length: 5\r\n\r\nhello",
      ),
    );
    const client = await open(proxy);
    const response = await exchange(client, "GET", "/cart?x=1", {
      Connection: "keep-alive, X-Secret",
      "X-Secret": "s",
      TE: "trailers",
      "Keep-Alive": "timeout=9",
      "Proxy-Connection": "keep-alive",
      "Proxy-Authorization": "Basic eA==",
      "X-Kept": "k",
    });
    const head = app.heads[0]!;
    expect(head.split("\r\n")[0]).toBe("GET /cart?x=1 HTTP/1.1");
    expect(field(head, "host")).toBe(HOST);
    expect(field(head, "x-kept")).toBe("k");
    for (const name of ["x-secret", "te", "keep-alive", "proxy-connection", "proxy-authorization", "connection"]) expect(field(head, name)).toBeNull();

    expect(response.status).toBe(200);
    expect(response.text()).toBe("hello");
    expect(response.headers.get("x-app")).toBe("1");
    expect(response.headers.get("content-type")).toBe("text/plain");
    expect(response.headers.get("content-length")).toBe("5");
    for (const name of ["keep-alive", "x-hop", "proxy-authenticate", "trailer", "connection"]) expect(response.headers.has(name)).toBe(false);
    expect(response.headers.get("x-request-id")).toBe(field(head, "x-request-id"));
    // The connection goes on.
    expect((await exchange(client, "GET", "/again")).text()).toBe("hello");
    expect(app.connections.length).toBe(1);
  });

  test("obs-text in header values passes byte for byte both ways", async () => {
    const { app, proxy } = rawSetup((_head, connection) => connection.write(Buffer.from("HTTP/1.1 200 OK\r\nX-Answer: caf\xe9\r\nContent-Length: 2\r\n\r\nok", "latin1")));
    const client = await open(proxy);
    await client.write(Buffer.from(`${requestHead("GET", "/", HOST, { "X-Name": "Jos\xe9" })}`, "latin1"));
    await until(() => client.unread().endsWith("\r\n\r\nok"), "the answer");
    expect(client.unread()).toContain("\r\nX-Answer: caf\xe9\r\n");
    expect(app.heads[0]).toContain("\r\nX-Name: Jos\xe9");
  });

  test("heads larger than the proxy's 32 KiB write buffer pass whole both ways, the connection reused after", async () => {
    const big = "b".repeat(40 * 1024);
    const { app, proxy } = rawSetup((_head, connection) => connection.write(`HTTP/1.1 200 OK\r\nX-Big: ${big}\r\nContent-Length: 2\r\n\r\nok`));
    const client = await open(proxy);
    const first = await exchange(client, "GET", "/", { "X-Sent": big });
    expect(first.status).toBe(200);
    expect(first.headers.get("x-big")).toBe(big);
    expect(first.body.toString()).toBe("ok");
    expect(field(app.heads[0]!, "x-sent")).toBe(big);
    expect((await exchange(client, "GET", "/again")).headers.get("x-big")).toBe(big);
  });

  test("keep-alive: requests reuse the app's connections, one after the other and side by side", async () => {
    const { app, proxy } = appSetup(() => new Response("ok"));
    const client = await open(proxy);
    for (let i = 0; i < 30; i++) expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    expect(app.ports.size).toBe(1);
    // Another client connection for each request: the app connection is the proxy's, not the client's.
    for (let i = 0; i < 10; i++) expect((await rawRequest(proxy.port, HOST, "/")).text()).toBe("ok");
    expect(app.ports.size).toBe(1);
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => rawRequest(proxy.port, HOST, "/").then((response) => response.text())));
      expect(answers.every((text) => text === "ok")).toBe(true);
    }
    expect(app.ports.size).toBeGreaterThan(1);
    expect(app.ports.size).toBeLessThanOrEqual(21);
  });

  test("a head byte for byte the same as the last one on the connection is answered as its own request, and one differing in a byte as another", async () => {
    const { app, proxy } = rawSetup((head, connection) => {
      const path = head.slice(head.indexOf(" ") + 1, head.indexOf(" HTTP/"));
      return connection.write(`HTTP/1.1 200 OK\r\nContent-Length: ${path.length}\r\n\r\n${head.startsWith("HEAD ") ? "" : path}`);
    });
    const client = await open(proxy);
    const answers: string[] = [];
    for (const path of ["/a", "/a", "/a", "/b", "/a", "/ab"]) answers.push((await exchange(client, "GET", path)).text());
    expect(answers).toEqual(["/a", "/a", "/a", "/b", "/a", "/ab"]);
    // Each got a request id of its own, and a HEAD after the same GET head is still a HEAD.
    const ids = app.heads.map((head) => field(head, "x-request-id"));
    expect(new Set(ids).size).toBe(6);
    const head = await exchange(client, "HEAD", "/a");
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("2");
    expect((await exchange(client, "GET", "/a")).text()).toBe("/a");
    expect(client.unread()).toBe("");
    expect(app.connections.length).toBe(1);
  });

  test("a response head the same as the app's last is framed by the request it answers; one that differs in its length is read anew", async () => {
    const answers = [OK, OK, OK, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc", OK];
    const { app, proxy } = rawSetup((head, connection, index) => connection.write(head.startsWith("HEAD ") ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" : answers[index]!));
    const client = await open(proxy);
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    const head = await exchange(client, "HEAD", "/");
    expect(head.headers.get("content-length")).toBe("2");
    expect(head.text()).toBe("");
    expect((await exchange(client, "GET", "/")).text()).toBe("abc");
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    expect(client.unread()).toBe("");
    expect(app.connections.length).toBe(1);
  });

  test("a chunked response streams through as it comes, its framing untouched", async () => {
    const gotFirst = signal();
    const { proxy } = rawSetup(async (_head, connection) => {
      connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\npart 1;\r\n");
      await gotFirst.released;
      connection.write("7\r\npart 2;\r\n0\r\n\r\n");
    });
    const client = await open(proxy);
    await client.write(requestHead("GET", "/", HOST));
    let body = "";
    const response = await client.readResponse({
      timeoutMs: 3000,
      onBody: (piece) => {
        body += piece.toString();
        if (body === "part 1;") gotFirst.release();
      },
    });
    expect(response.headers.get("transfer-encoding")).toBe("chunked");
    expect(body).toBe("part 1;part 2;");
  });

  test("chunked framing split byte by byte, with extensions and trailers, passes unchanged; then the app connection is reused", async () => {
    const BODY = "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: 1\r\n\r\n";
    const { app, proxy } = rawSetup(async (_head, connection) => {
      for (const character of `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${BODY}`) {
        connection.write(character);
        await Bun.sleep(0);
      }
    });
    const client = await open(proxy);
    for (let round = 0; round < 2; round++) {
      await client.write(requestHead("GET", "/", HOST));
      await until(() => client.unread().endsWith(BODY), "the whole chunked body");
      expect(client.unread().indexOf(BODY)).toBe(client.unread().indexOf("\r\n\r\n") + 4);
      expect((await client.readResponse()).text()).toBe("Wikipedia in\r\n\r\nchunks.");
    }
    expect(app.connections.length).toBe(1);
  });

  test("gzip passes through compressed, with its Content-Encoding and Length", async () => {
    const gzipped = gzipSync("compress me ".repeat(1000));
    const { proxy } = appSetup((request) =>
      request.headers.get("accept-encoding") === "gzip" ? new Response(gzipped, { headers: { "content-encoding": "gzip", "content-type": "text/plain" } }) : new Response("plain"),
    );
    const response = await exchange(await open(proxy), "GET", "/", { "Accept-Encoding": "gzip" });
    expect(response.headers.get("content-encoding")).toBe("gzip");
    expect(response.headers.get("content-length")).toBe(String(gzipped.byteLength));
    expect(response.body.equals(gzipped)).toBe(true);
  });

  test("redirects are passed on, not followed", async () => {
    let followed = 0;
    const { proxy } = appSetup((request) => {
      if (new URL(request.url).pathname === "/elsewhere") followed++;
      return new URL(request.url).pathname === "/" ? new Response(null, { status: 302, headers: { location: "/elsewhere" } }) : new Response("there");
    });
    const response = await exchange(await open(proxy), "GET", "/");
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/elsewhere");
    expect(followed).toBe(0);
  });

  test("request pipelining: two requests in one write are answered in order, the first one's body included", async () => {
    const { app, proxy } = appSetup(async (request) => {
      const path = new URL(request.url).pathname;
      if (path === "/slow") await Bun.sleep(50);
      return new Response(`${path}:${await request.text()}`);
    });
    const client = await open(proxy);
    await client.write(requestHead("GET", "/slow", HOST) + requestHead("GET", "/fast", HOST) + requestHead("POST", "/post", HOST, {}, 5) + "hello" + requestHead("GET", "/last", HOST));
    expect((await client.readResponse()).text()).toBe("/slow:");
    expect((await client.readResponse()).text()).toBe("/fast:");
    expect((await client.readResponse()).text()).toBe("/post:hello");
    expect((await client.readResponse()).text()).toBe("/last:");
    expect(app.ports.size).toBe(1);
  });

  test("Connection: close, or HTTP/1.0 without keep-alive: the answer says so and the connection closes; what follows is not read", async () => {
    const { app, proxy } = rawSetup((_head, connection) => connection.write(OK));
    const client = await open(proxy);
    await client.write(requestHead("GET", "/first", HOST, { Connection: "close" }) + requestHead("GET", "/second", HOST));
    const response = await client.readResponse();
    expect(response.headers.get("connection")).toBe("close");
    expect(await client.closedWithin(1000)).not.toBeNull();
    expect(client.unread()).toBe("");

    const old = await open(proxy);
    await old.write(`GET /old HTTP/1.0\r\nHost: ${HOST}\r\n\r\n`);
    expect((await old.readResponse()).headers.get("connection")).toBe("close");
    expect(await old.closedWithin(1000)).not.toBeNull();
    expect(app.heads.map((head) => head.split("\r\n")[0])).toEqual(["GET /first HTTP/1.1", "GET /old HTTP/1.1"]);
    expect(field(app.heads[1]!, "host")).toBe(HOST);
  });

  test("an answer before the whole request body: the client is told Connection: close, and the app connection is not reused", async () => {
    const { app, proxy } = rawSetup((head, connection) => connection.write(head.startsWith("PUT") ? "HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\n\r\ntoo much" : OK));
    const client = await open(proxy);
    await client.write(requestHead("PUT", "/upload", HOST, {}, 10 * 1024 * 1024) + "x".repeat(1000));
    const response = await client.readResponse();
    expect(response.status).toBe(413);
    expect(response.text()).toBe("too much");
    expect(response.headers.get("connection")).toBe("close");
    expect(await client.closedWithin(1000)).not.toBeNull();
    expect((await rawRequest(proxy.port, HOST, "/")).text()).toBe("ok");
    expect(app.connections.length).toBe(2);
  });

  test("a client that goes away mid-answer closes its app connection, which is not reused", async () => {
    const { app, proxy } = rawSetup((_head, connection, index) => connection.write(index === 0 ? "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart" : OK));
    const client = await open(proxy);
    await client.write(requestHead("GET", "/", HOST));
    await until(() => client.unread().endsWith("part"), "the first part");
    client.close();
    await until(() => app.connections[0]!.closed, "the app connection to close", 2000);
    expect((await rawRequest(proxy.port, HOST, "/")).text()).toBe("ok");
    expect(app.connections.length).toBe(2);
  });

  test("a large response body streams with flat memory", async () => {
    const size = 256 * 1024 * 1024;
    const { proxy } = appSetup(() => new Response(generated(size), { headers: { "content-length": String(size) } }));
    const before = rssMegabytes();
    const response = await proxy.fetch("shop");
    expect(await bytesOf(response.body)).toBe(size);
    expect(rssMegabytes() - before).toBeLessThan(96);
  });

  test("a large request body streams with flat memory, chunked and with a Content-Length", async () => {
    const size = 128 * 1024 * 1024;
    const { proxy } = appSetup(async (request) => new Response(`${request.headers.get("transfer-encoding") ?? "sized"} ${await bytesOf(request.body)}`));
    const before = rssMegabytes();
    const chunked = await proxy.fetch("shop", "/upload", { method: "POST", body: generated(size) });
    expect(await chunked.text()).toBe(`chunked ${size}`);

    const client = await open(proxy);
    await client.write(requestHead("PUT", "/upload", HOST, {}, size));
    const piece = new Uint8Array(64 * 1024).fill(121);
    for (let sent = 0; sent < size; sent += piece.byteLength) await client.write(piece);
    expect((await client.readResponse()).text()).toBe(`sized ${size}`);
    expect(rssMegabytes() - before).toBeLessThan(96);
  });

  test("a request body that arrives before the app connection is made is sent on", async () => {
    const size = 1024 * 1024;
    const { proxy } = appSetup(async (request) => new Response(String((await request.arrayBuffer()).byteLength)));
    // One write, many TCP segments: they reach the proxy while it still connects to the app.
    const response = await exchange(await open(proxy), "POST", "/", {}, "x".repeat(size));
    expect(response.text()).toBe(String(size));
  });

  test("a large body echoed both ways at once", async () => {
    const size = 64 * 1024 * 1024;
    const { proxy } = appSetup((request) => (request.method === "POST" ? new Response(request.body) : new Response("ready")));
    const client = await open(proxy);
    // The app connection is made first (the test above covers a body that comes before it).
    expect((await exchange(client, "GET", "/")).text()).toBe("ready");
    await client.write(requestHead("POST", "/echo", HOST, {}, size));
    const piece = new Uint8Array(64 * 1024).fill(122);
    const sending = (async () => {
      for (let sent = 0; sent < size; sent += piece.byteLength) await client.write(piece);
    })();
    sending.catch(() => {});
    let received = 0;
    await client.readResponse({ timeoutMs: 10_000, onBody: (bytes) => (received += bytes.length) });
    await sending;
    expect(received).toBe(size);
  });

  test("a client that does not read holds the app back, instead of the proxy buffering the body", async () => {
    const size = 512 * 1024 * 1024;
    let appConnection: RawAppConnection | undefined;
    const { proxy } = rawSetup(async (_head, connection) => {
      appConnection = connection;
      connection.write(`HTTP/1.1 200 OK\r\nContent-Length: ${size}\r\n\r\n`);
      const piece = new Uint8Array(256 * 1024).fill(97);
      for (let sent = 0; sent < size; sent += piece.byteLength) if (!(await connection.send(piece))) return;
    });
    const client = await open(proxy);
    const before = rssMegabytes();
    await client.write(requestHead("GET", "/", HOST));
    client.pause();
    await until(() => appConnection !== undefined, "the request to reach the app");
    const held = await settled(() => appConnection!.sent, 300);
    // What the socket buffers of both hops hold (loopback autotuning lets them grow to tens of MB), not the body.
    expect(held).toBeLessThan(size / 4);
    expect(rssMegabytes() - before).toBeLessThan(48);

    let received = 0;
    client.resume();
    await client.readResponse({ timeoutMs: 20_000, onBody: (bytes) => (received += bytes.length) });
    expect(received).toBe(size);
  });

  test("the app closing mid-response closes the client's connection; the next request gets a new app connection", async () => {
    const { app, proxy } = rawSetup((_head, connection, index) => {
      if (index === 0) {
        connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
        connection.end();
      } else if (index === 1) {
        connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
        connection.end();
      } else connection.write(OK);
    });
    for (let round = 0; round < 2; round++) {
      const client = await open(proxy);
      await client.write(requestHead("GET", "/", HOST));
      expect(client.readResponse({ timeoutMs: 3000 })).rejects.toThrow(/connection closed/);
      expect(await client.closedWithin(3000)).not.toBeNull();
    }
    expect((await rawRequest(proxy.port, HOST, "/")).text()).toBe("ok");
    expect(app.connections.length).toBe(3);
  });

  test("a response framed by the close ends at the app's close, and closes the client's connection", async () => {
    const { app, proxy } = rawSetup((_head, connection, index) => {
      if (index > 0) return connection.write(OK);
      connection.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end");
      connection.end();
    });
    const client = await open(proxy);
    const response = await exchange(client, "GET", "/");
    expect(response.text()).toBe("until the end");
    expect(response.headers.get("connection")).toBe("close");
    expect(response.headers.has("transfer-encoding")).toBe(false);
    expect(await client.closedWithin(2000)).not.toBeNull();
    expect((await rawRequest(proxy.port, HOST, "/")).text()).toBe("ok");
    expect(app.connections.length).toBe(2);
  });

  test("HEAD, 204 and 304 have no body, and both connections stay usable", async () => {
    const { app, proxy } = appSetup((request) => {
      const path = new URL(request.url).pathname;
      if (path === "/204") return new Response(null, { status: 204 });
      if (path === "/304") return new Response(null, { status: 304, headers: { etag: '"v1"' } });
      return new Response("x".repeat(1234));
    });
    const client = await open(proxy);
    const head = await exchange(client, "HEAD", "/");
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("1234");
    expect((await exchange(client, "GET", "/204")).status).toBe(204);
    const notModified = await exchange(client, "GET", "/304");
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get("etag")).toBe('"v1"');
    expect(client.unread()).toBe("");
    expect((await exchange(client, "GET", "/")).text().length).toBe(1234);
    expect(client.unread()).toBe("");
    expect(app.ports.size).toBe(1);
  });

  test("a 304 with a Content-Length from a raw app has no body either", async () => {
    const { app, proxy } = rawSetup((_head, connection, index) => connection.write(index === 0 ? "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\nETag: x\r\n\r\n" : OK));
    const client = await open(proxy);
    const response = await exchange(client, "GET", "/");
    expect(response.status).toBe(304);
    expect(response.headers.get("content-length")).toBe("50");
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    expect(client.unread()).toBe("");
    expect(app.connections.length).toBe(1);
  });

  test("1xx answers are passed on with their fields, before the final answer", async () => {
    const { proxy } = rawSetup((_head, connection) => connection.write(`HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n${OK}`));
    const client = await open(proxy);
    await client.write(requestHead("GET", "/", HOST));
    await until(() => client.unread().endsWith("\r\n\r\nok"), "the final answer");
    const text = client.unread();
    expect(text.startsWith("HTTP/1.1 103 Early Hints\r\n")).toBe(true);
    expect(text.slice(0, text.indexOf("HTTP/1.1 200"))).toContain("Link: </a.css>; rel=preload\r\n");
    // An HTTP/1.0 client gets the final answer only.
    const old = await open(proxy);
    await old.write(`GET / HTTP/1.0\r\nHost: ${HOST}\r\n\r\n`);
    await until(() => old.unread().endsWith("\r\n\r\nok"), "the final answer");
    expect(old.unread().startsWith("HTTP/1.1 200 OK\r\n")).toBe(true);
  });

  test("Expect: 100-continue: the app's 100 reaches the client, which then sends its body", async () => {
    const { proxy } = rawSetup(async (head, connection) => {
      if (field(head, "expect")?.toLowerCase() === "100-continue") connection.write("HTTP/1.1 100 Continue\r\n\r\n");
      const body = (await connection.read(contentLengthOf(head))).toString();
      connection.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length + 4}\r\n\r\ngot ${body}`);
    });
    const client = await open(proxy);
    await client.write(requestHead("POST", "/", HOST, { Expect: "100-continue" }, 5));
    await until(() => client.unread().includes("HTTP/1.1 100 Continue\r\n\r\n"), "the 100 Continue", 3000);
    await client.write("hello");
    expect((await client.readResponse()).text()).toBe("got hello");
  });

  test("a pooled connection the app closed is replaced for a request without a body, not for one with a body", async () => {
    const served = new Map<RawAppConnection, number>();
    const { app, proxy } = rawSetup((head, connection) => {
      const count = served.get(connection) ?? 0;
      served.set(connection, count + 1);
      // The second request on a connection finds it closed, as an app's keep-alive timeout would.
      if (count === 1) return connection.end();
      connection.write(OK);
    });
    const client = await open(proxy);
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    expect(app.heads.length).toBe(3);
    expect(app.connections.length).toBe(2);
    const refused = await exchange(client, "POST", "/", {}, "hello");
    expect(refused.status).toBe(502);
    expect(app.heads.length).toBe(4);
  });

  test("bytes after a response's end are not taken as the next response", async () => {
    const { app, proxy } = rawSetup((_head, connection, index) =>
      connection.write(index === 0 ? `${OK}HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil` : "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood"),
    );
    const client = await open(proxy);
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    expect((await exchange(client, "GET", "/")).text()).toBe("good");
    expect(client.unread()).toBe("");
    expect(app.connections.length).toBe(2);
  });

  test("a body after a HEAD response is not taken as the next response", async () => {
    const { app, proxy } = rawSetup((_head, connection, index) =>
      connection.write(index === 0 ? "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil" : "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood"),
    );
    const client = await open(proxy);
    expect((await exchange(client, "HEAD", "/")).headers.get("content-length")).toBe("4");
    expect((await exchange(client, "GET", "/")).text()).toBe("good");
    expect(client.unread()).toBe("");
    expect(app.connections.length).toBe(2);
  });

  test("a request whose Connection names its Content-Length still reaches the app framed, one request", async () => {
    const smuggled = requestHead("GET", "/admin", HOST, { "X-Real-IP": "10.0.0.1" });
    const { app, proxy } = rawSetup(async (head, connection) => {
      const body = await connection.read(contentLengthOf(head));
      connection.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body.toString("latin1")}`);
    });
    const client = await open(proxy);
    const response = await exchange(client, "POST", "/form", { Connection: "Content-Length" }, smuggled);
    expect(response.text()).toBe(smuggled);
    await Bun.sleep(50);
    expect(app.heads.map((head) => head.split("\r\n")[0])).toEqual(["POST /form HTTP/1.1"]);
  });
});

describe("response smuggling: ambiguous framing from the app is a 502, and its connection is not reused", () => {
  const refused = async (answer: string) => {
    const { app, proxy } = rawSetup((_head, connection, index) => connection.write(index === 0 ? answer : OK));
    const client = await open(proxy);
    const response = await exchange(client, "GET", "/", { Accept: "application/json" });
    expect(response.status).toBe(502);
    expect(response.json().code).toBe("APP_NOT_ANSWERING");
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    expect(app.connections.length).toBe(2);
  };

  test("both Content-Length and Transfer-Encoding", () =>
    refused("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil"));
  test("duplicate conflicting Content-Length", () => refused("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\nok"));
  test("duplicate identical Content-Length", () => refused("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"));
  test("a Content-Length list", () => refused("HTTP/1.1 200 OK\r\nContent-Length: 2, 40\r\n\r\nok"));
  test("a non-numeric Content-Length", () => refused("HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok"));
  test("a transfer coding other than chunked", () => refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"));
  test("Transfer-Encoding in an HTTP/1.0 response", () => refused("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
  test("obsolete line folding", () => refused("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\nok"));
  test("a space before a colon", () => refused("HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok"));
  test("a control character in a value", () => refused("HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 2\r\n\r\nok"));
  test("a malformed status line", () => refused("HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok"));
  test("a 101 to a request that asked for no upgrade", () => refused("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"));

  test("a response head over 64 KiB", () => refused(`HTTP/1.1 200 OK\r\nX-Big: ${"b".repeat(70 * 1024)}\r\nContent-Length: 2\r\n\r\nok`));

  test("a malformed chunk size mid-body closes the client's connection at once", async () => {
    const { app, proxy } = rawSetup((_head, connection, index) => connection.write(index === 0 ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nzz\r\n" : OK));
    const client = await open(proxy);
    await client.write(requestHead("GET", "/", HOST));
    expect(await client.closedWithin(2000)).not.toBeNull();
    expect((await rawRequest(proxy.port, HOST, "/")).text()).toBe("ok");
    expect(app.connections.length).toBe(2);
  });
});

describe("requests the proxy refuses itself", () => {
  test("a malformed chunked request body: 400 and the connection closed, at once; the app connection is dropped", async () => {
    const { app, proxy } = rawSetup(() => {});
    const client = await open(proxy);
    await client.write(requestHead("POST", "/", HOST, { "Transfer-Encoding": "chunked" }) + "2\r\nok\r\nzz\r\n");
    const refused = await client.readResponse({ timeoutMs: 2000 });
    expect(refused.status).toBe(400);
    expect(refused.text()).toContain("BAD_REQUEST");
    expect(await client.closedWithin(1000)).not.toBeNull();

    // The same once the head and the start of the body have reached the app.
    const later = await open(proxy);
    await later.write(requestHead("POST", "/", HOST, { "Transfer-Encoding": "chunked" }) + "2\r\nok\r\n");
    await until(() => app.connections.at(-1)?.unread().endsWith("2\r\nok\r\n") ?? false, "the start of the body at the app");
    await later.write("zz\r\n");
    expect((await later.readResponse({ timeoutMs: 2000 })).status).toBe(400);
    expect(await later.closedWithin(1000)).not.toBeNull();
    await until(() => app.connections.at(-1)!.closed, "the app connection to close", 2000);
  });

  test("a malformed head: 400, and the connection is closed; too large a head: 431; HTTP/2.0: 505", async () => {
    const { app, proxy } = rawSetup((_head, connection) => connection.write(OK));
    const client = await open(proxy);
    await client.write(`GET / HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const response = await client.readResponse();
    expect(response.status).toBe(400);
    expect(response.text()).toContain("BAD_REQUEST");
    expect(await client.closedWithin(2000)).not.toBeNull();

    const large = await open(proxy);
    await large.write(`GET / HTTP/1.1\r\nHost: ${HOST}\r\nX-Big: ${"b".repeat(70 * 1024)}`);
    expect((await large.readResponse()).status).toBe(431);
    // Whole, in one write: the limit holds however the head was cut into packets.
    const whole = await open(proxy);
    await whole.write(`GET / HTTP/1.1\r\nHost: ${HOST}\r\nX-Big: ${"b".repeat(70 * 1024)}\r\n\r\n`);
    expect((await whole.readResponse()).status).toBe(431);
    expect((await rawRequest(proxy.port, HOST, "/", { headers: {} }).catch(() => null))?.status).toBe(200);
    const http2 = await open(proxy);
    await http2.write(`GET / HTTP/2.0\r\nHost: ${HOST}\r\n\r\n`);
    expect((await http2.readResponse()).status).toBe(505);
    expect(app.heads.length).toBe(1);
  });

  test("no app at the address: 404, an HTML page or JSON; the connection goes on", async () => {
    const { proxy } = rawSetup((_head, connection) => connection.write(OK));
    const client = await open(proxy);
    const page = await exchange(client, "GET", "/", {}, undefined, hostOf("nothing"));
    expect(page.status).toBe(404);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.text()).toContain("APP_NOT_FOUND");
    const json = await exchange(client, "GET", "/", { Accept: "application/json" }, undefined, "example.com");
    expect(json.status).toBe(404);
    expect(json.json()).toEqual({ success: false, error: "No app is published at this address.", code: "APP_NOT_FOUND" });
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    // With a body that is not read, the connection closes after the answer.
    const posted = await exchange(client, "POST", "/", {}, "body", hostOf("nothing"));
    expect(posted.status).toBe(404);
    expect(posted.headers.get("connection")).toBe("close");
    expect(await client.closedWithin(2000)).not.toBeNull();
  });

  test("an app that is published but not running: 503 with Retry-After", async () => {
    const proxy = harness.proxy();
    proxy.routes.setUnroutedLookup((subdomain) => (subdomain === "stopped" ? { status: "stopped" } : undefined));
    const response = await exchange(await open(proxy), "GET", "/", { Accept: "application/json" }, undefined, hostOf("stopped"));
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("30");
    expect(response.json().code).toBe("APP_UNAVAILABLE");
  });

  test("an app that is down: 502 with the request id, and the connection goes on", async () => {
    const proxy = harness.proxy();
    proxy.route("down", { host: "127.0.0.1", port: harness.closedPort() });
    const up = harness.rawApp((_head, connection) => connection.write(OK));
    proxy.route("shop", up.upstream);
    const client = await open(proxy);
    const response = await exchange(client, "GET", "/", { Accept: "application/json", "X-Request-Id": "req-502" }, undefined, hostOf("down"));
    expect(response.status).toBe(502);
    expect(response.json().code).toBe("APP_NOT_ANSWERING");
    expect(response.headers.get("x-request-id")).toBe("req-502");
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
  });

  test("an app that closes before a head, or answers no HTTP: 502", async () => {
    const { app, proxy } = rawSetup((head, connection) => {
      if (head.startsWith("GET /garbage")) return connection.write("hello\r\n\r\n");
      connection.end();
    });
    expect((await rawRequest(proxy.port, HOST, "/")).status).toBe(502);
    expect((await rawRequest(proxy.port, HOST, "/", { method: "POST", body: "hello" })).status).toBe(502);
    expect((await rawRequest(proxy.port, HOST, "/garbage")).status).toBe(502);
    // A new connection that the app closed is not retried.
    expect(app.heads.length).toBe(3);
  });

  test("over the rate limit: 429 with Retry-After and RateLimit fields; a refusal does not reach the app", async () => {
    const { app, proxy } = rawSetup((_head, connection) => connection.write(OK));
    const high = { burst: 1000, refillPerSecond: 1000 };
    proxy.route("shop", { ...app.upstream, rateLimits: { perClient: { burst: 2, refillPerSecond: 1 }, perHost: high } });
    const client = await open(proxy);
    expect((await exchange(client, "GET", "/")).status).toBe(200);
    expect((await exchange(client, "GET", "/")).status).toBe(200);
    const refused = await exchange(client, "GET", "/", { Accept: "application/json" });
    expect(refused.status).toBe(429);
    expect(refused.json().code).toBe("RATE_LIMITED");
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("ratelimit-policy")).toBe('"client";q=2;w=2');
    expect(refused.headers.get("ratelimit")).toBe('"client";r=0;t=1');
    expect(app.heads.length).toBe(2);
    expect(proxy.traffic.window("shop", 5).rateLimited).toBe(1);
    // Another address has its own bucket.
    expect((await exchange(await open(proxy, "127.0.0.2"), "GET", "/")).status).toBe(200);
  });

  test("a keep-alive connection is charged in the bucket of the app its Host reaches now, also when that changes", async () => {
    const { app, proxy } = rawSetup((_head, connection) => connection.write(OK));
    const strict = { perClient: { burst: 1, refillPerSecond: 0.001 }, perHost: { burst: 1000, refillPerSecond: 1000 } };
    proxy.route("shop", { ...app.upstream, rateLimits: strict });
    proxy.route("blog", { ...app.upstream, rateLimits: strict });
    const ownDomain = "www.example.test";
    proxy.routes.setDomain(ownDomain, "shop");
    const client = await open(proxy);
    expect((await exchange(client, "GET", "/", {}, undefined, ownDomain)).status).toBe(200);
    expect((await exchange(client, "GET", "/", {}, undefined, ownDomain)).status).toBe(429);
    // The same Host on the same connection now reaches another app: that app's bucket, full.
    proxy.routes.setDomain(ownDomain, "blog");
    expect((await exchange(client, "GET", "/", {}, undefined, ownDomain)).status).toBe(200);
    expect((await exchange(client, "GET", "/", {}, undefined, ownDomain)).status).toBe(429);
    // Another Host on it: its app's bucket.
    expect((await exchange(client, "GET", "/", {}, undefined, hostOf("shop"))).status).toBe(429);
    expect(app.heads.length).toBe(2);
  });
});

describe("forwarded headers", () => {
  const spoofed = {
    "X-Forwarded-For": "203.0.113.9",
    "X-Real-IP": "203.0.113.9",
    Forwarded: "for=203.0.113.9",
    "X-Forwarded-Host": "www.example.com",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Port": "443",
  };

  test("X-Forwarded-*, X-Real-IP and X-Request-Id are the proxy's; a client's own are replaced", async () => {
    const { app, proxy } = rawSetup((_head, connection) => connection.write("HTTP/1.1 200 OK\r\nX-Request-Id: the-apps-own\r\nContent-Length: 2\r\n\r\nok"));
    const response = await exchange(await open(proxy, "127.0.0.7"), "GET", "/", { ...spoofed, "X-Request-Id": "bad id!" });
    const head = app.heads[0]!;
    expect(field(head, "x-forwarded-for")).toBe("127.0.0.7");
    expect(field(head, "x-real-ip")).toBe("127.0.0.7");
    expect(field(head, "x-forwarded-host")).toBe(HOST);
    expect(field(head, "x-forwarded-proto")).toBe("http");
    expect(field(head, "x-forwarded-port")).toBe(String(proxy.port));
    expect(field(head, "forwarded")).toBeNull();
    expect(field(head, "x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.headers.get("x-request-id")).toBe(field(head, "x-request-id"));
  });

  test("the port a client named in its Host is the forwarded port; a tame request id is kept", async () => {
    const { app, proxy } = rawSetup((_head, connection) => connection.write(OK));
    const response = await exchange(await open(proxy), "GET", "/", { "X-Request-Id": "req_123:abc" }, undefined, `${HOST}:8080`);
    expect(field(app.heads[0]!, "x-forwarded-port")).toBe("8080");
    expect(field(app.heads[0]!, "x-forwarded-host")).toBe(`${HOST}:8080`);
    expect(field(app.heads[0]!, "x-request-id")).toBe("req_123:abc");
    expect(response.headers.get("x-request-id")).toBe("req_123:abc");
  });

  test("behind a trusted proxy its chain is kept and extended", async () => {
    const { app, proxy } = rawSetup((_head, connection) => connection.write(OK), { trustedProxies: parseCidrList("127.0.0.0/8") });
    await exchange(await open(proxy, "127.0.0.7"), "GET", "/", spoofed);
    const head = app.heads[0]!;
    expect(field(head, "x-forwarded-for")).toBe("203.0.113.9, 127.0.0.7");
    expect(field(head, "x-real-ip")).toBe("203.0.113.9");
    expect(field(head, "x-forwarded-host")).toBe("www.example.com");
    expect(field(head, "x-forwarded-proto")).toBe("https");
    expect(field(head, "x-forwarded-port")).toBe("443");
    expect(field(head, "forwarded")).toBeNull();
  });

  test("on one keep-alive connection each request is forwarded for its own Host, and a trusted proxy's for its own headers", async () => {
    const { app, proxy } = rawSetup((_head, connection) => connection.write(OK), { trustedProxies: parseCidrList("127.0.0.8/32") });
    const client = await open(proxy, "127.0.0.7");
    for (const host of [HOST, `${HOST}:8080`, HOST]) expect((await exchange(client, "GET", "/", {}, undefined, host)).status).toBe(200);
    expect(app.heads.map((head) => [field(head, "x-forwarded-host"), field(head, "x-forwarded-port"), field(head, "x-forwarded-for")])).toEqual([
      [HOST, String(proxy.port), "127.0.0.7"],
      [`${HOST}:8080`, "8080", "127.0.0.7"],
      [HOST, String(proxy.port), "127.0.0.7"],
    ]);
    const front = await open(proxy, "127.0.0.8");
    for (const client of ["203.0.113.9", "203.0.113.10"]) await exchange(front, "GET", "/", { "X-Forwarded-For": client });
    expect(app.heads.slice(3).map((head) => [field(head, "x-forwarded-for"), field(head, "x-real-ip")])).toEqual([
      ["203.0.113.9, 127.0.0.8", "203.0.113.9"],
      ["203.0.113.10, 127.0.0.8", "203.0.113.10"],
    ]);
  });
});

describe("timeouts", () => {
  test("a request head that trickles in gets a 408 after the header timeout", async () => {
    const { app, proxy } = rawSetup((_head, connection) => connection.write(OK), { timeouts: { headerSeconds: 0.3 } });
    const client = await open(proxy);
    const started = performance.now();
    const trickle = (async () => {
      for (const character of `GET / HTTP/1.1\r\nHost: ${HOST}\r\nX-Slow: ${"s".repeat(40)}`) {
        if (client.isClosed) return;
        await client.write(character).catch(() => {});
        await Bun.sleep(50);
      }
    })();
    const response = await client.readResponse({ timeoutMs: 3000 });
    expect(response.status).toBe(408);
    expect(response.text()).toContain("REQUEST_TIMEOUT");
    expect(performance.now() - started).toBeLessThan(1500);
    expect(await client.closedWithin(1000)).not.toBeNull();
    await trickle;
    expect(app.heads.length).toBe(0);
  });

  test("a connection that sends nothing is closed after the header timeout", async () => {
    const proxy = harness.proxy({ timeouts: { headerSeconds: 0.3 } });
    const client = await open(proxy);
    expect(await client.closedWithin(1500)).not.toBeNull();
    expect(client.unread()).toBe("");
  });

  test("an idle keep-alive connection is closed after the idle timeout, not before", async () => {
    const { proxy } = rawSetup((_head, connection) => connection.write(OK), { timeouts: { headerSeconds: 0.2, idleSeconds: 1 } });
    const client = await open(proxy);
    expect((await exchange(client, "GET", "/")).text()).toBe("ok");
    const closedAfter = await client.closedWithin(2500);
    expect(closedAfter).not.toBeNull();
    expect(closedAfter!).toBeGreaterThan(900);
    expect(client.unread()).toBe("");
  });

  test("an app that does not answer in time: 504 APP_TIMED_OUT; a stall mid-body closes the client", async () => {
    const { proxy } = rawSetup(
      (head, connection) => {
        if (head.startsWith("GET /stall")) connection.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf");
      },
      { timeouts: { upstreamSeconds: 0.3 } },
    );
    const client = await open(proxy);
    const response = await exchange(client, "GET", "/", { Accept: "application/json", "X-Request-Id": "slow-1" });
    expect(response.status).toBe(504);
    expect(response.json().code).toBe("APP_TIMED_OUT");
    expect(response.headers.get("x-request-id")).toBe("slow-1");

    const stalled = await open(proxy);
    await stalled.write(requestHead("GET", "/stall", HOST));
    expect(stalled.readResponse({ timeoutMs: 3000 })).rejects.toThrow(/connection closed/);
    expect(await stalled.closedWithin(2000)).not.toBeNull();
  });

  test("a client whose body stops coming gets 408 REQUEST_TIMEOUT, not the app's 504, and is closed", async () => {
    const { proxy } = rawSetup(() => {}, { timeouts: { upstreamSeconds: 0.3 } });
    const client = await open(proxy);
    await client.write(requestHead("POST", "/upload", HOST, { "Content-Length": "10", Accept: "application/json" }) + "half");
    const response = await client.readResponse({ timeoutMs: 3000 });
    expect(response.status).toBe(408);
    expect(response.json().code).toBe("REQUEST_TIMEOUT");
    expect(await client.closedWithin(2000)).not.toBeNull();
  });

  test("a slow answer that keeps coming is not cut by the upstream timeout", async () => {
    const { proxy } = rawSetup(
      async (_head, connection) => {
        connection.write("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n");
        for (let i = 0; i < 8; i++) {
          await Bun.sleep(150);
          connection.write(String(i));
        }
      },
      { timeouts: { upstreamSeconds: 0.4 } },
    );
    expect((await rawRequest(proxy.port, HOST, "/")).text()).toBe("01234567");
  });

  test("an app whose connection is not accepted in time: 504 APP_TIMED_OUT after the connect timeout", async () => {
    const proxy = harness.proxy({ timeouts: { connectSeconds: 0.3 } });
    const port = await harness.unacceptingPort();
    proxy.route("shop", { host: "127.0.0.1", port });
    const started = performance.now();
    const response = await rawRequest(proxy.port, HOST, "/", { headers: { Accept: "application/json" } });
    expect(response.status).toBe(504);
    expect(response.json().code).toBe("APP_TIMED_OUT");
    expect(performance.now() - started).toBeGreaterThan(250);
    expect(performance.now() - started).toBeLessThan(1500);
  });
});

describe("connections per client address", () => {
  test("past the limit a connection gets 429 and is closed; other addresses are not limited; a closed one frees its place", async () => {
    const { proxy } = rawSetup((_head, connection) => connection.write(OK), { maxConnectionsPerClient: 3 });
    const held: RawConnection[] = [];
    for (let i = 0; i < 3; i++) {
      const connection = await open(proxy, "127.0.0.2");
      expect((await exchange(connection, "GET", "/")).text()).toBe("ok");
      held.push(connection);
    }
    const over = await open(proxy, "127.0.0.2");
    const refused = await over.readResponse();
    expect(refused.status).toBe(429);
    expect(refused.text()).toContain("TOO_MANY_CONNECTIONS");
    expect(await over.closedWithin(1000)).not.toBeNull();
    expect((await exchange(await open(proxy, "127.0.0.3"), "GET", "/")).text()).toBe("ok");

    held[0]!.close();
    let answer: RawResponse | null = null;
    for (let attempt = 0; attempt < 50 && answer?.status !== 200; attempt++) {
      answer = await rawRequest(proxy.port, HOST, "/", { localAddress: "127.0.0.2" }).catch(() => null);
      if (answer?.status !== 200) await Bun.sleep(10);
    }
    expect(answer?.status).toBe(200);
  });

  test("a trusted front proxy carries many clients: its connections are not limited", async () => {
    const { proxy } = rawSetup((_head, connection) => connection.write(OK), { maxConnectionsPerClient: 1, trustedProxies: parseCidrList("127.0.0.4") });
    const connections = await Promise.all([1, 2, 3].map(() => open(proxy, "127.0.0.4")));
    for (const connection of connections) expect((await exchange(connection, "GET", "/")).text()).toBe("ok");
  });
});

describe("stopping", () => {
  test("stop() closes idle connections at once, lets an answer in progress finish, then resolves", async () => {
    const answer = signal();
    const { app, proxy } = rawSetup(async (head, connection) => {
      if (head.startsWith("GET /slow")) {
        await answer.released;
        connection.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nfirst-last");
      } else connection.write(OK);
    });
    const idle = await open(proxy);
    expect((await exchange(idle, "GET", "/")).text()).toBe("ok");
    const busy = await open(proxy);
    await busy.write(requestHead("GET", "/slow", HOST));
    await until(() => app.heads.length === 2, "the request to reach the app");

    let stopped = false;
    const stopping = proxy.stop().then(() => (stopped = true));
    expect(await idle.closedWithin(1000)).not.toBeNull();
    expect(RawConnection.open(proxy.port)).rejects.toThrow();
    expect(stopped).toBe(false);
    expect(busy.isClosed).toBe(false);

    answer.release();
    const response = await busy.readResponse();
    expect(response.text()).toBe("first-last");
    expect(response.headers.get("connection")).toBe("close");
    expect(await busy.closedWithin(1000)).not.toBeNull();
    await stopping;
    expect(stopped).toBe(true);
  });

  test("stop(true) closes every connection now", async () => {
    const { proxy } = rawSetup((_head, connection) => connection.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nfirst"));
    const busy = await open(proxy);
    await busy.write(requestHead("GET", "/", HOST));
    await until(() => busy.unread().endsWith("first"), "the first part of the answer");
    await proxy.stop(true);
    expect(await busy.closedWithin(1000)).not.toBeNull();
  });
});
