// The password forms (login, owner setup, invitation acceptance) under many callers at once: a
// failed attempt's token is taken before the password is checked, so parallel guesses cannot all
// slip past the per-address limit; each account has its own limit that no number of client
// addresses gets around; a success gives its token back. Client addresses are real: the whole
// 127.0.0.0/8 range is loopback, so a request can come from 127.0.0.2, 127.0.0.3...
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { serversStoppedAfterAll } from "../helpers/server";
import { expectErrorEnvelope } from "../helpers/auth-matrix";
import { requestFrom, type Answer } from "../helpers/loopback-client";

// Sixty password hashes at once take a while on two cores (the old code computed them all).
setDefaultTimeout(60_000);

const start = serversStoppedAfterAll();

function tally(answers: Answer[]) {
  const counts: Record<number, number> = {};
  for (const answer of answers) counts[answer.status] = (counts[answer.status] ?? 0) + 1;
  return counts;
}

function expectRefusalsWithRetryAfter(answers: Answer[]) {
  for (const answer of answers.filter((candidate) => candidate.status === 429)) {
    expectErrorEnvelope(answer, 429, "RATE_LIMITED");
    expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  }
}

const BURST = 5;
/** A small per-address burst, and an account limit out of the way unless a test wants it. */
const ADDRESS_LIMIT = { PLATFORM_AUTH_FAILURE_BURST: String(BURST), PLATFORM_AUTH_FAILURE_PER_MINUTE: "1", PLATFORM_AUTH_ACCOUNT_FAILURE_BURST: "1000" };
const OWNER = { email: "owner@example.com", password: "owner-password-1" };
const PARALLEL = 60;

describe("60 parallel wrong attempts from one address: at most the burst reach the password check", () => {
  test("login", async () => {
    const server = await start(ADDRESS_LIMIT);
    // The setup comes from another address, so 127.0.0.1's bucket is full.
    expect((await requestFrom(server, "127.0.0.9", "POST", "/api/auth/setup", OWNER)).status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: PARALLEL }, () => server.request("POST", "/api/auth/login", { body: { email: OWNER.email, password: "wrong-password" } })),
    );
    const counts = tally(answers);
    expect(counts[401] ?? 0).toBeLessThanOrEqual(BURST);
    expect(counts[429]).toBeGreaterThanOrEqual(PARALLEL - BURST);
    expect((counts[401] ?? 0) + counts[429]!).toBe(PARALLEL);
    expectRefusalsWithRetryAfter(answers);
  });

  test("owner setup", async () => {
    const server = await start(ADDRESS_LIMIT);
    // Keys made on the command line: claiming the owner needs one of them, so wrong keys fail.
    await server.createKey("headless");
    const wrongKey = `svc_${"G7h8J9k0L1".repeat(4)}`;
    const answers = await Promise.all(
      Array.from({ length: PARALLEL }, () => server.request("POST", "/api/auth/setup", { body: OWNER, key: wrongKey })),
    );
    const counts = tally(answers);
    expect(counts[401] ?? 0).toBeLessThanOrEqual(BURST);
    expect(counts[429]).toBeGreaterThanOrEqual(PARALLEL - BURST);
    expectRefusalsWithRetryAfter(answers);
  });

  test("invitation acceptance", async () => {
    const server = await start(ADDRESS_LIMIT);
    expect((await requestFrom(server, "127.0.0.9", "POST", "/api/auth/setup", OWNER)).status).toBe(201);
    const owner = await server.createKey("owner");
    // member@ has an account (from a first invitation), and is then invited to a second workspace.
    const first = await server.request("POST", "/api/organization/invitations", { key: owner.key, body: { email: "member@example.com" } });
    expect((await requestFrom(server, "127.0.0.9", "POST", `/api/organization/invitations/${first.body.invitation.id}/accept`, { password: "member-password" })).status).toBe(200);
    const team = await server.createKey("team owner", "team");
    const second = await server.request("POST", "/api/organization/invitations", { key: team.key, body: { email: "member@example.com" } });
    expect(second.status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: PARALLEL }, () =>
        server.request("POST", `/api/organization/invitations/${second.body.invitation.id}/accept`, { body: { password: "wrong-password" } }),
      ),
    );
    const counts = tally(answers);
    expect(counts[401] ?? 0).toBeLessThanOrEqual(BURST);
    expect(counts[429]).toBeGreaterThanOrEqual(PARALLEL - BURST);
    expectRefusalsWithRetryAfter(answers);
  });
});

