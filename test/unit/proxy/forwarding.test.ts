// The heads the proxy sends on (src/proxy/forwarding.ts): hop-by-hop headers dropped both ways,
// the client's identity written by the proxy itself, and the request id.
import { describe, expect, test } from "bun:test";
import {
  clientIdentityOf,
  requestIdOf,
  writeClientResponseHead,
  writeInterimResponseHead,
  writeUpstreamRequestHead,
  type ClientIdentity,
} from "../../../src/proxy/forwarding";
import { parseRequestHead, parseResponseHead, type RequestHead, type ResponseHead } from "../../../src/proxy/http1";
import { outgoingHead } from "../../../src/proxy/socket-writer";
import { parseCidrList } from "../../../src/http/trusted-proxies";

/** A head as read from a socket: its bytes, from an offset (as when it follows another message). */
const bytesOf = (lines: string[]) => Buffer.from(`HTTP/1.1 200 OK\r\n\r\n${lines.join("\r\n")}\r\n\r\n`, "latin1");
const HEAD_START = 19;
const request = (...lines: string[]) => parseRequestHead(bytesOf(lines), HEAD_START, bytesOf(lines).byteLength - 4);
const response = (...lines: string[]) => parseResponseHead(bytesOf(lines), HEAD_START, bytesOf(lines).byteLength - 4);
/** What the proxy writes, as text. */
const sentOn = (head: RequestHead, identity: ClientIdentity, requestId: string, websocket: boolean) =>
  writeUpstreamRequestHead(outgoingHead.begin(), head, identity, requestId, websocket).toString();
const answered = (head: ResponseHead, requestId: string, close: boolean) => writeClientResponseHead(outgoingHead.begin(), head, requestId, close).toString();
const interim = (head: ResponseHead) => writeInterimResponseHead(outgoingHead.begin(), head).toString();

const untrusted: ClientIdentity = { peerAddress: "127.0.0.5", clientAddress: "127.0.0.5", trustedPeer: false, host: "shop.apps.test:8080", https: false, port: "8080" };

/** The header lines of a head as [name, value] pairs, in order (the start line and the blank line left out). */
function linesOf(head: string): [string, string][] {
  expect(head.endsWith("\r\n\r\n")).toBe(true);
  return head
    .slice(0, -4)
    .split("\r\n")
    .slice(1)
    .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]);
}

const valuesOf = (head: string, name: string) => linesOf(head).filter(([field]) => field.toLowerCase() === name).map(([, value]) => value);

