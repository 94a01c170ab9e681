// /api/api-keys: creating, listing, updating and revoking keys, expiry, the usage quota, and the
// error envelope for bad requests.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer, type CreatedKey } from "../helpers/server";
import { expectErrorEnvelope } from "../helpers/auth-matrix";
import { tempDir } from "../helpers/temp";
import { loadConfig } from "../../src/config";
import { openDatabase } from "../../src/db";
import { createServerContext } from "../../src/http/context";
import { createServer } from "../../src/http/server";

let server: TestServer;
let admin: CreatedKey;

// The per-key rate limit is not under test here; the concurrency test sends a burst on purpose.
beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_API_RATE_BURST: "10000" });
  admin = await server.createKey("admin");
});
afterAll(() => server.stop());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function createKey(body: Record<string, unknown>) {
  const response = await server.request("POST", "/api/api-keys/", { key: admin.key, body });
  expect(response.status).toBe(201);
  return response.body as { key: string; id: string; apiKey: Record<string, any> };
}

async function listed(id: string) {
  const response = await server.request("GET", "/api/api-keys/", { key: admin.key });
  expect(response.status).toBe(200);
  return response.body.keys.find((key: { id: string }) => key.id === id);
}

const whoAmI = (key: string) => server.request("GET", "/api/auth/session", { key });

describe("create", () => {
  test("answers 201 with the full key, once, and its id", async () => {
    const response = await server.request("POST", "/api/api-keys/", { key: admin.key, body: { name: "deploy bot" } });
    expect(response.status).toBe(201);
    expect(response.body.success).toBe(true);
    expect(response.body.key).toMatch(/^svc_[A-Za-z0-9]{40,}$/);
    expect(response.body.id).toEqual(expect.any(String));
    expect((await whoAmI(response.body.key)).status).toBe(200);
    const list = await server.request("GET", "/api/api-keys/", { key: admin.key });
    expect(JSON.stringify(list.body)).not.toContain(response.body.key.slice(4));
  });

  test("a custom prefix goes after svc_", async () => {
    const { key, id } = await createKey({ name: "ci", prefix: "ci" });
    expect(key).toMatch(/^svc_ci_[A-Za-z0-9]{40,}$/);
    expect((await listed(id)).prefix).toBe("svc_ci_");
    expect((await whoAmI(key)).status).toBe(200);
  });

  test("two keys never share a value", async () => {
    const [first, second] = await Promise.all([createKey({ name: "a" }), createKey({ name: "b" })]);
    expect(first.key).not.toBe(second.key);
    expect(first.id).not.toBe(second.id);
  });

  test("metadata is stored and returned", async () => {
    const metadata = { team: "payments", tags: ["ci", "prod"], limits: { nested: true, n: 3 } };
    const { apiKey, id } = await createKey({ name: "with metadata", metadata });
    expect(apiKey.metadata).toEqual(metadata);
    expect((await listed(id)).metadata).toEqual(metadata);
  });
});

describe("list", () => {
  test("shows name, prefix, enabled, remaining, timestamps, lastUsedAt and metadata, never the key", async () => {
    const { key, id } = await createKey({ name: "listed", remaining: 50 });
    const before = await listed(id);
    expect(before).toEqual(
      expect.objectContaining({ id, name: "listed", prefix: "svc_", enabled: true, remaining: 50, lastUsedAt: null, metadata: null }),
    );
    for (const field of ["createdAt", "updatedAt"]) expect(new Date(before[field]).toISOString()).toBe(before[field]);
    expect(JSON.stringify(before)).not.toContain(key.slice(4));
    // Enough of the key to tell keys apart, far too little to use it.
    expect(before.start).toBe(key.slice(0, 8));

    await whoAmI(key);
    const after = await listed(id);
    expect(after.remaining).toBe(49);
    expect(Date.parse(after.lastUsedAt)).toBeGreaterThanOrEqual(Date.parse(before.createdAt));
  });

  test("lists only the caller's keys of its workspace", async () => {
    const elsewhere = await server.createKey("elsewhere", "list-other");
    const mine = await server.request("GET", "/api/api-keys/", { key: admin.key });
    const ids = mine.body.keys.map((key: { id: string }) => key.id);
    expect(ids).toContain(admin.id);
    expect(ids).not.toContain(elsewhere.id);
  });
});

