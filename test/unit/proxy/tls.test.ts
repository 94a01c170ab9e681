// The proxy's HTTPS side on its own, with certificates and ACME challenges handed to it by the test
// (as src/certificates does in the platform): SNI, handshakes that never finish, the challenge
// answer's framing, and when plain HTTP is redirected.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { createSecureContext, type SecureContext } from "node:tls";
import { parseCidrList } from "../../../src/http/trusted-proxies";
import { makeCertificate, type TestPair } from "../../helpers/certificates";
import { hostOf, ProxyHarness, type TestProxy } from "../../helpers/proxy-harness";
import { RawConnection, requestHead } from "../../helpers/raw-http";

const SHOP = hostOf("shop");
const TOKEN = "token-1";
const KEY_AUTHORIZATION = "token-1.thumbprint";

let certificate: TestPair;
let context: SecureContext;
const harness = new ProxyHarness();

beforeAll(async () => {
  certificate = await makeCertificate({ names: [SHOP] });
  context = createSecureContext({ cert: certificate.chainPem, key: certificate.keyPem });
});
afterEach(() => harness.cleanup());
afterAll(() => harness.cleanup());

/** A proxy serving `shop` over HTTPS with the test's certificate, its listener open. */
function httpsProxy(settings: Parameters<ProxyHarness["proxy"]>[0] = {}): { proxy: TestProxy; tlsPort: number } {
  const proxy = harness.proxy({
    ...settings,
    tls: {
      port: 0,
      secureContextFor: (name) => (name === SHOP ? context : undefined),
      defaultPair: () => ({ chainPem: certificate.chainPem, keyPem: certificate.keyPem }),
      servesHttps: (host) => host === SHOP,
      challengeAnswer: (token) => (token === TOKEN ? KEY_AUTHORIZATION : undefined),
    },
  });
  const app = harness.app((request) => new Response(`app saw ${new URL(request.url).pathname} as ${request.headers.get("x-forwarded-proto")}`));
  proxy.route("shop", { ...app.upstream, httpsRedirect: true, hsts: true });
  return { proxy, tlsPort: proxy.startTls() };
}

async function send(port: number, head: string, localAddress?: string) {
  const connection = await RawConnection.open(port, localAddress);
  await connection.write(head);
  return { connection, response: await connection.readResponse({ method: head.split(" ")[0] }) };
}

describe("the proxy over TLS", () => {
  test("each name asked for gets its certificate; a name without one fails the handshake", async () => {
    const { tlsPort } = httpsProxy();
    const connection = await RawConnection.openTls(tlsPort, SHOP, certificate.chainPem);
    expect(connection.peerCertificate.subjectaltname).toBe(`DNS:${SHOP}`);
    await connection.write(requestHead("GET", "/x", SHOP));
    const response = await connection.readResponse();
    expect([response.status, response.text(), response.headers.get("strict-transport-security")]).toEqual([200, "app saw /x as https", "max-age=31536000"]);
    await expect(RawConnection.openTls(tlsPort, hostOf("other"), certificate.chainPem)).rejects.toThrow();
  });

  test("a connection that never starts its handshake is cut by the header timeout, and counts against the per-address limit", async () => {
    const { tlsPort } = httpsProxy({ timeouts: { headerSeconds: 1 }, maxConnectionsPerClient: 2 });
    const silent = await Promise.all([RawConnection.open(tlsPort), RawConnection.open(tlsPort)]);
    // A third from the same address is refused at once; one from another address is not.
    const third = await RawConnection.open(tlsPort);
    expect(await third.closedWithin(2000)).not.toBeNull();
    const elsewhere = await RawConnection.openTls(tlsPort, SHOP, certificate.chainPem).catch((error) => error as Error);
    expect(elsewhere).toBeInstanceOf(Error); // 127.0.0.1 is still full
    const waited = await Promise.all(silent.map((connection) => connection.closedWithin(4000)));
    expect(waited.every((ms) => ms !== null && ms >= 700)).toBe(true);
    const after = await RawConnection.openTls(tlsPort, SHOP, certificate.chainPem);
    await after.write(requestHead("GET", "/", SHOP));
    expect((await after.readResponse()).status).toBe(200);
  });
});

