// Nobody who merely reaches the server first can take a fresh install over. A truly empty
// instance asks another machine for the one-time setup token printed at start (the machine itself
// needs none); once `platform keys create` has made a passwordless owner, claiming it (its
// workspaces and keys) needs one of its keys instead.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { serversStoppedAfterAll, TestServer } from "../helpers/server";
import { expectErrorEnvelope, sessionCookieOf } from "../helpers/auth-matrix";
import { requestFrom } from "../helpers/loopback-client";

// Some tests start the server twice, and password hashing is slow on a busy machine.
setDefaultTimeout(30_000);

const start = serversStoppedAfterAll();

const OWNER = { email: "owner@example.com", password: "owner-password-1" };
const INTRUDER = { email: "intruder@example.com", password: "intruder-password" };

describe("an empty instance", () => {
  test("needs no key: the first visitor creates the owner", async () => {
    const server = await start();
    expect((await server.request("GET", "/api/auth/setup")).body).toEqual(
      expect.objectContaining({ setupRequired: true, keyRequired: false }),
    );
    expect((await server.request("POST", "/api/auth/setup", { body: OWNER })).status).toBe(201);
    expect((await server.request("GET", "/api/auth/setup")).body).toEqual(
      expect.objectContaining({ setupRequired: false, keyRequired: false }),
    );
  });
});

/** The token in the line the server printed at start: "owner setup: open http://...:port/?setup=<token> ...". */
async function printedSetupToken(server: TestServer): Promise<string> {
  for (let waited = 0; waited < 5000; waited += 50) {
    const match = /owner setup: open http:\/\/\S+:\d+\/\?setup=([A-Za-z0-9]+) /.exec(server.output);
    if (match) return match[1]!;
    await Bun.sleep(50);
  }
  throw new Error(`no setup token printed:\n${server.output}`);
}

/** A request the way a front proxy on this machine relays one: from loopback, with X-Forwarded-For. */
const relayed = { "x-forwarded-for": "198.51.100.7" };

