// A limited key stays limited: it cannot lift its own quota or enabled flag, nor another key's,
// nor create a key with more quota or a later expiry than it has. Sessions and unlimited keys are
// not affected.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer, type CreatedKey } from "../helpers/server";
import { expectErrorEnvelope, sessionCookieOf } from "../helpers/auth-matrix";

let server: TestServer;
let admin: CreatedKey;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_API_RATE_BURST: "10000" });
  admin = await server.createKey("admin");
});
afterAll(() => server.stop());

async function createKey(key: string, body: Record<string, unknown>) {
  const response = await server.request("POST", "/api/api-keys/", { key, body });
  expect(response.status).toBe(201);
  return response.body as { key: string; id: string; apiKey: Record<string, any> };
}

describe("a key cannot lift its own limits", () => {
  test("PUT on itself of remaining, refill settings or enabled -> 403 FORBIDDEN, and nothing changes", async () => {
    const limited = await createKey(admin.key, { name: "limited", remaining: 10, expiresIn: 60 });
    for (const body of [{ remaining: null }, { remaining: 1000 }, { refillAmount: 10, refillInterval: 1 }, { enabled: true }]) {
      const response = await server.request("PUT", `/api/api-keys/${limited.id}`, { key: limited.key, body });
      expectErrorEnvelope(response, 403, "FORBIDDEN");
      expect(response.body.error).toContain("its own");
    }
    const listed = await server.request("GET", "/api/api-keys/", { key: admin.key });
    const stored = listed.body.keys.find((key: { id: string }) => key.id === limited.id);
    expect(stored).toEqual(expect.objectContaining({ remaining: 6, refillAmount: null, enabled: true }));
  });

  test("it may still rename itself and change its metadata", async () => {
    const limited = await createKey(admin.key, { name: "limited", remaining: 10 });
    const response = await server.request("PUT", `/api/api-keys/${limited.id}`, { key: limited.key, body: { name: "renamed", metadata: { team: "a" } } });
    expect(response.status).toBe(200);
    expect(response.body.apiKey).toEqual(expect.objectContaining({ name: "renamed", metadata: { team: "a" } }));
  });

  test("another key, and a session, may change its limits", async () => {
    const limited = await createKey(admin.key, { name: "limited", remaining: 10 });
    expect((await server.request("PUT", `/api/api-keys/${limited.id}`, { key: admin.key, body: { remaining: 50 } })).body.apiKey.remaining).toBe(50);
    const setup = await server.request("POST", "/api/auth/setup", { body: { email: "owner@example.com", password: "owner-password" }, key: admin.key });
    expect(setup.status).toBe(201);
    const asBrowser = { cookie: sessionCookieOf(setup), origin: server.baseUrl };
    const response = await server.request("PUT", `/api/api-keys/${limited.id}`, { headers: asBrowser, body: { remaining: null } });
    expect(response.status).toBe(200);
    expect(response.body.apiKey.remaining).toBeNull();
  });
});

describe("a key with a quota or an expiry creates keys only within them", () => {
  test("the review's case: remaining 3 and expiresIn 60 cannot make an unlimited, never-expiring key", async () => {
    const limited = await createKey(admin.key, { name: "limited", remaining: 3, expiresIn: 60 });
    const response = await server.request("POST", "/api/api-keys/", { key: limited.key, body: { name: "escape" } });
    expectErrorEnvelope(response, 403, "FORBIDDEN");
    expect(response.body.error).toContain("may not exceed its limits");
    const names = (await server.request("GET", "/api/api-keys/", { key: admin.key })).body.keys.map((key: { name: string }) => key.name);
    expect(names).not.toContain("escape");
  });

  test("more quota, a refill or a later expiry than the issuer has -> 403", async () => {
    const limited = await createKey(admin.key, { name: "limited", remaining: 10, expiresIn: 600 });
    for (const body of [
      { name: "more quota", remaining: 100, expiresIn: 60 },
      { name: "no quota", expiresIn: 60 },
      { name: "refills", remaining: 1, refillAmount: 5, refillInterval: 60, expiresIn: 60 },
      { name: "outlives", remaining: 1, expiresIn: 3600 },
      { name: "never expires", remaining: 1 },
    ]) {
      expectErrorEnvelope(await server.request("POST", "/api/api-keys/", { key: limited.key, body }), 403, "FORBIDDEN");
    }
  });

  test("within its limits it may create keys", async () => {
    const limited = await createKey(admin.key, { name: "limited", remaining: 10, expiresIn: 600 });
    // This request spends one unit: 9 are left for the new key at most.
    const child = await createKey(limited.key, { name: "child", remaining: 9, expiresIn: 300 });
    expect(child.apiKey.remaining).toBe(9);
    const refilling = await createKey(admin.key, { name: "refilling", remaining: 10, refillAmount: 10, refillInterval: 60 });
    const slower = await createKey(refilling.key, { name: "slower", remaining: 5, refillAmount: 5, refillInterval: 120 });
    expect(slower.apiKey).toEqual(expect.objectContaining({ refillAmount: 5, refillInterval: 120 }));
  });

  test("an unlimited key is not restricted", async () => {
    expect((await createKey(admin.key, { name: "unlimited child" })).apiKey).toEqual(expect.objectContaining({ remaining: null, expiresAt: null }));
  });
});

