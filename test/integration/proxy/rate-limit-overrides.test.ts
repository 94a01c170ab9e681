// An app's own rate limits at the public proxy (settings `rateLimits`), on a real app behind the
// real proxy: set through the API, they apply from the next request, with no restart or
// redeploy; cleared, the platform's defaults apply again.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

let server: TestServer;
let key: string;
let app: { id: string; subdomain: string; status: string; currentBuildId: string };

beforeAll(async () => {
  server = await TestServer.start(); // the default limits: 200 at once per client, 100 a second
  key = (await server.createKey("overrides")).key;
  const zip = appZip({
    "package.json": JSON.stringify({ name: "limited", main: "server.js" }),
    "server.js": 'require("http").createServer((req, res) => res.end("ok")).listen(process.env.PORT);\n',
  });
  const deployed = await deployZip(server, key, { name: "limited", runtime: "node", memoryMB: "96" }, zip);
  expect(deployed.status).toBe(202);
  app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
  expect(app.status).toBe("running");
}, 180_000);
afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

const settings = (rateLimits: unknown) => server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { rateLimits } });

async function statusesOf(count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await viaProxy(server, app.subdomain);
    await response.arrayBuffer();
    statuses.push(response.status);
  }
  return statuses;
}

test("a low override refuses the 4th quick request with the app's numbers; cleared, the defaults apply again", async () => {
  const lowered = await settings({ clientBurst: 3, clientRps: 1 });
  expect(lowered.status).toBe(200);
  expect(lowered.body).toMatchObject({ restarted: false, app: { rateLimits: { clientBurst: 3, clientRps: 1 }, effectiveRateLimits: { clientBurst: 3, clientRps: 1 } } });

  expect(await statusesOf(3)).toEqual([200, 200, 200]);
  const refused = await viaProxy(server, app.subdomain, "/", { headers: { accept: "application/json" } });
  expect(refused.status).toBe(429);
  expect((await refused.json()).code).toBe("RATE_LIMITED");
  expect(refused.headers.get("ratelimit-policy")).toBe('"client";q=3;w=3');
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

  const cleared = await settings(null);
  expect(cleared.body.app).toMatchObject({ rateLimits: null, effectiveRateLimits: { clientBurst: 200, clientRps: 100 } });
  // The refused client's 3 requests count against the default burst of 200: it may send 197 more at once.
  expect(await statusesOf(20)).toEqual(Array(20).fill(200));

  // Neither change restarted or redeployed the app.
  const after = (await server.request("GET", `/api/apps/${app.id}`, { key })).body.app;
  expect(after).toMatchObject({ status: "running", currentBuildId: app.currentBuildId });
}, 60_000);
