// The session cookie against tenant apps on a shared parent domain (cookie tossing): an app of
// `<app>.<PLATFORM_DOMAIN>` may set `platform_session` with `Domain=` the parent, and browsers send
// it to the dashboard whatever its port. Over HTTPS the cookie is `__Host-platform_session`, which
// no other host can set; a request with two session cookies is refused; and the start warns when
// the apps and the dashboard share a registrable domain.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { serversStoppedAfterAll, type TestServer } from "../helpers/server";
import { expectErrorEnvelope, sessionCookieOf } from "../helpers/auth-matrix";
import { requestFrom } from "../helpers/loopback-client";
import { RawConnection, requestHead } from "../helpers/raw-http";
import { makeCertificate } from "../helpers/certificates";

setDefaultTimeout(30_000);

const start = serversStoppedAfterAll();

const OWNER = { email: "owner@example.com", password: "owner-password-1" };
const TENANT = { email: "tenant@example.com", password: "tenant-password-1" };
/** A front proxy on this machine terminates TLS and connects from 127.0.0.1. */
const BEHIND_PROXY = { PLATFORM_TRUSTED_PROXIES: "127.0.0.1/32,::1" };
const OVER_HTTPS = { "x-forwarded-proto": "https" };

async function withTwoAccounts(server: TestServer): Promise<{ owner: string; tenant: string }> {
  expect((await requestFrom(server, "127.0.0.9", "POST", "/api/auth/setup", OWNER)).status).toBe(201);
  const key = await server.createKey("inviter");
  const invited = await server.request("POST", "/api/organization/invitations", { key: key.key, body: { email: TENANT.email, role: "viewer" } });
  const accepted = await server.request("POST", `/api/organization/invitations/${invited.body.invitation.id}/accept`, { body: { password: TENANT.password } });
  expect(accepted.status).toBe(200);
  const tokenOf = (response: { headers: Headers }) => sessionCookieOf(response).split("=")[1]!;
  const owner = tokenOf(await server.request("POST", "/api/auth/login", { body: OWNER }));
  const tenant = tokenOf(await server.request("POST", "/api/auth/login", { body: TENANT }));
  return { owner, tenant };
}

/** A line of the server's output, once it is there. */
async function printed(server: TestServer, pattern: RegExp): Promise<RegExpExecArray> {
  for (let waited = 0; waited < 5000; waited += 50) {
    const match = pattern.exec(server.output);
    if (match) return match;
    await Bun.sleep(50);
  }
  throw new Error(`not printed: ${pattern}\n${server.output}`);
}

const whoIs = (server: TestServer, cookie: string, headers: Record<string, string> = {}) =>
  server.request("GET", "/api/auth/session", { headers: { cookie, ...headers } });

describe("two session cookies", () => {
  test("a request carrying a second session cookie (one a tenant's app set) is refused with 400 DUPLICATE_SESSION_COOKIE", async () => {
    const server = await start();
    const { owner, tenant } = await withTwoAccounts(server);
    expect((await whoIs(server, `platform_session=${owner}`)).body.user.email).toBe(OWNER.email);
    // The tenant's cookie, set with Domain=<parent> and a longer Path, is listed first by the browser.
    const tossed = await whoIs(server, `platform_session=${tenant}; platform_session=${owner}`);
    expectErrorEnvelope(tossed, 400, "DUPLICATE_SESSION_COOKIE");
    expect(tossed.body.error).toContain("Clear this site's cookies");
    expectErrorEnvelope(await whoIs(server, `platform_session=${owner}; theme=dark; platform_session=junk`), 400, "DUPLICATE_SESSION_COOKIE");
    // A key is not a cookie: it is not asked.
    const key = await server.createKey("script");
    expect((await server.request("GET", "/api/auth/session", { key: key.key, headers: { cookie: `platform_session=a; platform_session=b` } })).status).toBe(200);
  });
});