describe("plain HTTP beside the TLS listener", () => {
  test("a known challenge token is answered before any app; HEAD gets the head only and the connection stays usable", async () => {
    const { proxy } = httpsProxy();
    const connection = await RawConnection.open(proxy.port);
    await connection.write(requestHead("HEAD", `/.well-known/acme-challenge/${TOKEN}`, "any.example.test") + requestHead("GET", `/.well-known/acme-challenge/${TOKEN}`, "any.example.test"));
    const head = await connection.readResponse({ method: "HEAD" });
    expect([head.status, head.headers.get("content-length"), head.text()]).toEqual([200, String(KEY_AUTHORIZATION.length), ""]);
    const get = await connection.readResponse();
    expect([get.status, get.text()]).toEqual([200, KEY_AUTHORIZATION]);
    // An unknown token is the app's (and never redirected).
    const unknown = await send(proxy.port, requestHead("GET", "/.well-known/acme-challenge/other", SHOP, { connection: "close" }));
    expect([unknown.response.status, unknown.response.text()]).toEqual([200, "app saw /.well-known/acme-challenge/other as http"]);
  });

  test("requests are redirected to HTTPS with their path, HEAD too, on a connection that stays open; OPTIONS * is not", async () => {
    const { proxy, tlsPort } = httpsProxy();
    const connection = await RawConnection.open(proxy.port);
    await connection.write(requestHead("HEAD", "/cart?item=1", SHOP) + requestHead("GET", "/", SHOP));
    const head = await connection.readResponse({ method: "HEAD" });
    expect([head.status, head.headers.get("location"), head.headers.get("connection")]).toEqual([308, `https://${SHOP}:${tlsPort}/cart?item=1`, null]);
    expect((await connection.readResponse()).status).toBe(308);
    const options = await send(proxy.port, `OPTIONS * HTTP/1.1\r\nhost: ${SHOP}\r\nconnection: close\r\n\r\n`);
    expect(options.response.status).not.toBe(308);
  });

  test("TLS ended by a trusted proxy in front (X-Forwarded-Proto: https) is not redirected again, and gets HSTS", async () => {
    const { proxy } = httpsProxy({ trustedProxies: parseCidrList("127.0.0.2") });
    const trusted = await send(proxy.port, requestHead("GET", "/", SHOP, { "x-forwarded-proto": "https", connection: "close" }), "127.0.0.2");
    expect([trusted.response.status, trusted.response.text(), trusted.response.headers.get("strict-transport-security")]).toEqual([200, "app saw / as https", "max-age=31536000"]);
    const untrusted = await send(proxy.port, requestHead("GET", "/", SHOP, { "x-forwarded-proto": "https", connection: "close" }), "127.0.0.3");
    expect(untrusted.response.status).toBe(308);
  });

  test("nothing is redirected while the HTTPS listener is not open", async () => {
    const proxy = harness.proxy({
      tls: { port: 0, secureContextFor: () => context, defaultPair: () => null, servesHttps: () => true, challengeAnswer: () => undefined },
    });
    const app = harness.app(() => new Response("plain"));
    proxy.route("shop", { ...app.upstream, httpsRedirect: true });
    const { response } = await send(proxy.port, requestHead("GET", "/", SHOP, { connection: "close" }));
    expect([response.status, response.text()]).toEqual([200, "plain"]);
    expect(() => proxy.startTls()).toThrow("needs a certificate");
  });
});

test("a plain TCP peer talking HTTP to the TLS port gets no answer in clear text", async () => {
  const { tlsPort } = httpsProxy();
  const socket = net.connect({ host: "127.0.0.1", port: tlsPort });
  const received: Buffer[] = [];
  socket.on("data", (piece: Buffer) => received.push(piece));
  socket.on("error", () => {});
  socket.write(requestHead("GET", "/", SHOP));
  await new Promise((resolve) => socket.once("close", resolve));
  expect(Buffer.concat(received).toString("latin1")).not.toContain("HTTP/1.1");
});
