// HTTPS with certificates from a real ACME server: Pebble on loopback, its DNS answering every name
// with 127.0.0.1 and its HTTP-01 checks sent to the platform's proxy port. Certificates live 60 s
// here, so renewal (at two thirds, 40 s) happens within the test. Custom domains are proved by TXT
// records on the same DNS server; only verified ones whose DNS points here are ordered for.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { deleteAllApps, deployRunningSite } from "../../helpers/apps";
import { startPebble, type Pebble } from "../../helpers/pebble";
import { freePort } from "../../helpers/ports";
import { RawConnection, requestHead } from "../../helpers/raw-http";
import { makeCertificate, type TestPair } from "../../helpers/certificates";
import { addVerifiedDomain, claimDomain, proveDomain } from "../../helpers/domains";

const DOMAIN = "apps.test";
const SHOP = `shop.${DOMAIN}`;
const WWW = "www.shop.example.test";
const BROKEN = "broken.shop.example.test";
/** Verified, but its DNS points at another server: never ordered. */
const ELSEWHERE = "elsewhere.shop.example.test";
/** Covered by the platform's own certificate (PLATFORM_TLS_CERT): never ordered. */
const OWN = "own.shop.example.test";
const VALIDITY_SECONDS = 60;

let pebble: Pebble;
let server: TestServer;
let key: string;
let appId: string;
let root: string;
let proxyPort: number;
let tlsPort: number;
let ownCertificate: TestPair;

beforeAll(async () => {
  proxyPort = freePort();
  tlsPort = freePort();
  pebble = await startPebble({ httpPort: proxyPort, validitySeconds: VALIDITY_SECONDS });
  root = await pebble.issuingRootPem();
  ownCertificate = await makeCertificate({ names: [OWN] });
  server = await TestServer.start({
    PLATFORM_DOMAIN: DOMAIN,
    PLATFORM_PROXY_PORT: String(proxyPort),
    PLATFORM_PROXY_TLS_PORT: String(tlsPort),
    PLATFORM_ACME_EMAIL: "ops@example.test",
    PLATFORM_ACME_DIRECTORY: pebble.directoryUrl,
    PLATFORM_ACME_CA_FILE: pebble.listenerCaFile,
    PLATFORM_CERTIFICATE_SCHEDULE: "* * * * * *",
    PLATFORM_DNS_SERVERS: pebble.dnsServer,
    // 127.0.0.9 counts as this server's, so that BROKEN's DNS check passes while Pebble finds nothing there.
    PLATFORM_PUBLIC_IP: "127.0.0.1,127.0.0.9",
  });
  key = (await server.createKey("https")).key;
  appId = await deployRunningSite(server, key, "shop", "<p>the shop</p>");
}, 180_000);

// What beforeAll started, even when it failed part way: a server that never came up leaves Pebble to stop.
afterAll(async () => {
  if (server && key) await deleteAllApps(server, key);
  await server?.stop();
  await pebble?.stop();
}, 60_000);

/** GET over HTTPS to the proxy asking for `host` by SNI and Host; the answer and the certificate served. */
async function httpsGet(host: string, path = "/", ca = root) {
  const connection = await RawConnection.openTls(tlsPort, host, ca);
  await connection.write(requestHead("GET", path, host, { connection: "close" }));
  const response = await connection.readResponse();
  return { response, certificate: connection.peerCertificate };
}

/** A plain HTTP GET to the proxy for `host`. */
async function httpGet(host: string, path = "/") {
  const connection = await RawConnection.open(proxyPort);
  await connection.write(requestHead("GET", path, host, { connection: "close" }));
  return connection.readResponse();
}

/** The value `read` gives once `done` holds for it, or a failure naming the last one after `timeoutMs`. */
async function eventually<Value>(read: () => Promise<Value>, done: (value: Value) => boolean, timeoutMs = 30_000): Promise<Value> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`still not there after ${timeoutMs} ms: ${JSON.stringify(value)}\n${server.output.slice(-3000)}`);
    await Bun.sleep(200);
    value = await read();
  }
  return value;
}

const appCertificate = async () => (await server.request("GET", `/api/apps/${appId}`, { key })).body.app.certificate;
const domainsByName = async (): Promise<Record<string, any>> =>
  Object.fromEntries((await server.request("GET", `/api/apps/${appId}/domains`, { key })).body.domains.map((domain: any) => [domain.domain, domain]));

let shopSerial = "";