describe("update", () => {
  test("changes name, remaining and metadata and moves updatedAt", async () => {
    const { id, apiKey } = await createKey({ name: "before", metadata: { v: 1 } });
    await sleep(5);
    const response = await server.request("PUT", `/api/api-keys/${id}`, {
      key: admin.key,
      body: { name: "after", remaining: 7, metadata: { v: 2 } },
    });
    expect(response.status).toBe(200);
    const now = await listed(id);
    expect(now).toEqual(expect.objectContaining({ name: "after", remaining: 7, metadata: { v: 2 } }));
    expect(Date.parse(now.updatedAt)).toBeGreaterThan(Date.parse(apiKey.updatedAt));
    expect(now.createdAt).toBe(apiKey.createdAt);
  });

  test("a disabled key gets 401 and works again once enabled", async () => {
    const { key, id } = await createKey({ name: "toggled" });
    await server.request("PUT", `/api/api-keys/${id}`, { key: admin.key, body: { enabled: false } });
    expect((await listed(id)).enabled).toBe(false);
    expectErrorEnvelope(await whoAmI(key), 401);
    await server.request("PUT", `/api/api-keys/${id}`, { key: admin.key, body: { enabled: true } });
    expect((await whoAmI(key)).status).toBe(200);
  });

  test("an unknown key id is 404", async () => {
    const response = await server.request("PUT", "/api/api-keys/key_doesnotexist", { key: admin.key, body: { name: "x" } });
    expectErrorEnvelope(response, 404);
  });
});

describe("revoke", () => {
  test("deletes the key for good and records api_key.revoked in the audit log", async () => {
    const { key, id } = await createKey({ name: "to revoke" });
    const response = await server.request("DELETE", `/api/api-keys/${id}`, { key: admin.key });
    expect(response.status).toBe(200);
    expectErrorEnvelope(await whoAmI(key), 401);
    expect(await listed(id)).toBeUndefined();
    expectErrorEnvelope(await server.request("DELETE", `/api/api-keys/${id}`, { key: admin.key }), 404);

    const audit = await server.request("GET", "/api/organization/audit-log", { key: admin.key });
    const event = audit.body.events.find((entry: any) => entry.action === "api_key.revoked" && entry.target === `to revoke (${id})`);
    expect(event).toBeDefined();
    expect(event.actor).toEqual({ type: "api_key", id: admin.id });
    expect(Math.abs(Date.now() - Date.parse(event.createdAt))).toBeLessThan(60_000);
  });

  test("a key can revoke itself", async () => {
    const { key, id } = await createKey({ name: "self revoking" });
    expect((await server.request("DELETE", `/api/api-keys/${id}`, { key })).status).toBe(200);
    expectErrorEnvelope(await whoAmI(key), 401);
  });
});

describe("expiry", () => {
  test("expiresIn makes the key stop working: 401 KEY_EXPIRED", async () => {
    const { key, apiKey } = await createKey({ name: "short lived", expiresIn: 1 });
    expect(Date.parse(apiKey.expiresAt) - Date.parse(apiKey.createdAt)).toBe(1000);
    expect((await whoAmI(key)).status).toBe(200);
    await sleep(1100);
    expectErrorEnvelope(await whoAmI(key), 401, "KEY_EXPIRED");
  });

  test("expiresIn null means never", async () => {
    const { key, apiKey } = await createKey({ name: "forever", expiresIn: null });
    expect(apiKey.expiresAt).toBeNull();
    expect((await whoAmI(key)).status).toBe(200);
  });
});

