// Behind a front proxy, and against DNS rebinding. X-Forwarded-For, -Proto and -Host are believed
// only from a peer in PLATFORM_TRUSTED_PROXIES: from anyone else they change neither the address
// failures count against, nor the session cookie's Secure flag, nor the host the Origin check
// compares with. And browser requests (session cookie, setup, login) must name this server in
// `Host`: an IP, localhost or a name of PLATFORM_API_HOSTS; API keys are not asked.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { serversStoppedAfterAll, TestServer } from "../helpers/server";
import { expectErrorEnvelope, sessionCookieOf } from "../helpers/auth-matrix";
import { requestFrom } from "../helpers/loopback-client";

setDefaultTimeout(30_000);

const start = serversStoppedAfterAll();

const OWNER = { email: "owner@example.com", password: "owner-password-1" };
const FAILURE_LIMIT = { PLATFORM_AUTH_FAILURE_BURST: "3", PLATFORM_AUTH_FAILURE_PER_MINUTE: "1", PLATFORM_AUTH_ACCOUNT_FAILURE_BURST: "1000" };
/** The front proxy runs on this machine, connecting from 127.0.0.1. */
const BEHIND_PROXY = { PLATFORM_TRUSTED_PROXIES: "127.0.0.1/32,::1" };

const wrongLogin = (server: TestServer, headers: Record<string, string> = {}) =>
  server.request("POST", "/api/auth/login", { body: { email: OWNER.email, password: "wrong-password" }, headers });

describe("the address failures count against", () => {
  test("from an untrusted peer, a forged X-Forwarded-For changes nothing: its failures are 127.0.0.1's", async () => {
    const server = await start(FAILURE_LIMIT);
    expect((await requestFrom(server, "127.0.0.9", "POST", "/api/auth/setup", OWNER)).status).toBe(201);
    for (let i = 1; i <= 3; i++) {
      expectErrorEnvelope(await wrongLogin(server, { "x-forwarded-for": `198.51.100.${i}` }), 401, "INVALID_CREDENTIALS");
    }
    expectErrorEnvelope(await wrongLogin(server, { "x-forwarded-for": "198.51.100.200" }), 429, "RATE_LIMITED");
    // Another real peer still has its own failures left.
    expect((await requestFrom(server, "127.0.0.2", "POST", "/api/auth/login", OWNER)).status).toBe(200);
  });

  test("from a trusted proxy, the client it names is the address, and what the client wrote itself is not believed", async () => {
    const server = await start({ ...FAILURE_LIMIT, ...BEHIND_PROXY });
    expect((await requestFrom(server, "127.0.0.9", "POST", "/api/auth/setup", OWNER)).status).toBe(201);
    for (let i = 0; i < 3; i++) expectErrorEnvelope(await wrongLogin(server, { "x-forwarded-for": "198.51.100.1" }), 401);
    expectErrorEnvelope(await wrongLogin(server, { "x-forwarded-for": "198.51.100.1" }), 429, "RATE_LIMITED");
    // The client put a fresh address in front: the proxy appended the real one, which is what counts.
    expectErrorEnvelope(await wrongLogin(server, { "x-forwarded-for": "203.0.113.77, 198.51.100.1" }), 429, "RATE_LIMITED");
    // Another client behind the same proxy is not locked out by the first.
    const other = await server.request("POST", "/api/auth/login", { body: OWNER, headers: { "x-forwarded-for": "198.51.100.2" } });
    expect(other.status).toBe(200);
    // The audit log records the client, not the proxy.
    const key = await server.createKey("reader");
    const events = (await server.request("GET", "/api/organization/audit-log", { key: key.key })).body.events;
    expect(events.find((event: { action: string }) => event.action === "auth.login").clientAddress).toBe("198.51.100.2");
  });
});

describe("the session cookie's Secure flag", () => {
  test("X-Forwarded-Proto: https makes it Secure only from a trusted proxy", async () => {
    const direct = await start();
    expect((await direct.request("POST", "/api/auth/setup", { body: OWNER })).status).toBe(201);
    const forged = await direct.request("POST", "/api/auth/login", { body: OWNER, headers: { "x-forwarded-proto": "https" } });
    expect(forged.status).toBe(200);
    expect(forged.headers.get("set-cookie")).not.toContain("Secure");

    const proxied = await start(BEHIND_PROXY);
    // Through the proxy the setup would need the setup token: it is made on the machine itself.
    expect((await requestFrom(proxied, "127.0.0.9", "POST", "/api/auth/setup", OWNER)).status).toBe(201);
    const login = await proxied.request("POST", "/api/auth/login", { body: OWNER, headers: { "x-forwarded-proto": "https" } });
    expect(login.status).toBe(200);
    expect(login.headers.get("set-cookie")).toContain("; Secure");
  });
});