describe("over HTTPS the cookie is __Host-platform_session", () => {
  test("behind a trusted TLS proxy (X-Forwarded-Proto: https): __Host-, Secure, Path=/, no Domain; the unprefixed name is not read", async () => {
    const server = await start(BEHIND_PROXY);
    const { tenant } = await withTwoAccounts(server);
    const login = await server.request("POST", "/api/auth/login", { body: OWNER, headers: OVER_HTTPS });
    expect(login.status).toBe(200);
    const setCookie = login.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/^__Host-platform_session=[A-Za-z0-9]{32,}; Path=\/; /);
    expect(setCookie).toContain("; Secure");
    expect(setCookie.toLowerCase()).not.toContain("domain=");
    const owner = sessionCookieOf(login);
    expect((await whoIs(server, owner, OVER_HTTPS)).body.user.email).toBe(OWNER.email);
    // A tenant's page can set only an unprefixed cookie: over HTTPS it is not a session at all.
    expect((await whoIs(server, `platform_session=${tenant}; ${owner}`, OVER_HTTPS)).body.user.email).toBe(OWNER.email);
    expectErrorEnvelope(await whoIs(server, `platform_session=${tenant}`, OVER_HTTPS), 401, "UNAUTHORIZED");
    // Over plain HTTP the cookie keeps its name (the prefix needs Secure).
    expect((await server.request("POST", "/api/auth/login", { body: OWNER })).headers.get("set-cookie")).toMatch(/^platform_session=/);
    const logout = await server.request("POST", "/api/auth/logout", { headers: { cookie: owner, origin: "http://" + new URL(server.baseUrl).host, ...OVER_HTTPS } });
    expect(logout.headers.get("set-cookie")).toMatch(/^__Host-platform_session=; Path=\/; .*Max-Age=0; Secure$/);
  });

  test("through the platform's own HTTPS listener at PLATFORM_API_DOMAIN", async () => {
    const wildcard = await makeCertificate({ names: ["*.apps.test"] });
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const tlsPort = probe.port;
    probe.stop(true);
    const server = await start({
      PLATFORM_DOMAIN: "apps.test",
      PLATFORM_PROXY_TLS_PORT: String(tlsPort),
      PLATFORM_TLS_CERT: wildcard.certFile,
      PLATFORM_TLS_KEY: wildcard.keyFile,
      PLATFORM_API_DOMAIN: "console.apps.test",
    });
    // The API believes the proxy's X-Forwarded-* from loopback now: the setup needs the printed token.
    const setupToken = (await printed(server, /\?setup=([A-Za-z0-9]+)/))[1];
    expect((await server.request("POST", "/api/auth/setup", { body: { ...OWNER, setupToken } })).status).toBe(201);
    const body = JSON.stringify(OWNER);
    const connection = await RawConnection.openTls(tlsPort, "console.apps.test", wildcard.chainPem);
    await connection.write(requestHead("POST", "/api/auth/login", "console.apps.test", { "content-type": "application/json", connection: "close" }, body.length) + body);
    const login = await connection.readResponse();
    expect(login.status).toBe(200);
    expect(login.headers.get("set-cookie")).toMatch(/^__Host-platform_session=[A-Za-z0-9]{32,}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+; Secure$/);
  });
});

describe("the warning at start", () => {
  const WARNING = "share the registrable domain";

  test("printed when the dashboard's name and the apps' domain share a parent", async () => {
    const server = await start({ PLATFORM_DOMAIN: "apps.example.com", PLATFORM_API_DOMAIN: "paas.example.com", PLATFORM_API_HOSTS: "paas.example.com" });
    expect((await printed(server, /\[auth\] WARNING: .*/))[0]).toContain(`[auth] WARNING: apps (*.apps.example.com) and the dashboard (paas.example.com) ${WARNING} example.com`);
  });

  test("not printed when they are under different registrable domains", async () => {
    const server = await start({ PLATFORM_DOMAIN: "apps.example.com", PLATFORM_API_DOMAIN: "paas.example.net", PLATFORM_API_HOSTS: "paas.example.net" });
    await printed(server, /owner setup: open/);
    expect(server.output).not.toContain(WARNING);
  });
});
