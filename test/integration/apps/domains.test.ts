// An app's own domains: claimed pending, proved by a TXT record with the workspace's token on a DNS
// server of the test's own (loopback), then routed by the public proxy as the app's subdomain is,
// through subdomain changes, a stop and a platform restart. A verified claim wins over pending ones
// while its record is published, and is taken over by another workspace's proof once it is gone; a
// removed domain stays reserved to its workspace, and a workspace has a cap on domains.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, waitForStatus } from "../../helpers/apps";
import { startDnsServer, type DnsServer } from "../../helpers/dns-server";
import { addVerifiedDomain, claimDomain, proveDomain } from "../../helpers/domains";

/** PLATFORM_MAX_DOMAINS_PER_WORKSPACE here. */
const WORKSPACE_CAP = 8;

let dns: DnsServer;
let server: TestServer;
let key: string;
let appId: string;
/** Another workspace, and its app. */
let rivalKey: string;
let rivalAppId: string;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await TestServer.start({
    PLATFORM_DNS_SERVERS: dns.address,
    PLATFORM_PUBLIC_IP: "127.0.0.1",
    PLATFORM_DOMAIN_CHECK_SCHEDULE: "* * * * * *",
    PLATFORM_MAX_DOMAINS_PER_WORKSPACE: String(WORKSPACE_CAP),
  });
  key = (await server.createKey("domains")).key;
  const response = await deployZip(server, key, { name: "shop", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "<p>the shop</p>" }));
  appId = response.body.app.id;
  rivalKey = (await server.createKey("rival", "rival-team")).key;
  rivalAppId = (await deployZip(server, rivalKey, { name: "rival", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "rival" }))).body.app.id;
  await waitForStatus(server, key, appId, ["running"]);
  await waitForStatus(server, rivalKey, rivalAppId, ["running"]);
}, 180_000);
afterAll(async () => {
  if (server && key) await deleteAllApps(server, key);
  if (server && rivalKey) await deleteAllApps(server, rivalKey);
  await server?.stop();
  await dns?.stop();
}, 60_000);

/** A request through the proxy with `host` as its Host header. */
const asHost = (host: string) => fetch(`http://127.0.0.1:${server.proxyPort}/`, { headers: { host } });
/** The status through the proxy once it is `wanted`, or the last one after 10 s (routes are restored asynchronously). */
async function statusOnceSettled(host: string, wanted: number): Promise<number> {
  let status = 0;
  for (const deadline = Date.now() + 10_000; Date.now() < deadline && status !== wanted; await Bun.sleep(100)) status = (await asHost(host)).status;
  return status;
}
const addDomain = (domain: string, apiKey = key, app = appId) => claimDomain(server, apiKey, app, domain);
const getDomain = (domainId: string, apiKey = key, app = appId) => server.request("GET", `/api/apps/${app}/domains/${domainId}`, { key: apiKey });
const verifyNow = (domainId: string, apiKey = key, app = appId) => server.request("POST", `/api/apps/${app}/domains/${domainId}/verify`, { key: apiKey });