describe("the Origin check behind a proxy", () => {
  const publicOrigin = { origin: "https://paas.example.com", "x-forwarded-host": "paas.example.com", "x-forwarded-proto": "https" };

  test("X-Forwarded-Host from an untrusted peer is not the host a page must come from", async () => {
    const server = await start({ PLATFORM_API_HOSTS: "paas.example.com" });
    expect((await server.request("POST", "/api/auth/setup", { body: OWNER })).status).toBe(201);
    expectErrorEnvelope(await server.request("POST", "/api/auth/login", { body: OWNER, headers: publicOrigin }), 403, "CSRF_REJECTED");
    const cookie = sessionCookieOf(await server.request("POST", "/api/auth/login", { body: OWNER }));
    expectErrorEnvelope(await server.request("POST", "/api/auth/logout", { headers: { cookie, ...publicOrigin } }), 403, "CSRF_REJECTED");
  });

  test("from a trusted proxy, a page of the public host passes and another site's does not", async () => {
    const server = await start({ ...BEHIND_PROXY, PLATFORM_API_HOSTS: "paas.example.com" });
    expect((await requestFrom(server, "127.0.0.9", "POST", "/api/auth/setup", OWNER)).status).toBe(201);
    const login = await server.request("POST", "/api/auth/login", { body: OWNER, headers: publicOrigin });
    expect(login.status).toBe(200);
    const cookie = sessionCookieOf(login);
    const crossSite = { ...publicOrigin, origin: "https://evil.example.net" };
    expectErrorEnvelope(await server.request("POST", "/api/auth/logout", { headers: { cookie, ...crossSite } }), 403, "CSRF_REJECTED");
    expect((await server.request("POST", "/api/auth/logout", { headers: { cookie, ...publicOrigin } })).status).toBe(200);
  });
});

describe("the Host of browser requests (DNS rebinding)", () => {
  const rebound = { host: "rebind.attacker.example" };

  test("setup, login and cookie requests with a foreign Host get 403 HOST_NOT_ALLOWED; API keys are not asked", async () => {
    const server = await start();
    const setup = await server.request("POST", "/api/auth/setup", { body: OWNER, headers: rebound });
    expectErrorEnvelope(setup, 403, "HOST_NOT_ALLOWED");
    expect(setup.body.error).toContain("PLATFORM_API_HOSTS");
    expect((await server.request("GET", "/api/auth/setup")).body.setupRequired).toBe(true);

    const port = new URL(server.baseUrl).port;
    expect((await server.request("POST", "/api/auth/setup", { body: OWNER, headers: { host: `localhost:${port}` } })).status).toBe(201);
    expectErrorEnvelope(await server.request("POST", "/api/auth/login", { body: OWNER, headers: rebound }), 403, "HOST_NOT_ALLOWED");
    const cookie = sessionCookieOf(await server.request("POST", "/api/auth/login", { body: OWNER }));
    expectErrorEnvelope(await server.request("GET", "/api/auth/session", { headers: { cookie, ...rebound } }), 403, "HOST_NOT_ALLOWED");
    expect((await server.request("GET", "/api/auth/session", { headers: { cookie, host: `[::1]:${port}` } })).status).toBe(200);

    const key = await server.createKey("script");
    expect((await server.request("GET", "/api/auth/session", { key: key.key, headers: rebound })).status).toBe(200);
  });

  test("names in PLATFORM_API_HOSTS are allowed, in any case and with a port; \"*\" allows any", async () => {
    const named = await start({ PLATFORM_API_HOSTS: "paas.example.com, dashboard.lan" });
    expect((await named.request("POST", "/api/auth/setup", { body: OWNER, headers: { host: "PAAS.example.com:3000" } })).status).toBe(201);
    expect((await named.request("POST", "/api/auth/login", { body: OWNER, headers: { host: "dashboard.lan" } })).status).toBe(200);
    expectErrorEnvelope(await named.request("POST", "/api/auth/login", { body: OWNER, headers: { host: "example.com" } }), 403, "HOST_NOT_ALLOWED");

    const open = await start({ PLATFORM_API_HOSTS: "*" });
    expect((await open.request("POST", "/api/auth/setup", { body: OWNER, headers: rebound })).status).toBe(201);
  });

  test("a bad PLATFORM_TRUSTED_PROXIES or PLATFORM_API_HOSTS stops the start with a message naming it", async () => {
    await expect(start({ PLATFORM_TRUSTED_PROXIES: "10.0.0.0/8,proxy.internal" })).rejects.toThrow("PLATFORM_TRUSTED_PROXIES");
    await expect(start({ PLATFORM_API_HOSTS: "paas.example.com/admin" })).rejects.toThrow("PLATFORM_API_HOSTS");
  });
});
