// The owner setup of a headless install: once `platform keys create` has made a passwordless
// owner, claiming it (its workspaces and keys) needs one of its keys, so nobody who merely reaches
// the server can take the install over. A truly empty instance needs none.
import { afterAll, describe, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";
import { expectErrorEnvelope, sessionCookieOf } from "../helpers/auth-matrix";

const servers: TestServer[] = [];
afterAll(() => Promise.all(servers.map((server) => server.stop())));

async function start(env: Record<string, string> = {}) {
  const server = await TestServer.start(env);
  servers.push(server);
  return server;
}

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