describe("usage quota", () => {
  test("remaining 3: three requests, then 429 USAGE_EXCEEDED without Retry-After", async () => {
    const { key, id } = await createKey({ name: "three", remaining: 3 });
    for (let i = 0; i < 3; i++) expect((await whoAmI(key)).status).toBe(200);
    const refused = await whoAmI(key);
    expectErrorEnvelope(refused, 429, "USAGE_EXCEEDED");
    expect(refused.headers.get("retry-after")).toBeNull();
    expect((await listed(id)).remaining).toBe(0);
  });

  test("with a refill: 429 with Retry-After, and after the interval it works again", async () => {
    const { key } = await createKey({ name: "refilled", remaining: 1, refillAmount: 2, refillInterval: 1 });
    expect((await whoAmI(key)).status).toBe(200);
    const refused = await whoAmI(key);
    expectErrorEnvelope(refused, 429, "USAGE_EXCEEDED");
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBe(1);
    await sleep(retryAfter * 1000 + 100);
    expect((await whoAmI(key)).status).toBe(200);
    expect((await whoAmI(key)).status).toBe(200);
    expectErrorEnvelope(await whoAmI(key), 429, "USAGE_EXCEEDED");
  });

  test("raising remaining on a spent key lets it work again", async () => {
    const { key, id } = await createKey({ name: "topped up", remaining: 0 });
    expectErrorEnvelope(await whoAmI(key), 429, "USAGE_EXCEEDED");
    await server.request("PUT", `/api/api-keys/${id}`, { key: admin.key, body: { remaining: 1 } });
    expect((await whoAmI(key)).status).toBe(200);
  });

  test("is spent atomically: of 2N concurrent requests exactly N get through", async () => {
    const quota = 25;
    const { key, id } = await createKey({ name: "contended", remaining: quota });
    const statuses = await Promise.all(Array.from({ length: 2 * quota }, () => whoAmI(key).then((r) => r.status)));
    expect(statuses.filter((status) => status === 200).length).toBe(quota);
    expect(statuses.filter((status) => status === 429).length).toBe(quota);
    expect((await listed(id)).remaining).toBe(0);
  });
});

describe("bad requests", () => {
  const invalid: [string, Record<string, unknown>][] = [
    ["name", {}],
    ["name", { name: "" }],
    ["expiresIn", { name: "x", expiresIn: "soon" }],
    ["expiresIn", { name: "x", expiresIn: 0 }],
    ["remaining", { name: "x", remaining: -1 }],
    ["prefix", { name: "x", prefix: "not-allowed!" }],
    ["metadata", { name: "x", metadata: "a string" }],
    ["metadata", { name: "x", metadata: [1, 2] }],
    ["metadata", { name: "x", metadata: { big: "x".repeat(5000) } }],
  ];
  for (const [field, body] of invalid) {
    test(`${JSON.stringify(body).slice(0, 60)} -> 400 VALIDATION_FAILED naming ${field}`, async () => {
      const response = await server.request("POST", "/api/api-keys/", { key: admin.key, body });
      expectErrorEnvelope(response, 400, "VALIDATION_FAILED");
      expect(response.body.error).toContain(field);
    });
  }

  test("an update with a wrong type names the field", async () => {
    const response = await server.request("PUT", `/api/api-keys/${admin.id}`, { key: admin.key, body: { enabled: "no" } });
    expectErrorEnvelope(response, 400, "VALIDATION_FAILED");
    expect(response.body.error).toContain("enabled");
  });

  test("a body that is not JSON -> 400 INVALID_JSON", async () => {
    const response = await server.request("POST", "/api/api-keys/", {
      key: admin.key,
      body: '{"name": "unterminated',
      headers: { "content-type": "application/json" },
    });
    expectErrorEnvelope(response, 400, "INVALID_JSON");
  });

  test("an unknown route -> 404 NOT_FOUND, with or without a key", async () => {
    expectErrorEnvelope(await server.request("GET", "/api/no-such-thing", { key: admin.key }), 404, "NOT_FOUND");
    expectErrorEnvelope(await server.request("POST", "/api/api-keys/extra/segments"), 404, "NOT_FOUND");
  });
});

test("an unexpected failure answers 500 INTERNAL_ERROR without a stack trace", async () => {
  // Provoked in-process: the server is built on a database that is then closed, so the first query throws.
  const config = loadConfig({ PLATFORM_DATA_DIR: tempDir() });
  const db = openDatabase(config.databaseFile);
  const app = createServer(createServerContext(config, db));
  db.$client.close();
  const originalConsoleError = console.error;
  console.error = () => {};
  try {
    const response = await app.handle(
      new Request("http://localhost/api/api-keys/", { headers: { authorization: `Bearer svc_${"a".repeat(40)}` } }),
    );
    const text = await response.text();
    expect(response.status).toBe(500);
    expect(JSON.parse(text)).toEqual({ success: false, error: "Internal error", code: "INTERNAL_ERROR" });
    expect(text).not.toMatch(/\bat \S+|\.ts:\d+|closed database/i);
  } finally {
    console.error = originalConsoleError;
  }
});
