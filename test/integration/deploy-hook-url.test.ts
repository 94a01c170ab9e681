// The URLs the platform hands out for other systems to call with a secret in them (an app's
// deploy hook and its webhook) start with the API's public origin: https behind
// PLATFORM_API_DOMAIN, whatever address the request that asked for them came in by.
import { expect, test } from "bun:test";
import { serversStoppedAfterAll, type TestServer } from "../helpers/server";
import { freePort } from "../helpers/ports";

const startServer = serversStoppedAfterAll();

/** A repository app whose builds fail at once: only its record is needed. */
async function appOn(server: TestServer, key: string): Promise<string> {
  const deployed = await server.request("POST", "/api/apps/deploy-from-repo", {
    key,
    body: { name: "hooked", runtime: "node", memoryMB: 64, repository: { id: "1", owner: "acme", name: "site", branch: "main" } },
  });
  expect(deployed.status).toBe(202);
  return deployed.body.app.id;
}

const CLOSED_GIT = { PLATFORM_GIT_BASE_URL: `http://127.0.0.1:${freePort()}` };

test("behind PLATFORM_API_DOMAIN the deploy-hook and webhook URLs are https on the API domain, even asked for over plain HTTP", async () => {
  const server = await startServer({ ...CLOSED_GIT, PLATFORM_API_DOMAIN: "api.platform.test", PLATFORM_PROXY_TLS_PORT: "8443" });
  const { key } = await server.createKey("owner");
  const appId = await appOn(server, key);
  const origin = "https://api.platform.test:8443";
  const hook = await server.request("GET", `/api/apps/${appId}/deploy-hook`, { key });
  expect(hook.body.deployHook.url).toStartWith(`${origin}/api/webhooks/deploy/${appId}/`);
  const rotated = await server.request("POST", `/api/apps/${appId}/deploy-hook`, { key });
  expect(rotated.body.deployHook.url).toStartWith(`${origin}/api/webhooks/deploy/${appId}/`);
  expect((await server.request("GET", `/api/apps/${appId}/webhook`, { key })).body.webhook.url).toBe(`${origin}/api/webhooks/github/${appId}`);
});

test("without an API domain, the origin a trusted front proxy reports is kept, https included", async () => {
  const server = await startServer({ ...CLOSED_GIT, PLATFORM_TRUSTED_PROXIES: "127.0.0.1" });
  const { key } = await server.createKey("owner");
  const appId = await appOn(server, key);
  const forwarded = { "x-forwarded-proto": "https", "x-forwarded-host": "platform.example.com" };
  const hook = await server.request("GET", `/api/apps/${appId}/deploy-hook`, { key, headers: forwarded });
  expect(hook.body.deployHook.url).toStartWith(`https://platform.example.com/api/webhooks/deploy/${appId}/`);
  // Straight to the server: the address it was reached at.
  expect((await server.request("GET", `/api/apps/${appId}/deploy-hook`, { key })).body.deployHook.url).toStartWith(`${server.baseUrl}/api/webhooks/deploy/${appId}/`);
});
