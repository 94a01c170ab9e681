// HTTPS without ACME: the platform's own wildcard certificate (PLATFORM_TLS_CERT/KEY) for app
// subdomains and for the dashboard's own host (PLATFORM_API_DOMAIN), and certificates uploaded for
// custom domains once verified (their TXT records on a DNS server of the test's own).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { deleteAllApps, deployRunningSite } from "../../helpers/apps";
import { RawConnection, requestHead } from "../../helpers/raw-http";
import { makeCertificate, type TestPair } from "../../helpers/certificates";
import { startDnsServer, type DnsServer } from "../../helpers/dns-server";
import { claimDomain, proveDomain } from "../../helpers/domains";

const DOMAIN = "apps.test";
const SHOP = `shop.${DOMAIN}`;
const CONSOLE = `console.${DOMAIN}`;
const WWW = "www.shop.example.test";

let dns: DnsServer;
let server: TestServer;
let key: string;
let appId: string;
let wildcard: TestPair;
let tlsPort: number;

beforeAll(async () => {
  wildcard = await makeCertificate({ names: [`*.${DOMAIN}`] });
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  tlsPort = probe.port;
  probe.stop(true);
  dns = await startDnsServer();
  server = await TestServer.start({
    PLATFORM_DNS_SERVERS: dns.address,
    PLATFORM_DOMAIN: DOMAIN,
    PLATFORM_PROXY_TLS_PORT: String(tlsPort),
    PLATFORM_TLS_CERT: wildcard.certFile,
    PLATFORM_TLS_KEY: wildcard.keyFile,
    PLATFORM_API_DOMAIN: CONSOLE,
  });
  key = (await server.createKey("own-certificates")).key;
  appId = await deployRunningSite(server, key, "shop", "<p>the shop</p>");
}, 180_000);

afterAll(async () => {
  if (server && key) await deleteAllApps(server, key);
  await server?.stop();
  await dns?.stop();
}, 60_000);

async function httpsGet(host: string, ca: string, path = "/", headers: Record<string, string> = {}) {
  const connection = await RawConnection.openTls(tlsPort, host, ca);
  await connection.write(requestHead("GET", path, host, { connection: "close", ...headers }));
  return { response: await connection.readResponse(), certificate: connection.peerCertificate };
}

async function httpGet(host: string, path = "/") {
  const connection = await RawConnection.open(server.proxyPort);
  await connection.write(requestHead("GET", path, host, { connection: "close" }));
  return connection.readResponse();
}

describe("the platform's own certificate", () => {
  test("a wildcard for PLATFORM_DOMAIN serves every app subdomain over HTTPS, and HTTP redirects there", async () => {
    const app = (await server.request("GET", `/api/apps/${appId}`, { key })).body.app;
    expect(app.url).toBe(`https://${SHOP}:${tlsPort}`);
    expect(app.certificate).toMatchObject({ status: "issued", source: "platform", lastError: null });
    const { response, certificate } = await httpsGet(SHOP, wildcard.chainPem);
    expect([response.status, response.text(), certificate.subjectaltname]).toEqual([200, "<p>the shop</p>", `DNS:*.${DOMAIN}`]);
    const forwarded = response.headers;
    expect(forwarded.get("x-request-id")).toBeTruthy();
    const redirected = await httpGet(SHOP, "/a?b=c");
    expect([redirected.status, redirected.headers.get("location")]).toEqual([308, `https://${SHOP}:${tlsPort}/a?b=c`]);
  });

  test("the dashboard and API answer at PLATFORM_API_DOMAIN through the proxy, over HTTPS", async () => {
    const page = await httpsGet(CONSOLE, wildcard.chainPem);
    expect(page.response.status).toBe(200);
    expect(page.response.headers.get("content-type")).toContain("text/html");
    const me = await httpsGet(CONSOLE, wildcard.chainPem, `/api/apps/${appId}`, { authorization: `Bearer ${key}` });
    expect([me.response.status, me.response.json().app.id]).toEqual([200, appId]);
    expect((await httpGet(CONSOLE, "/api/apps")).headers.get("location")).toBe(`https://${CONSOLE}:${tlsPort}/api/apps`);
    // Its name is the platform's: no app may take it as its own domain.
    const taken = await server.request("POST", `/api/apps/${appId}/domains`, { key, body: { domain: CONSOLE } });
    expect([taken.status, taken.body.code]).toEqual([400, "DOMAIN_RESERVED"]);
  });
});