describe("per account", () => {
  test("wrong passwords for one email from many addresses run out, while other accounts still log in", async () => {
    const server = await start({ PLATFORM_AUTH_FAILURE_BURST: "100", PLATFORM_AUTH_ACCOUNT_FAILURE_BURST: "4", PLATFORM_AUTH_ACCOUNT_FAILURE_PER_MINUTE: "1" });
    expect((await requestFrom(server, "127.0.0.9", "POST", "/api/auth/setup", OWNER)).status).toBe(201);
    const statuses: number[] = [];
    for (let i = 2; i < 8; i++) {
      // Another spelling of the same account counts against it too.
      const email = i % 2 ? OWNER.email.toUpperCase() : OWNER.email;
      statuses.push((await requestFrom(server, `127.0.0.${i}`, "POST", "/api/auth/login", { email, password: "wrong-password" })).status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
    const locked = await requestFrom(server, "127.0.0.20", "POST", "/api/auth/login", OWNER);
    expectErrorEnvelope(locked, 429, "RATE_LIMITED");
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Another account, from one of the same addresses, is not affected.
    const owner = await server.createKey("owner");
    const invitation = await server.request("POST", "/api/organization/invitations", { key: owner.key, body: { email: "other@example.com" } });
    expect((await requestFrom(server, "127.0.0.2", "POST", `/api/organization/invitations/${invitation.body.invitation.id}/accept`, { password: "other-password" })).status).toBe(200);
    expect((await requestFrom(server, "127.0.0.2", "POST", "/api/auth/login", { email: "other@example.com", password: "other-password" })).status).toBe(200);
  });
});

describe("a success gives its token back", () => {
  test("right passwords never spend the address's failed attempts", async () => {
    const server = await start({ PLATFORM_AUTH_FAILURE_BURST: "2", PLATFORM_AUTH_FAILURE_PER_MINUTE: "0" });
    const setup = await server.request("POST", "/api/auth/setup", { body: OWNER });
    expect(setup.status).toBe(201);
    const login = (password: string) => server.request("POST", "/api/auth/login", { body: { email: OWNER.email, password } });
    // Setup took one token and gave it back; ten logins do the same. One wrong one then still leaves one.
    for (let i = 0; i < 10; i++) expect((await login(OWNER.password)).status).toBe(200);
    expectErrorEnvelope(await login("wrong-password"), 401, "INVALID_CREDENTIALS");
    expect((await login(OWNER.password)).status).toBe(200);
    expectErrorEnvelope(await login("wrong-password"), 401, "INVALID_CREDENTIALS");
    expectErrorEnvelope(await login(OWNER.password), 429, "RATE_LIMITED");
  });
});

describe("password hashing is bounded platform-wide", () => {
  test("past the running checks and their queue, a password form gets 503 SERVER_BUSY with Retry-After, not counted as a failure", async () => {
    const server = await start({
      // As many failures as requests: if the refused ones counted, the last login would be refused.
      PLATFORM_AUTH_FAILURE_BURST: "30",
      PLATFORM_AUTH_FAILURE_PER_MINUTE: "0",
      PLATFORM_AUTH_ACCOUNT_FAILURE_BURST: "1000",
      PLATFORM_PASSWORD_HASH_CONCURRENCY: "1",
      PLATFORM_PASSWORD_HASH_QUEUE: "2",
    });
    expect((await requestFrom(server, "127.0.0.9", "POST", "/api/auth/setup", OWNER)).status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        server.request("POST", "/api/auth/login", { body: { email: `guess-${index}@example.com`, password: "wrong-password" } }),
      ),
    );
    const counts = tally(answers);
    expect((counts[401] ?? 0) + (counts[503] ?? 0)).toBe(30);
    expect(counts[401]).toBeGreaterThanOrEqual(3);
    expect(counts[503]).toBeGreaterThanOrEqual(1);
    const busy = answers.find((answer) => answer.status === 503)!;
    expectErrorEnvelope(busy, 503, "SERVER_BUSY");
    expect(busy.headers.get("retry-after")).toBe("1");
    // Once the flood is over, the right password gets through: the 503s left the address a token.
    expect((await server.request("POST", "/api/auth/login", { body: OWNER })).status).toBe(200);
  });
});