describe("an app's own domains", () => {
  test("a domain claimed is pending and does not route until its TXT record holds the workspace's token", async () => {
    const added = await addDomain("WWW.Shop.Example.test.");
    expect(added.status).toBe(201);
    const claimed = added.body.domain;
    // Read before the checks below: toMatchObject may leave its matchers in the object it was given.
    const record = { ...claimed.verification.record };
    expect(claimed).toMatchObject({ appId, domain: "www.shop.example.test", unicodeDomain: "www.shop.example.test", certificate: { status: "none" } });
    expect(claimed.verification).toMatchObject({
      status: "pending",
      record: { type: "TXT", name: "_platform-challenge.www.shop.example.test", value: expect.stringMatching(/^platform-verification=[0-9A-Za-z]{32}$/) },
      verifiedAt: null,
      message: expect.stringContaining("No TXT record at _platform-challenge.www.shop.example.test"),
    });
    // Not routed: the proxy's own 404 page, as for a name nobody claimed.
    const unrouted = await asHost("www.shop.example.test");
    expect([unrouted.status, await unrouted.text()]).toEqual([404, expect.stringContaining("No app is published at this address.")]);

    await dns.addTxt(record.name, "platform-verification=someone-else");
    const wrong = await verifyNow(claimed.id);
    expect(wrong.body.domain.verification).toMatchObject({ status: "pending", message: expect.stringContaining("does not hold this workspace's value") });
    expect((await asHost("www.shop.example.test")).status).toBe(404);

    await dns.addTxt(record.name, record.value);
    const verified = await verifyNow(claimed.id);
    expect(verified.status).toBe(200);
    expect(verified.body.domain.verification).toMatchObject({ status: "verified", message: null });
    expect(Date.parse(verified.body.domain.verification.verifiedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(verified.body.domain.url).toBe(`http://www.shop.example.test:${server.proxyPort}`);
    for (const host of ["www.shop.example.test", "WWW.SHOP.EXAMPLE.TEST", `www.shop.example.test.:${server.proxyPort}`]) {
      const response = await asHost(host);
      expect({ host, status: response.status, text: await response.text() }).toEqual({ host, status: 200, text: "<p>the shop</p>" });
    }
    const listed = await server.request("GET", `/api/apps/${appId}/domains`, { key });
    expect(listed.body.domains.map((domain: any) => [domain.domain, domain.verification.status])).toEqual([["www.shop.example.test", "verified"]]);
  });

  test("one token serves every domain of the workspace, and a pending domain is verified in the background once its record exists", async () => {
    const added = await addDomain("bücher.example.test");
    expect(added.body.domain).toMatchObject({ domain: "xn--bcher-kva.example.test", unicodeDomain: "bücher.example.test", verification: { status: "pending" } });
    const [www] = (await server.request("GET", `/api/apps/${appId}/domains`, { key })).body.domains;
    expect(added.body.domain.verification.record).toEqual({ type: "TXT", name: "_platform-challenge.xn--bcher-kva.example.test", value: www.verification.record.value });
    await dns.addTxt(added.body.domain.verification.record.name, added.body.domain.verification.record.value);
    // No POST …/verify: the background check (every second here) finds it.
    let status = "";
    for (const deadline = Date.now() + 10_000; Date.now() < deadline && status !== "verified"; await Bun.sleep(200)) {
      status = (await getDomain(added.body.domain.id)).body.domain.verification.status;
    }
    expect(status).toBe("verified");
    expect(await (await asHost("xn--bcher-kva.example.test")).text()).toBe("<p>the shop</p>");
  });

  test("what is not a host name, or is the platform's own, is refused", async () => {
    // The last: a valid name, but its TXT record _platform-challenge.<name> would pass 253 characters.
    const longest = `${"a".repeat(60)}.${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(40)}.example.test`;
    for (const domain of ["not a domain", "1.2.3.4", "[::1]", "*.example.test", "single", "-bad.example.test", `${"a".repeat(64)}.example.test`, longest]) {
      const response = await addDomain(domain);
      expect({ domain, status: response.status, code: response.body.code }).toEqual({ domain, status: 400, code: "VALIDATION_FAILED" });
    }
    for (const domain of ["localhost", "other.localhost"]) {
      const response = await addDomain(domain);
      expect({ domain, status: response.status, code: response.body.code }).toEqual({ domain, status: 400, code: "DOMAIN_RESERVED" });
    }
  });

  test("a second workspace may claim a name the first has verified, but not take it while the first's record is published", async () => {
    const again = await addDomain("www.shop.example.test");
    expect([again.status, again.body.code]).toEqual([409, "DOMAIN_TAKEN"]);
    // The rival's token, read from a claim of its own, published at the name too.
    const rivalToken = (await addDomain("rival.example.test", rivalKey, rivalAppId)).body.domain.verification.record.value;
    const ownToken = (await server.request("GET", `/api/apps/${appId}/domains`, { key })).body.domains[0].verification.record.value;
    expect(rivalToken).not.toBe(ownToken);
    const claimed = await addDomain("www.shop.example.test", rivalKey, rivalAppId);
    expect([claimed.status, claimed.body.domain.verification.status]).toEqual([201, "pending"]);
    expect(claimed.body.domain.verification.message).toContain("held by another workspace");
    await dns.addTxt("_platform-challenge.www.shop.example.test", rivalToken);
    const checked = (await verifyNow(claimed.body.domain.id, rivalKey, rivalAppId)).body.domain;
    expect(checked.verification).toMatchObject({ status: "pending", recordPresent: true, verifiedAt: null, message: expect.stringContaining("The other workspace's record is still published") });
    expect(await (await asHost("www.shop.example.test")).text()).toBe("<p>the shop</p>");
    const holder = (await server.request("GET", `/api/apps/${appId}/domains`, { key })).body.domains[0];
    expect(holder.verification).toMatchObject({ status: "verified", recordPresent: true, message: null });
    await server.request("DELETE", `/api/apps/${rivalAppId}/domains/${claimed.body.domain.id}`, { key: rivalKey });
    // Another workspace's app is not found through this route.
    expect((await addDomain("rival2.example.test", rivalKey, appId)).status).toBe(404);
  });

  test("of two pending claims the one verified wins: the other stays pending, never routes, and its own record changes nothing", async () => {
    const rivalClaim = await addDomain("contested.example.test", rivalKey, rivalAppId);
    expect([rivalClaim.status, rivalClaim.body.domain.verification.status]).toEqual([201, "pending"]);
    expect((await asHost("contested.example.test")).status).toBe(404);
    const ownClaim = await addDomain("contested.example.test");
    expect([ownClaim.status, ownClaim.body.domain.verification.status]).toEqual([201, "pending"]);

    await proveDomain(server, key, dns, appId, ownClaim.body.domain);
    expect(await (await asHost("contested.example.test")).text()).toBe("<p>the shop</p>");
    const outrun = (await getDomain(rivalClaim.body.domain.id, rivalKey, rivalAppId)).body.domain;
    expect(outrun.verification).toMatchObject({ status: "pending", verifiedAt: null, message: expect.stringContaining("another workspace") });
    expect(outrun.certificate.status).toBe("none");

    // The rival's own record changes nothing while the holder's is published.
    await dns.addTxt(outrun.verification.record.name, outrun.verification.record.value);
    expect((await verifyNow(outrun.id, rivalKey, rivalAppId)).body.domain.verification.status).toBe("pending");
    expect(await (await asHost("contested.example.test")).text()).toBe("<p>the shop</p>");
    // Nor may it upload a certificate for the name.
    const upload = await server.request("PUT", `/api/apps/${rivalAppId}/domains/${outrun.id}/certificate`, { key: rivalKey, body: { certificate: "-----BEGIN CERTIFICATE-----", privateKey: "-----BEGIN PRIVATE KEY-----" } });
    expect([upload.status, upload.body.code]).toEqual([409, "DOMAIN_NOT_VERIFIED"]);
  });

  test("a verified domain whose record is gone is taken over by a workspace that publishes its own: the proxy routes it to that workspace's app", async () => {
    const held = await addVerifiedDomain(server, key, dns, appId, "moved.example.test");
    expect(await (await asHost("moved.example.test")).text()).toBe("<p>the shop</p>");
    // The name changed hands outside the platform: the old holder's record is gone.
    await dns.clearTxt(held.verification.record.name);
    const unpublished = (await verifyNow(held.id)).body.domain;
    expect(unpublished.verification).toMatchObject({ status: "verified", recordPresent: false, message: expect.stringContaining("does not hold this workspace's value") });
    expect(await (await asHost("moved.example.test")).text()).toBe("<p>the shop</p>");

    const claimed = await addDomain("moved.example.test", rivalKey, rivalAppId);
    expect([claimed.status, claimed.body.domain.verification.status]).toEqual([201, "pending"]);
    const taken = await proveDomain(server, rivalKey, dns, rivalAppId, claimed.body.domain);
    expect(taken.verification.status).toBe("verified");
    expect(await (await asHost("moved.example.test")).text()).toBe("rival");

    const lost = (await getDomain(held.id)).body.domain;
    expect(lost.verification).toMatchObject({ status: "lost", verifiedAt: null, message: expect.stringContaining("taken over by another workspace") });
    expect(lost.certificate.status).toBe("none");
    // Publishing its record again does not take the name back while the new holder's is there.
    await dns.addTxt(held.verification.record.name, held.verification.record.value);
    expect((await verifyNow(held.id)).body.domain.verification.status).toBe("lost");
    expect(await (await asHost("moved.example.test")).text()).toBe("rival");
  });

  test("the domain follows a subdomain change, says `not running` while the app is stopped, and survives a restart", async () => {
    const moved = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: { subdomain: "store" } });
    expect(moved.status).toBe(200);
    // The new subdomain is routed once the serving container is looked up again; the domain with it.
    expect(await statusOnceSettled("www.shop.example.test", 200)).toBe(200);
    expect(await (await asHost("www.shop.example.test")).text()).toBe("<p>the shop</p>");

    await server.request("POST", `/api/apps/${appId}/stop`, { key });
    await waitForStatus(server, key, appId, ["stopped"]);
    expect((await asHost("www.shop.example.test")).status).toBe(503);
    await server.request("POST", `/api/apps/${appId}/start`, { key });
    await waitForStatus(server, key, appId, ["running"]);
    expect(await statusOnceSettled("www.shop.example.test", 200)).toBe(200);

    await server.stop();
    await server.boot();
    await waitForStatus(server, key, appId, ["running"]);
    expect(await statusOnceSettled("www.shop.example.test", 200)).toBe(200);
    // A pending claim still does not route after the restart.
    expect((await asHost("rival.example.test")).status).toBe(404);
  }, 120_000);

  test("a removed domain no longer routes and stays reserved to its workspace: another cannot claim it, the workspace can", async () => {
    const [domain] = (await server.request("GET", `/api/apps/${appId}/domains`, { key })).body.domains;
    const removed = await server.request("DELETE", `/api/apps/${appId}/domains/${domain.id}`, { key });
    expect(removed.status).toBe(200);
    expect(removed.body.domain.domain).toBe("www.shop.example.test");
    expect((await asHost("www.shop.example.test")).status).toBe(404);
    expect((await server.request("DELETE", `/api/apps/${appId}/domains/${domain.id}`, { key })).status).toBe(404);

    const taken = await addDomain("www.shop.example.test", rivalKey, rivalAppId);
    expect([taken.status, taken.body.code, taken.body.error]).toEqual([409, "DOMAIN_TAKEN", expect.stringContaining("reserved")]);

    // The workspace takes it back; its record is still there, so it is verified at once.
    const back = await addDomain("www.shop.example.test");
    expect([back.status, back.body.domain.verification.status]).toEqual([201, "verified"]);
    expect(await (await asHost("www.shop.example.test")).text()).toBe("<p>the shop</p>");
  });

  test(`a workspace's apps have at most ${WORKSPACE_CAP} domains together (PLATFORM_MAX_DOMAINS_PER_WORKSPACE)`, async () => {
    const cappedKey = (await server.createKey("capped", "capped-team")).key;
    const first = (await deployZip(server, cappedKey, { name: "first", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "1" }))).body.app.id;
    const second = (await deployZip(server, cappedKey, { name: "second", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "2" }))).body.app.id;
    try {
      for (let index = 0; index < WORKSPACE_CAP; index++) {
        const added = await addDomain(`cap-${index}.example.test`, cappedKey, index % 2 === 0 ? first : second);
        expect(added.status).toBe(201);
      }
      for (const app of [first, second]) {
        const refused = await addDomain("one-more.example.test", cappedKey, app);
        expect([refused.status, refused.body.code, refused.body.error]).toEqual([409, "QUOTA_EXCEEDED", expect.stringContaining(`at most ${WORKSPACE_CAP} domains`)]);
      }
      // Other workspaces are not counted against it.
      expect((await addDomain("one-more.example.test", rivalKey, rivalAppId)).status).toBe(201);
      // A removal frees a place.
      const [oldest] = (await server.request("GET", `/api/apps/${first}/domains`, { key: cappedKey })).body.domains;
      await server.request("DELETE", `/api/apps/${first}/domains/${oldest.id}`, { key: cappedKey });
      expect((await addDomain("one-more.example.test", cappedKey, second)).status).toBe(201);
    } finally {
      await deleteAllApps(server, cappedKey);
    }
  });

  test("deleting an app reserves its verified domains to the workspace, as removing them does", async () => {
    const leavingKey = (await server.createKey("leaving", "leaving-team")).key;
    const leaving = (await deployZip(server, leavingKey, { name: "leaving", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "bye" }))).body.app.id;
    await addVerifiedDomain(server, leavingKey, dns, leaving, "leaving.example.test");
    const pending = await addDomain("pending-leaving.example.test", leavingKey, leaving);
    expect(pending.body.domain.verification.status).toBe("pending");
    await deleteAllApps(server, leavingKey);
    const taken = await addDomain("leaving.example.test", rivalKey, rivalAppId);
    expect([taken.status, taken.body.code, taken.body.error]).toEqual([409, "DOMAIN_TAKEN", expect.stringContaining("reserved")]);
    // A claim never proved reserves nothing.
    expect((await addDomain("pending-leaving.example.test", rivalKey, rivalAppId)).status).toBe(201);
  });
});