describe("the one-time setup token", () => {
  test("is printed at start with the dashboard URL, and is new at every start", async () => {
    const server = await start();
    const first = await printedSetupToken(server);
    expect(first).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(server.output).toContain(`:${new URL(server.baseUrl).port}/?setup=${first}`);
    await server.stop();
    await server.boot();
    expect(await printedSetupToken(server)).not.toBe(first);
  });

  test("another machine must send it: missing or wrong -> 401 SETUP_TOKEN_REQUIRED, counted as failures; right -> the owner", async () => {
    const server = await start({ PLATFORM_AUTH_FAILURE_BURST: "3", PLATFORM_AUTH_FAILURE_PER_MINUTE: "1" });
    const token = await printedSetupToken(server);
    expect((await server.request("GET", "/api/auth/setup", { headers: relayed })).body).toEqual(
      expect.objectContaining({ setupRequired: true, keyRequired: false, tokenRequired: true }),
    );
    const missing = await server.request("POST", "/api/auth/setup", { body: INTRUDER, headers: relayed });
    expectErrorEnvelope(missing, 401, "SETUP_TOKEN_REQUIRED");
    expect(missing.body.error).toContain("setup token");
    expect(missing.headers.get("set-cookie")).toBeNull();
    expectErrorEnvelope(await server.request("POST", "/api/auth/setup", { body: { ...INTRUDER, setupToken: token.slice(1) + "x" }, headers: relayed }), 401, "SETUP_TOKEN_REQUIRED");
    expect((await server.request("GET", "/api/auth/setup")).body.setupRequired).toBe(true);

    // Another address still has its attempts; 127.0.0.1 has spent two of three.
    const created = await requestFrom(server, "127.0.0.2", "POST", "/api/auth/setup", { ...OWNER, setupToken: token }, relayed);
    expect(created.status).toBe(201);
    expect(sessionCookieOf(created)).toContain("platform_session=");
    expectErrorEnvelope(await server.request("POST", "/api/auth/setup", { body: INTRUDER, headers: relayed }), 409, "ALREADY_SET_UP");
    expectErrorEnvelope(await server.request("POST", "/api/auth/setup", { body: INTRUDER, headers: relayed }), 429, "RATE_LIMITED");
  });

  test("through a trusted proxy the token is asked even from a loopback peer; the machine itself needs none", async () => {
    const server = await start({ PLATFORM_TRUSTED_PROXIES: "127.0.0.1" });
    const token = await printedSetupToken(server);
    expect((await server.request("GET", "/api/auth/setup")).body.tokenRequired).toBe(true);
    expectErrorEnvelope(await server.request("POST", "/api/auth/setup", { body: OWNER }), 401, "SETUP_TOKEN_REQUIRED");
    // A direct connection from the machine (127.0.0.2 is no proxy) needs no token.
    expect((await requestFrom(server, "127.0.0.2", "GET", "/api/auth/setup")).body.tokenRequired).toBe(false);
    expect((await server.request("POST", "/api/auth/setup", { body: { ...OWNER, setupToken: token }, headers: relayed })).status).toBe(201);
    expect((await server.request("GET", "/api/auth/setup")).body).toEqual(expect.objectContaining({ setupRequired: false, tokenRequired: false }));
  });

  test("the setup is one account for its failures, but those from elsewhere never lock out the machine itself", async () => {
    const server = await start({ PLATFORM_AUTH_ACCOUNT_FAILURE_BURST: "2", PLATFORM_AUTH_ACCOUNT_FAILURE_PER_MINUTE: "1" });
    const token = await printedSetupToken(server);
    for (const address of ["127.0.0.3", "127.0.0.4"]) {
      expectErrorEnvelope(await requestFrom(server, address, "POST", "/api/auth/setup", INTRUDER, relayed), 401, "SETUP_TOKEN_REQUIRED");
    }
    // A third address, even with the right token: the setup's failures are spent.
    const locked = await requestFrom(server, "127.0.0.5", "POST", "/api/auth/setup", { ...OWNER, setupToken: token }, relayed);
    expectErrorEnvelope(locked, 429, "RATE_LIMITED");
    expect((await requestFrom(server, "127.0.0.6", "POST", "/api/auth/setup", OWNER)).status).toBe(201);
  });

  test("is not printed once the owner exists", async () => {
    const server = await start();
    expect((await server.request("POST", "/api/auth/setup", { body: OWNER })).status).toBe(201);
    await server.stop();
    await server.boot();
    await Bun.sleep(300);
    expect(server.output).not.toContain("?setup=");
  });

  test("with keys from the command line one of them is asked instead: no token", async () => {
    const server = await start();
    const cli = await server.createKey("headless");
    expect((await server.request("GET", "/api/auth/setup", { headers: relayed })).body).toEqual(
      expect.objectContaining({ keyRequired: true, tokenRequired: false }),
    );
    expect((await server.request("POST", "/api/auth/setup", { body: OWNER, key: cli.key, headers: relayed })).status).toBe(201);
  });
});