describe("the request head sent to the app", () => {
  test("hop-by-hop headers go, with every header Connection names; the others keep their name, order and value", () => {
    const head = request(
      "POST /cart?x=1 HTTP/1.1",
      "Host: shop.apps.test",
      "Connection: keep-alive, X-Secret-Hop",
      "X-Secret-Hop: 1",
      "Keep-Alive: timeout=5",
      "Proxy-Connection: keep-alive",
      "TE: trailers",
      "Trailer: X-T",
      "Upgrade: h2c",
      "Proxy-Authorization: Basic eA==",
      "Accept: */*",
      "Content-Length: 5",
      "X-Custom: A  b",
    );
    const sent = sentOn(head, untrusted, "id-1", false);
    expect(sent.split("\r\n")[0]).toBe("POST /cart?x=1 HTTP/1.1");
    expect(linesOf(sent)).toEqual([
      ["Host", "shop.apps.test"],
      ["Accept", "*/*"],
      ["Content-Length", "5"],
      ["X-Custom", "A  b"],
      ["x-forwarded-for", "127.0.0.5"],
      ["x-real-ip", "127.0.0.5"],
      ["x-forwarded-host", "shop.apps.test:8080"],
      ["x-forwarded-proto", "http"],
      ["x-forwarded-port", "8080"],
      ["x-request-id", "id-1"],
    ]);
  });

  test("a Connection token names only the header of that name, ASCII letters' case aside", () => {
    const sent = sentOn(request("GET / HTTP/1.1", "Host: a", "Connection: x~y, X-HOP", "x^y: kept", "x~y: dropped", "x-hop: dropped"), untrusted, "id", false);
    expect(valuesOf(sent, "x^y")).toEqual(["kept"]);
    expect(valuesOf(sent, "x~y")).toEqual([]);
    expect(valuesOf(sent, "x-hop")).toEqual([]);
  });

  test("an HTTP/1.0 request goes on as HTTP/1.1 with its Transfer-Encoding and Host as sent", () => {
    const sent = sentOn(request("GET / HTTP/1.0", "Host: shop.apps.test"), untrusted, "id", false);
    expect(sent.startsWith("GET / HTTP/1.1\r\nHost: shop.apps.test\r\n")).toBe(true);
    const chunked = sentOn(request("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked"), untrusted, "id", false);
    expect(valuesOf(chunked, "transfer-encoding")).toEqual(["chunked"]);
  });

  test("the body's framing and the Host stay even when Connection names them", () => {
    // The proxy frames the body by these fields and relays it byte for byte: the app must see them too,
    // or it would read the body as the next request (request smuggling past the proxy's checks).
    const sized = sentOn(request("POST / HTTP/1.1", "Host: shop.apps.test", "Connection: Content-Length, Host", "Content-Length: 5"), untrusted, "id", false);
    expect(valuesOf(sized, "content-length")).toEqual(["5"]);
    expect(valuesOf(sized, "host")).toEqual(["shop.apps.test"]);
    const chunked = sentOn(request("POST / HTTP/1.1", "Host: a", "Connection: transfer-encoding", "Transfer-Encoding: chunked"), untrusted, "id", false);
    expect(valuesOf(chunked, "transfer-encoding")).toEqual(["chunked"]);
  });

  test("an absolute-form request: the app gets the target's authority as its Host, once", () => {
    const head = request("GET http://shop.apps.test/a HTTP/1.1", "Host: other.apps.test");
    const identity = clientIdentityOf(head, "127.0.0.5", [], 80, false);
    const sent = sentOn(head, identity, "id", false);
    expect(sent.split("\r\n")[0]).toBe("GET /a HTTP/1.1");
    expect(valuesOf(sent, "host")).toEqual(["shop.apps.test"]);
    expect(valuesOf(sent, "x-forwarded-host")).toEqual(["shop.apps.test"]);
  });

  test("a client's X-Forwarded-*, X-Real-IP, Forwarded and X-Request-Id are replaced by the proxy's", () => {
    const head = request(
      "GET / HTTP/1.1",
      "Host: shop.apps.test:8080",
      "X-Forwarded-For: 6.6.6.6",
      "x-forwarded-for: 7.7.7.7",
      "X-Real-IP: 6.6.6.6",
      "Forwarded: for=6.6.6.6",
      "X-Forwarded-Host: evil.example",
      "X-Forwarded-Proto: https",
      "X-Forwarded-Port: 1",
      "X-Request-Id: abc-1",
    );
    const sent = sentOn(head, clientIdentityOf(head, "127.0.0.5", [], 80, false), "abc-1", false);
    expect(valuesOf(sent, "x-forwarded-for")).toEqual(["127.0.0.5"]);
    expect(valuesOf(sent, "x-real-ip")).toEqual(["127.0.0.5"]);
    expect(valuesOf(sent, "x-forwarded-host")).toEqual(["shop.apps.test:8080"]);
    expect(valuesOf(sent, "x-forwarded-proto")).toEqual(["http"]);
    expect(valuesOf(sent, "x-forwarded-port")).toEqual(["8080"]);
    expect(valuesOf(sent, "x-request-id")).toEqual(["abc-1"]);
    expect(valuesOf(sent, "forwarded")).toEqual([]);
  });

  test("behind a trusted proxy its chain is kept and extended", () => {
    const trusted = parseCidrList("127.0.0.0/8");
    const head = request(
      "GET / HTTP/1.1",
      "Host: shop.apps.test",
      "X-Forwarded-For: 6.6.6.6",
      "X-Forwarded-For: 10.0.0.9",
      "X-Forwarded-Host: www.example.com",
      "X-Forwarded-Proto: http, https",
      "X-Forwarded-Port: 443",
    );
    const identity = clientIdentityOf(head, "127.0.0.5", trusted, 80, false);
    const sent = sentOn(head, identity, "id", false);
    expect(valuesOf(sent, "x-forwarded-for")).toEqual(["6.6.6.6, 10.0.0.9, 127.0.0.5"]);
    expect(valuesOf(sent, "x-real-ip")).toEqual([identity.clientAddress]);
    expect(valuesOf(sent, "x-forwarded-host")).toEqual(["www.example.com"]);
    expect(valuesOf(sent, "x-forwarded-proto")).toEqual(["https"]);
    expect(valuesOf(sent, "x-forwarded-port")).toEqual(["443"]);
  });

  test("a WebSocket handshake keeps its Upgrade and says Connection: upgrade once", () => {
    const head = request(
      "GET /chat HTTP/1.1",
      "Host: shop.apps.test",
      "Upgrade: websocket",
      "Connection: keep-alive, Upgrade",
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
      "Sec-WebSocket-Version: 13",
      "Sec-WebSocket-Protocol: chat.v1",
    );
    const sent = sentOn(head, untrusted, "id", true);
    expect(valuesOf(sent, "upgrade")).toEqual(["websocket"]);
    expect(valuesOf(sent, "connection")).toEqual(["upgrade"]);
    expect(valuesOf(sent, "sec-websocket-key")).toEqual(["dGhlIHNhbXBsZSBub25jZQ=="]);
    expect(valuesOf(sent, "sec-websocket-protocol")).toEqual(["chat.v1"]);
    // Not a WebSocket: the Upgrade goes.
    expect(valuesOf(sentOn(head, untrusted, "id", false), "upgrade")).toEqual([]);
  });
});