describe("HTTPS with ACME certificates", () => {
  test("the app's subdomain gets a certificate by HTTP-01 and is served over HTTPS with it", async () => {
    const certificate = await eventually(appCertificate, (status) => status.status === "issued");
    expect(certificate).toMatchObject({ source: "acme", lastError: null });
    expect(Date.parse(certificate.expiresAt) - Date.parse(certificate.notBefore)).toBeLessThanOrEqual(VALIDITY_SECONDS * 1000);
    expect((await server.request("GET", `/api/apps/${appId}`, { key })).body.app.url).toBe(`https://${SHOP}:${tlsPort}`);
    const { response, certificate: served } = await httpsGet(SHOP);
    expect(response.status).toBe(200);
    expect(response.text()).toBe("<p>the shop</p>");
    expect(served.subjectaltname).toBe(`DNS:${SHOP}`);
    shopSerial = served.serialNumber;
  });

  test("a custom domain not verified gets no certificate order, however often the check runs", async () => {
    const added = await claimDomain(server, key, appId, WWW);
    expect(added.status).toBe(201);
    expect(added.body.domain.dns).toMatchObject({ status: "ok", addresses: ["127.0.0.1"], expected: ["127.0.0.1", "127.0.0.9"] });
    expect(added.body.domain).toMatchObject({ verification: { status: "pending" }, certificate: { status: "waiting", lastAttemptAt: null } });
    await Bun.sleep(3000); // three scheduled checks
    expect((await domainsByName())[WWW].certificate).toMatchObject({ status: "waiting", lastAttemptAt: null });
    expect(readdirSync(join(server.dataDir, "certificates")).filter((name) => name.startsWith(WWW))).toEqual([]);
    expect(server.output).not.toContain(`${WWW}:`);
    await expect(RawConnection.openTls(tlsPort, WWW, root)).rejects.toThrow();
  });

  test("once verified a custom domain gets its own certificate, and SNI picks the right one for each name", async () => {
    await proveDomain(server, key, pebble.dns, appId, (await domainsByName())[WWW]);
    const www = await eventually(domainsByName, (domains) => domains[WWW]?.certificate.status === "issued");
    expect(www[WWW]).toMatchObject({ url: `https://${WWW}:${tlsPort}`, certificate: { source: "acme" } });
    const viaWww = await httpsGet(WWW);
    expect([viaWww.response.status, viaWww.response.text(), viaWww.certificate.subjectaltname]).toEqual([200, "<p>the shop</p>", `DNS:${WWW}`]);
    expect((await httpsGet(SHOP)).certificate.subjectaltname).toBe(`DNS:${SHOP}`);
    // Asking for a name with the other's certificate fails verification: each handshake got its own.
    await expect(RawConnection.openTls(tlsPort, "nothing-here.example.test", root)).rejects.toThrow();
  });

  test("plain HTTP redirects to HTTPS, except the ACME challenge path; both are settings", async () => {
    const redirected = await httpGet(SHOP, "/cart?item=1");
    expect(redirected.status).toBe(308);
    expect(redirected.headers.get("location")).toBe(`https://${SHOP}:${tlsPort}/cart?item=1`);
    // An unknown challenge token is the app's business: passed on, not redirected.
    expect((await httpGet(SHOP, "/.well-known/acme-challenge/not-ours")).status).not.toBe(308);
    expect((await httpsGet(SHOP)).response.headers.get("strict-transport-security")).toBeNull();

    const changed = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: { httpsRedirect: false, hsts: true } });
    expect(changed.body.app).toMatchObject({ httpsRedirect: false, hsts: true });
    const plain = await httpGet(SHOP);
    expect([plain.status, plain.text()]).toEqual([200, "<p>the shop</p>"]);
    expect((await httpsGet(SHOP)).response.headers.get("strict-transport-security")).toBe("max-age=31536000");
    await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: { httpsRedirect: true, hsts: false } });
    expect((await httpGet(SHOP)).status).toBe(308);
  });

  test("an order the CA cannot validate shows its error on the domain and leaves the others serving", async () => {
    // Nothing listens on 127.0.0.9: Pebble's HTTP-01 check of this name is refused.
    await pebble.resolve(BROKEN, "127.0.0.9");
    await addVerifiedDomain(server, key, pebble.dns, appId, BROKEN);
    const domains = await eventually(domainsByName, (all) => all[BROKEN]?.certificate.status === "failed");
    const broken = domains[BROKEN];
    expect(broken.certificate.lastError).toContain("127.0.0.9");
    expect(Date.parse(broken.certificate.nextAttemptAt)).toBeGreaterThan(Date.now() + 60_000);
    expect(broken.dns).toMatchObject({ status: "ok", addresses: ["127.0.0.9"] });
    expect(broken.url).toBe(`http://${BROKEN}:${proxyPort}`);
    // Without a certificate it is not redirected: plain HTTP still serves it.
    expect((await httpGet(BROKEN)).status).toBe(200);
    expect((await httpsGet(SHOP)).response.status).toBe(200);
    expect((await httpsGet(WWW)).response.status).toBe(200);
  });

  test("a verified domain whose DNS points at another server gets no certificate order", async () => {
    await pebble.resolve(ELSEWHERE, "127.0.0.77");
    const verified = await addVerifiedDomain(server, key, pebble.dns, appId, ELSEWHERE);
    expect(verified.dns).toMatchObject({ status: "mismatch", addresses: ["127.0.0.77"] });
    await Bun.sleep(3000); // three scheduled checks
    expect((await domainsByName())[ELSEWHERE].certificate).toMatchObject({ status: "waiting", lastAttemptAt: null });
    expect(server.output).not.toContain(`${ELSEWHERE}:`);
    // Routed all the same: only the certificate waits.
    expect((await httpGet(ELSEWHERE)).status).toBe(200);
    const removed = await server.request("DELETE", `/api/apps/${appId}/domains/${verified.id}`, { key });
    expect(removed.status).toBe(200);
  });

  test("certificates and the account key are stored readable by the platform only, and a restart serves them at once without a new order", async () => {
    const dir = join(server.dataDir, "certificates");
    const modes = Object.fromEntries(readdirSync(dir).map((name) => [name, (statSync(join(dir, name)).mode & 0o777).toString(8)]));
    expect(modes).toEqual({ "acme-account.key": "600", [`${SHOP}.crt`]: "600", [`${SHOP}.key`]: "600", [`${WWW}.crt`]: "600", [`${WWW}.key`]: "600" });
    expect((statSync(dir).mode & 0o777).toString(8)).toBe("700");
    await server.stop();
    // From now on with an own certificate too (PLATFORM_TLS_CERT): until here the HTTPS listener
    // opened with the first certificate ordered.
    Object.assign(server.env, { PLATFORM_TLS_CERT: ownCertificate.certFile, PLATFORM_TLS_KEY: ownCertificate.keyFile });
    await server.boot();
    const { certificate } = await httpsGet(SHOP);
    expect(certificate.serialNumber).toBe(shopSerial);
    expect(server.output).not.toContain(`${SHOP}: certificate in place`);
    // The failed order is remembered: no new try before its backoff ends.
    const broken = (await domainsByName())[BROKEN];
    expect(broken.certificate).toMatchObject({ status: "failed", lastError: expect.stringContaining("127.0.0.9") });
  });

  test("a domain the platform's own certificate covers is served with it, and nothing is ordered for it", async () => {
    const added = await addVerifiedDomain(server, key, pebble.dns, appId, OWN);
    expect(added.certificate).toMatchObject({ status: "issued", source: "platform", renewsAt: null });
    const { response, certificate } = await httpsGet(OWN, "/", ownCertificate.chainPem);
    expect([response.status, certificate.subjectaltname]).toEqual([200, `DNS:${OWN}`]);
    await Bun.sleep(1500); // a few scheduled checks
    expect(server.output).not.toContain(`${OWN}: `);
  });

  test("renewal at two thirds of the lifetime swaps the certificate without dropping a request or a connection", async () => {
    // A keep-alive connection made before the swap, used all along: it keeps the certificate it was given.
    const kept = await RawConnection.openTls(tlsPort, SHOP, root);
    const firstSerial = kept.peerCertificate.serialNumber;
    const failures: string[] = [];
    let requests = 0;
    let renewedSerial = "";
    const deadline = Date.now() + VALIDITY_SECONDS * 1000;
    while (!renewedSerial && Date.now() < deadline) {
      try {
        const { response, certificate } = await httpsGet(SHOP);
        await kept.write(requestHead("GET", "/", SHOP, {}));
        const keptResponse = await kept.readResponse();
        requests += 2;
        if (response.status !== 200 || keptResponse.status !== 200) failures.push(`status ${response.status}, on the kept connection ${keptResponse.status}`);
        if (certificate.serialNumber !== firstSerial) renewedSerial = certificate.serialNumber;
      } catch (error) {
        failures.push((error as Error).message);
      }
      await Bun.sleep(100);
    }
    expect(renewedSerial).not.toBe("");
    expect({ requests: requests > 10, failures }).toEqual({ requests: true, failures: [] });
    expect(kept.peerCertificate.serialNumber).toBe(firstSerial);
    const status = await appCertificate();
    expect(status.status).toBe("issued");
  }, 120_000);
});