describe("an instance with keys from the command line", () => {
  test("GET /api/auth/setup says a key is required", async () => {
    const server = await start();
    await server.createKey("headless");
    expect((await server.request("GET", "/api/auth/setup")).body).toEqual(
      expect.objectContaining({ setupRequired: true, keyRequired: true }),
    );
  });

  test("setup without a key, with an unknown key or another scheme -> 401 SETUP_KEY_REQUIRED, and nothing is claimed", async () => {
    const server = await start({ PLATFORM_AUTH_FAILURE_BURST: "100" });
    const cli = await server.createKey("headless");
    const refused = await server.request("POST", "/api/auth/setup", { body: INTRUDER });
    expectErrorEnvelope(refused, 401, "SETUP_KEY_REQUIRED");
    expect(refused.body.error).toContain("platform keys create");
    expect(refused.headers.get("set-cookie")).toBeNull();
    const unknownKey = `svc_${"Q1w2E3r4T5".repeat(4)}`;
    expectErrorEnvelope(await server.request("POST", "/api/auth/setup", { body: INTRUDER, key: unknownKey }), 401, "SETUP_KEY_REQUIRED");
    const otherScheme = { authorization: `Basic ${btoa("owner:password")}` };
    expectErrorEnvelope(await server.request("POST", "/api/auth/setup", { body: INTRUDER, headers: otherScheme }), 401, "SETUP_KEY_REQUIRED");

    const session = await server.request("GET", "/api/auth/session", { key: cli.key });
    expect(session.body.user.email).toBe("owner+default@localhost");
    expectErrorEnvelope(await server.request("POST", "/api/auth/login", { body: INTRUDER }), 401, "INVALID_CREDENTIALS");
  });

  test("a disabled key of the owner does not claim it", async () => {
    const server = await start();
    const cli = await server.createKey("headless");
    const spare = await server.request("POST", "/api/api-keys/", { key: cli.key, body: { name: "spare" } });
    expect((await server.request("PUT", `/api/api-keys/${spare.body.id}`, { key: cli.key, body: { enabled: false } })).status).toBe(200);
    expectErrorEnvelope(await server.request("POST", "/api/auth/setup", { body: INTRUDER, key: spare.body.key }), 401, "SETUP_KEY_REQUIRED");
  });

  test("with one of the owner's keys the setup claims that owner, its workspace and keys; another workspace's owner is claimed apart", async () => {
    const server = await start({ PLATFORM_AUTH_FAILURE_BURST: "100" });
    const cli = await server.createKey("headless");
    const team = await server.createKey("team", "team");
    const setup = await server.request("POST", "/api/auth/setup", { body: OWNER, key: cli.key });
    expect(setup.status).toBe(201);
    const cookie = sessionCookieOf(setup);
    const organizationsOf = async (headers: Record<string, string>) =>
      (await server.request("GET", "/api/auth/session", { headers })).body.organizations.map((organization: { id: string }) => organization.id).sort();
    const session = await server.request("GET", "/api/auth/session", { headers: { cookie } });
    expect(session.body.user.email).toBe(OWNER.email);
    expect(await organizationsOf({ cookie })).toEqual([cli.workspaceId]);
    expect((await server.request("GET", "/api/auth/session", { key: cli.key })).body.user.email).toBe(OWNER.email);
    expect((await server.request("GET", "/api/auth/session", { key: team.key })).body.user.email).toBe("owner+team@localhost");

    // The team's owner is claimed with one of its keys and the password of the account that takes it over.
    const claim = (body: unknown, key?: string) => server.request("POST", "/api/auth/claim", { body, key });
    expectErrorEnvelope(await claim(OWNER), 401, "SETUP_KEY_REQUIRED");
    expectErrorEnvelope(await claim(OWNER, cli.key), 401, "SETUP_KEY_REQUIRED");
    expectErrorEnvelope(await claim({ ...OWNER, password: "wrong-password" }, team.key), 401, "INVALID_CREDENTIALS");
    const claimed = await claim(OWNER, team.key);
    expect(claimed.status).toBe(200);
    expect(await organizationsOf({ cookie })).toEqual([cli.workspaceId, team.workspaceId].sort());
    const teamSession = await server.request("GET", "/api/auth/session", { key: team.key });
    expect(teamSession.body).toEqual(expect.objectContaining({ role: "owner", user: expect.objectContaining({ email: OWNER.email }) }));
    expectErrorEnvelope(await claim(OWNER, team.key), 401, "SETUP_KEY_REQUIRED");
    expect((await server.request("GET", "/api/auth/setup")).body).toEqual(expect.objectContaining({ setupRequired: false, keyRequired: false }));
    expectErrorEnvelope(await server.request("POST", "/api/auth/setup", { body: INTRUDER, key: cli.key }), 409, "ALREADY_SET_UP");
  });

  test("guessing keys is rate limited per address like passwords: once spent, even the right key waits", async () => {
    const server = await start({ PLATFORM_AUTH_FAILURE_BURST: "2", PLATFORM_AUTH_FAILURE_PER_MINUTE: "1" });
    const cli = await server.createKey("headless");
    const guess = `svc_${"G7h8J9k0L1".repeat(4)}`;
    for (let i = 0; i < 2; i++) {
      expectErrorEnvelope(await server.request("POST", "/api/auth/setup", { body: INTRUDER, key: guess }), 401, "SETUP_KEY_REQUIRED");
    }
    const limited = await server.request("POST", "/api/auth/setup", { body: OWNER, key: cli.key });
    expectErrorEnvelope(limited, 429, "RATE_LIMITED");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });
});