describe("the response head sent to the client", () => {
  test("hop-by-hop headers and those Connection names go; the app's X-Request-Id is replaced by the request's", () => {
    const head = response(
      "HTTP/1.1 200 Fine",
      "Content-Type: text/plain",
      "Connection: keep-alive, X-Hop",
      "X-Hop: 1",
      "Keep-Alive: timeout=5",
      "Proxy-Authenticate: Basic",
      "Trailer: X-T",
      "Upgrade: h2c",
      "X-Request-Id: from-the-app",
      "Content-Length: 2",
    );
    const sent = answered(head, "req-1", false);
    expect(sent.split("\r\n")[0]).toBe("HTTP/1.1 200 Fine");
    expect(linesOf(sent)).toEqual([
      ["Content-Type", "text/plain"],
      ["Content-Length", "2"],
      ["x-request-id", "req-1"],
    ]);
  });

  test("`close` says Connection: close; an HTTP/1.0 response goes on as HTTP/1.1", () => {
    const sent = answered(response("HTTP/1.0 404 Not Found", "Content-Length: 0"), "id", true);
    expect(sent.split("\r\n")[0]).toBe("HTTP/1.1 404 Not Found");
    expect(valuesOf(sent, "connection")).toEqual(["close"]);
  });

  test("a 101 keeps its Upgrade and says Connection: upgrade", () => {
    const head = response("HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "Sec-WebSocket-Protocol: chat.v2");
    const sent = answered(head, "id", true);
    expect(valuesOf(sent, "upgrade")).toEqual(["websocket"]);
    expect(valuesOf(sent, "connection")).toEqual(["upgrade"]);
    expect(valuesOf(sent, "sec-websocket-accept")).toEqual(["s3pPLMBiTxaQ9kYGzzhZRbK+xOo="]);
    expect(valuesOf(sent, "sec-websocket-protocol")).toEqual(["chat.v2"]);
  });

  test("with the app's `hsts`, the proxy's Strict-Transport-Security replaces the app's own; without it the app's stays", () => {
    const head = response("HTTP/1.1 200 OK", "Strict-Transport-Security: max-age=5", "X-Request-Id: from-app", "Content-Length: 0");
    const withHsts = writeClientResponseHead(outgoingHead.begin(), head, "id", false, true).toString();
    expect(valuesOf(withHsts, "strict-transport-security")).toEqual(["max-age=31536000"]);
    expect(valuesOf(withHsts, "x-request-id")).toEqual(["id"]);
    expect(valuesOf(withHsts, "content-length")).toEqual(["0"]);
    const without = answered(head, "id", false);
    expect(valuesOf(without, "strict-transport-security")).toEqual(["max-age=5"]);
    expect(valuesOf(without, "x-request-id")).toEqual(["id"]);
  });

  test("a 1xx answer keeps its fields, without hop-by-hop ones and without a request id", () => {
    const sent = interim(response("HTTP/1.1 103 Early Hints", "Link: </a.css>; rel=preload", "Link: </b.js>; rel=preload", "Connection: X-Hop", "X-Hop: 1", "Keep-Alive: 5"));
    expect(sent).toBe("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nLink: </b.js>; rel=preload\r\n\r\n");
    expect(interim(response("HTTP/1.1 100 Continue"))).toBe("HTTP/1.1 100 Continue\r\n\r\n");
  });

  test("the body's framing stays even when Connection names it", () => {
    // The proxy frames the body by it: without it the client would read until the close on a kept-alive connection.
    const sized = answered(response("HTTP/1.1 200 OK", "Connection: content-length", "Content-Length: 2"), "id", false);
    expect(valuesOf(sized, "content-length")).toEqual(["2"]);
    const chunked = answered(response("HTTP/1.1 200 OK", "Connection: Transfer-Encoding", "Transfer-Encoding: chunked"), "id", false);
    expect(valuesOf(chunked, "transfer-encoding")).toEqual(["chunked"]);
  });
});

describe("who the client is", () => {
  const head = request(
    "GET / HTTP/1.1",
    "Host: shop.apps.test:8443",
    "X-Forwarded-For: 203.0.113.9, 10.0.0.2",
    "X-Forwarded-Host: www.example.com",
    "X-Forwarded-Proto: https",
    "X-Forwarded-Port: 443",
  );

  test("without trusted proxies the socket peer is the client, whatever it sent", () => {
    expect(clientIdentityOf(head, "10.0.0.2", [], 80, false)).toEqual({
      peerAddress: "10.0.0.2",
      clientAddress: "10.0.0.2",
      trustedPeer: false,
      host: "shop.apps.test:8443",
      https: false,
      port: "8443",
    });
    expect(clientIdentityOf(request("GET / HTTP/1.1", "Host: shop.apps.test"), "10.0.0.2", [], 8080, false).port).toBe("8080");
  });

  test("a peer outside the trusted ranges is not believed either", () => {
    const identity = clientIdentityOf(head, "192.0.2.1", parseCidrList("10.0.0.0/8"), 80, false);
    expect(identity.trustedPeer).toBe(false);
    expect(identity.clientAddress).toBe("192.0.2.1");
    expect(identity.host).toBe("shop.apps.test:8443");
  });

  test("a trusted peer's X-Forwarded-* are believed up to the first untrusted hop", () => {
    expect(clientIdentityOf(head, "10.0.0.1", parseCidrList("10.0.0.0/8"), 80, false)).toEqual({
      peerAddress: "10.0.0.1",
      clientAddress: "203.0.113.9",
      trustedPeer: true,
      host: "www.example.com",
      https: true,
      port: "443",
    });
    const bare = clientIdentityOf(request("GET / HTTP/1.1", "Host: shop.apps.test", "X-Forwarded-Port: 99999x"), "10.0.0.1", parseCidrList("10.0.0.0/8"), 80, true);
    expect(bare).toMatchObject({ clientAddress: "10.0.0.1", host: "shop.apps.test", https: true, port: "80" });
  });
});

describe("request ids", () => {
  const withId = (id: string) => request("GET / HTTP/1.1", "Host: a", `X-Request-Id: ${id}`);

  test("a tame one is kept", () => {
    expect(requestIdOf(withId("req_123:abc@x.y-z"))).toBe("req_123:abc@x.y-z");
    expect(requestIdOf(withId("a".repeat(128)))).toBe("a".repeat(128));
  });

  test("else a new one is made", () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    for (const id of ["bad id\twith spaces", "a".repeat(129), "<script>", "a,b"]) expect(requestIdOf(withId(id))).toMatch(uuid);
    const made = requestIdOf(request("GET / HTTP/1.1", "Host: a"));
    expect(made).toMatch(uuid);
    expect(requestIdOf(request("GET / HTTP/1.1", "Host: a"))).not.toBe(made);
  });
});
