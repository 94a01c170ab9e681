// Rate limits with small settings: failed authentication per client address (failed keys and
// cookies are counted, valid ones always pass; password forms take their token first, see
// security-login-race.test.ts for them under concurrency and per account), and every
// authenticated route per key. Both answer 429 RATE_LIMITED with Retry-After.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { serversStoppedAfterAll } from "../helpers/server";
import { expectErrorEnvelope } from "../helpers/auth-matrix";

// Each test starts a server and runs the CLI: seconds each on a busy machine.
setDefaultTimeout(20_000);

const start = serversStoppedAfterAll();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// 3 failures at once, then one more per minute.
const FAILURE_LIMIT = { PLATFORM_AUTH_FAILURE_BURST: "3", PLATFORM_AUTH_FAILURE_PER_MINUTE: "1" };

function expectRateLimited(response: { status: number; body: any; headers: Headers }, maxSeconds: number) {
  expectErrorEnvelope(response, 429, "RATE_LIMITED");
  const retryAfter = Number(response.headers.get("retry-after"));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(maxSeconds);
}

describe("failed authentication, per client address", () => {
  test("bad keys get 401 until the burst is spent, then 429 with Retry-After", async () => {
    const server = await start(FAILURE_LIMIT);
    const badKey = `svc_${"Z9y8X7w6V5".repeat(4)}`;
    for (let i = 0; i < 3; i++) expectErrorEnvelope(await server.request("GET", "/api/api-keys/", { key: badKey }), 401);
    expectRateLimited(await server.request("GET", "/api/api-keys/", { key: badKey }), 60);
    expectRateLimited(await server.request("GET", "/api/organization/members", { headers: { authorization: "Basic abc" } }), 60);
    expectRateLimited(await server.request("GET", "/api/auth/session", { headers: { cookie: `platform_session=${"x".repeat(43)}` } }), 60);
  });

  test("a valid key or session cookie is never refused for its address's failures", async () => {
    // Behind a TLS proxy every client has the proxy's address: bad keys from anyone must not lock out the rest.
    const server = await start(FAILURE_LIMIT);
    const setup = await server.request("POST", "/api/auth/setup", { body: { email: "owner@example.com", password: "right-password" } });
    const cookie = setup.headers.get("set-cookie")!.split(";")[0]!;
    const valid = await server.createKey("valid");
    const badKey = `svc_${"Z9y8X7w6V5".repeat(4)}`;
    for (let i = 0; i < 10; i++) await server.request("GET", "/api/api-keys/", { key: badKey });
    expectRateLimited(await server.request("GET", "/api/api-keys/", { key: badKey }), 60);
    expect((await server.request("GET", "/api/api-keys/", { key: valid.key })).status).toBe(200);
    expect((await server.request("GET", "/api/auth/session", { headers: { cookie } })).status).toBe(200);
    // No credential is no failed attempt: still the plain 401 that tells the dashboard to log in.
    expectErrorEnvelope(await server.request("GET", "/api/auth/session"), 401, "UNAUTHORIZED");
  });

  test("wrong passwords get 401 until the burst is spent, then 429, even for the right password", async () => {
    const server = await start(FAILURE_LIMIT);
    const owner = { email: "owner@example.com", password: "right-password" };
    expect((await server.request("POST", "/api/auth/setup", { body: owner })).status).toBe(201);
    const login = (password: string) => server.request("POST", "/api/auth/login", { body: { email: owner.email, password } });
    expect((await login(owner.password)).status).toBe(200);
    for (let i = 0; i < 3; i++) expectErrorEnvelope(await login("wrong-password"), 401, "INVALID_CREDENTIALS");
    expectRateLimited(await login("wrong-password"), 60);
    expectRateLimited(await login(owner.password), 60);
  });
});

describe("authenticated requests, per key", () => {
  test("a valid key over its burst gets 429 with Retry-After, other keys are not affected, and it recovers", async () => {
    const server = await start({ PLATFORM_API_RATE_BURST: "5", PLATFORM_API_RATE_PER_SECOND: "1" });
    const [busy, quiet] = [await server.createKey("busy"), await server.createKey("quiet")];
    for (let i = 0; i < 5; i++) expect((await server.request("GET", "/api/api-keys/", { key: busy.key })).status).toBe(200);
    const refused = await server.request("GET", "/api/api-keys/", { key: busy.key });
    expectRateLimited(refused, 1);
    expect((await server.request("GET", "/api/api-keys/", { key: quiet.key })).status).toBe(200);
    await sleep(Number(refused.headers.get("retry-after")) * 1000 + 100);
    expect((await server.request("GET", "/api/api-keys/", { key: busy.key })).status).toBe(200);
  });

  test("requests refused by the rate limit do not spend the key's usage quota", async () => {
    const server = await start({ PLATFORM_API_RATE_BURST: "5", PLATFORM_API_RATE_PER_SECOND: "1" });
    const admin = await server.createKey("admin");
    const created = await server.request("POST", "/api/api-keys/", { key: admin.key, body: { name: "metered", remaining: 20 } });
    const metered = created.body.key as string;
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await server.request("GET", "/api/auth/session", { key: metered })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    const listed = await server.request("GET", "/api/api-keys/", { key: admin.key });
    expect(listed.body.keys.find((key: { id: string }) => key.id === created.body.id).remaining).toBe(15);
  });
});
