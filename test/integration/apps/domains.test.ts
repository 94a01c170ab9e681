// An app's own domains: routed by the public proxy as its subdomain is, through subdomain changes,
// a stop and a platform restart; names checked, one app each platform-wide.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, waitForStatus } from "../../helpers/apps";

let server: TestServer;
let key: string;
let appId: string;

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("domains")).key;
  const response = await deployZip(server, key, { name: "shop", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "<p>the shop</p>" }));
  appId = response.body.app.id;
  await waitForStatus(server, key, appId, ["running"]);
});
afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

/** A request through the proxy with `host` as its Host header. */
const asHost = (host: string) => fetch(`http://127.0.0.1:${server.proxyPort}/`, { headers: { host } });
/** The status through the proxy once it is `wanted`, or the last one after 10 s (routes are restored asynchronously). */
async function statusOnceSettled(host: string, wanted: number): Promise<number> {
  let status = 0;
  for (const deadline = Date.now() + 10_000; Date.now() < deadline && status !== wanted; await Bun.sleep(100)) status = (await asHost(host)).status;
  return status;
}
const addDomain = (domain: string, apiKey = key, app = appId) => server.request("POST", `/api/apps/${app}/domains`, { key: apiKey, body: { domain } });

describe("an app's own domains", () => {
  test("a domain added reaches the app through the proxy, whatever its case, port or trailing dot", async () => {
    expect((await asHost("www.shop.example.test")).status).toBe(404);
    const added = await addDomain("WWW.Shop.Example.test.");
    expect(added.status).toBe(201);
    expect(added.body.domain).toMatchObject({ appId, domain: "www.shop.example.test", unicodeDomain: "www.shop.example.test", url: `http://www.shop.example.test:${server.proxyPort}` });
    for (const host of ["www.shop.example.test", "WWW.SHOP.EXAMPLE.TEST", `www.shop.example.test.:${server.proxyPort}`]) {
      const response = await asHost(host);
      expect({ host, status: response.status, text: await response.text() }).toEqual({ host, status: 200, text: "<p>the shop</p>" });
    }
    const listed = await server.request("GET", `/api/apps/${appId}/domains`, { key });
    expect(listed.body.domains.map((domain: any) => domain.domain)).toEqual(["www.shop.example.test"]);
  });

  test("an internationalised name is kept as punycode, as browsers send it", async () => {
    const added = await addDomain("bücher.example.test");
    expect(added.body.domain).toMatchObject({ domain: "xn--bcher-kva.example.test", unicodeDomain: "bücher.example.test" });
    expect(await (await asHost("xn--bcher-kva.example.test")).text()).toBe("<p>the shop</p>");
  });

  test("what is not a host name, or is the platform's own, is refused", async () => {
    for (const domain of ["not a domain", "1.2.3.4", "[::1]", "*.example.test", "single", "-bad.example.test", `${"a".repeat(64)}.example.test`]) {
      const response = await addDomain(domain);
      expect({ domain, status: response.status, code: response.body.code }).toEqual({ domain, status: 400, code: "VALIDATION_FAILED" });
    }
    for (const domain of ["localhost", "other.localhost"]) {
      const response = await addDomain(domain);
      expect({ domain, status: response.status, code: response.body.code }).toEqual({ domain, status: 400, code: "DOMAIN_RESERVED" });
    }
  });

  test("a domain belongs to one app on the whole platform", async () => {
    const again = await addDomain("www.shop.example.test");
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("DOMAIN_TAKEN");
    const otherKey = (await server.createKey("other", "other-team")).key;
    const other = await deployZip(server, otherKey, { name: "rival", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "rival" }));
    const taken = await addDomain("www.shop.example.test", otherKey, other.body.app.id);
    expect(taken.status).toBe(409);
    expect(taken.body.code).toBe("DOMAIN_TAKEN");
    // Another workspace's app is not found through this route.
    expect((await addDomain("rival.example.test", otherKey, appId)).status).toBe(404);
    await deleteAllApps(server, otherKey);
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
  }, 120_000);

  test("a removed domain no longer routes, and another app may take it", async () => {
    const [domain] = (await server.request("GET", `/api/apps/${appId}/domains`, { key })).body.domains;
    const removed = await server.request("DELETE", `/api/apps/${appId}/domains/${domain.id}`, { key });
    expect(removed.status).toBe(200);
    expect(removed.body.domain.domain).toBe("www.shop.example.test");
    expect((await asHost("www.shop.example.test")).status).toBe(404);
    expect((await server.request("DELETE", `/api/apps/${appId}/domains/${domain.id}`, { key })).status).toBe(404);
    expect((await addDomain("www.shop.example.test")).status).toBe(201);
  });
});