describe("a custom domain's uploaded certificate", () => {
  let domainId: string;

  test("no certificate may be uploaded for a domain before it is verified", async () => {
    const added = await claimDomain(server, key, appId, WWW);
    domainId = added.body.domain.id;
    expect(added.body.domain.verification.status).toBe("pending");
    const own = await makeCertificate({ names: [WWW] });
    const refused = await server.request("PUT", `/api/apps/${appId}/domains/${domainId}/certificate`, { key, body: { certificate: own.chainPem, privateKey: own.keyPem } });
    expect([refused.status, refused.body.code, refused.body.error]).toEqual([409, "DOMAIN_NOT_VERIFIED", expect.stringContaining(`_platform-challenge.${WWW}`)]);
    await expect(RawConnection.openTls(tlsPort, WWW, own.chainPem)).rejects.toThrow();
    expect((await httpGet(WWW)).status).toBe(404);
    await proveDomain(server, key, dns, appId, added.body.domain);
  });

  test("without ACME a verified custom domain has no certificate and is served over plain HTTP", async () => {
    const domain = (await server.request("GET", `/api/apps/${appId}/domains/${domainId}`, { key })).body.domain;
    expect(domain).toMatchObject({ url: `http://${WWW}:${server.proxyPort}`, certificate: { status: "none", source: null } });
    expect((await httpGet(WWW)).status).toBe(200);
    await expect(RawConnection.openTls(tlsPort, WWW, wildcard.chainPem)).rejects.toThrow();
  });

  test("an uploaded certificate serves the domain from the next handshake, with its expiry shown", async () => {
    const own = await makeCertificate({ names: [WWW] });
    const uploaded = await server.request("PUT", `/api/apps/${appId}/domains/${domainId}/certificate`, { key, body: { certificate: own.chainPem, privateKey: own.keyPem } });
    expect(uploaded.status).toBe(200);
    expect(uploaded.body.domain).toMatchObject({ url: `https://${WWW}:${tlsPort}`, certificate: { status: "issued", source: "uploaded", renewsAt: null } });
    expect(Date.parse(uploaded.body.domain.certificate.expiresAt)).toBeGreaterThan(Date.now() + 86_400_000);
    const { response, certificate } = await httpsGet(WWW, own.chainPem);
    expect([response.status, certificate.subjectaltname]).toEqual([200, `DNS:${WWW}`]);
    // The subdomain keeps the wildcard.
    expect((await httpsGet(SHOP, wildcard.chainPem)).certificate.subjectaltname).toBe(`DNS:*.${DOMAIN}`);

    const removed = await server.request("DELETE", `/api/apps/${appId}/domains/${domainId}/certificate`, { key });
    expect(removed.body.domain.certificate).toMatchObject({ status: "none", source: null });
    await expect(RawConnection.openTls(tlsPort, WWW, own.chainPem)).rejects.toThrow();
    expect((await server.request("DELETE", `/api/apps/${appId}/domains/${domainId}/certificate`, { key })).status).toBe(404);
  });

  test("a certificate that does not fit is refused with the reason, and the domain keeps what it had", async () => {
    const own = await makeCertificate({ names: [WWW] });
    const other = await makeCertificate({ names: ["elsewhere.example.test"] });
    const cases: [string, { certificate: string; privateKey: string }, string][] = [
      ["another certificate's key", { certificate: own.chainPem, privateKey: other.keyPem }, "does not belong"],
      ["a certificate for another name", { certificate: other.chainPem, privateKey: other.keyPem }, "not valid for www.shop.example.test"],
      ["no PEM at all", { certificate: "hello", privateKey: own.keyPem }, "No PEM certificate"],
      ["a key that is no key", { certificate: own.chainPem, privateKey: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----" }, "cannot be read"],
    ];
    for (const [label, body, reason] of cases) {
      const response = await server.request("PUT", `/api/apps/${appId}/domains/${domainId}/certificate`, { key, body });
      expect({ label, status: response.status, code: response.body.code, reasonGiven: String(response.body.error).includes(reason) }).toEqual({
        label,
        status: 400,
        code: "INVALID_CERTIFICATE",
        reasonGiven: true,
      });
    }
    const domain = (await server.request("GET", `/api/apps/${appId}/domains/${domainId}`, { key })).body.domain;
    expect(domain.certificate.status).toBe("none");
  });
});