describe("a limited key cannot lift another key's limits", () => {
  test("the recipe: K1 (remaining 3) makes K2 (remaining 1); K2 cannot make K1 unlimited", async () => {
    const k1 = await createKey(admin.key, { name: "K1", remaining: 3 });
    const k2 = await createKey(k1.key, { name: "K2", remaining: 1 });
    const response = await server.request("PUT", `/api/api-keys/${k1.id}`, { key: k2.key, body: { remaining: null } });
    expectErrorEnvelope(response, 403, "FORBIDDEN");
    expect(response.body.error).toContain("may not lift another key's limits");
    const stored = (await server.request("GET", "/api/api-keys/", { key: admin.key })).body.keys.find((key: { id: string }) => key.id === k1.id);
    expect(stored.remaining).toBe(2);
  });

  test("nor raise its quota, give it a refill or enable it; an expiring key neither", async () => {
    const target = await createKey(admin.key, { name: "target", remaining: 5 });
    expect((await server.request("PUT", `/api/api-keys/${target.id}`, { key: admin.key, body: { enabled: false } })).status).toBe(200);
    const quota = await createKey(admin.key, { name: "quota", remaining: 100 });
    const expiring = await createKey(admin.key, { name: "expiring", expiresIn: 600 });
    for (const limited of [quota, expiring]) {
      for (const body of [{ remaining: 50 }, { refillAmount: 5, refillInterval: 60 }, { enabled: true }]) {
        expectErrorEnvelope(await server.request("PUT", `/api/api-keys/${target.id}`, { key: limited.key, body }), 403, "FORBIDDEN");
      }
    }
    const stored = (await server.request("GET", "/api/api-keys/", { key: admin.key })).body.keys.find((key: { id: string }) => key.id === target.id);
    expect(stored).toEqual(expect.objectContaining({ remaining: 5, refillAmount: null, enabled: false }));
    // Lowering stays possible, and an unlimited key may lift.
    expect((await server.request("PUT", `/api/api-keys/${target.id}`, { key: quota.key, body: { remaining: 2 } })).status).toBe(200);
    expect((await server.request("PUT", `/api/api-keys/${target.id}`, { key: admin.key, body: { remaining: null, enabled: true } })).status).toBe(200);
  });
});

describe("keys per user per workspace", () => {
  test("at most 100: the 101st -> 409 KEY_LIMIT_REACHED, also from the command line, until one is revoked", async () => {
    const first = await server.createKey("first", "capped");
    const created: string[] = [];
    for (let i = 2; i <= 100; i++) created.push((await createKey(first.key, { name: `key ${i}` })).id);
    const refused = await server.request("POST", "/api/api-keys/", { key: first.key, body: { name: "key 101" } });
    expectErrorEnvelope(refused, 409, "KEY_LIMIT_REACHED");
    expect(refused.body.error).toContain("revoke");
    await expect(server.createKey("key 101", "capped")).rejects.toThrow(/revoke/);
    // Another workspace counts its own keys.
    expect((await server.request("POST", "/api/api-keys/", { key: admin.key, body: { name: "elsewhere" } })).status).toBe(201);

    expect((await server.request("DELETE", `/api/api-keys/${created[0]}`, { key: first.key })).status).toBe(200);
    expect((await server.request("POST", "/api/api-keys/", { key: first.key, body: { name: "key 101" } })).status).toBe(201);
  });
});
