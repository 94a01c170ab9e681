// The dashboard's side of the API: first-visit owner setup, login and the session cookie, the
// Origin check on cookie requests, the active organization, invitations and the audit log.
// The tests of each describe block build on the ones before them, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { TestServer, type CreatedKey } from "../helpers/server";
import { expectErrorEnvelope, sessionCookieOf } from "../helpers/auth-matrix";

const OWNER = { email: "Owner@Example.com", password: "owner-password-1" };

let server: TestServer;
let cliKey: CreatedKey;
let team: CreatedKey;
let ownerCookie: string;
let wideKey: string;

// Wrong passwords are part of the tests; the per-address limit on them is tested in rate-limits.test.ts.
beforeAll(async () => (server = await TestServer.start({ PLATFORM_AUTH_FAILURE_BURST: "1000" })));
afterAll(() => server.stop());

/** A request as the dashboard sends it: the session cookie and this page's own Origin. */
const asBrowser = (cookie: string, method: string, path: string, body?: unknown) =>
  server.request(method, path, { headers: { cookie, origin: server.baseUrl }, body });

const login = (email: string, password: string) => server.request("POST", "/api/auth/login", { body: { email, password } });

async function auditActions(key: string, workspaceId?: string) {
  const query = workspaceId ? `?workspaceId=${workspaceId}` : "";
  const response = await server.request("GET", `/api/organization/audit-log${query}`, { key });
  expect(response.status).toBe(200);
  return response.body.events as { action: string; actor: { type: string; id: string | null }; target: string; createdAt: string }[];
}

describe("first visit", () => {
  test("a fresh instance asks for the owner account, also after a key was made on the command line", async () => {
    expect((await server.request("GET", "/api/auth/setup")).body.setupRequired).toBe(true);
    cliKey = await server.createKey("made before setup");
    expect((await server.request("GET", "/api/auth/setup")).body.setupRequired).toBe(true);
  });

  test("setup with one of those keys creates the owner, sets an HttpOnly cookie and claims the command line's keys", async () => {
    expectErrorEnvelope(await server.request("POST", "/api/auth/setup", { body: OWNER }), 401, "SETUP_KEY_REQUIRED");
    const response = await server.request("POST", "/api/auth/setup", { body: OWNER, key: cliKey.key });
    expect(response.status).toBe(201);
    const setCookie = response.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/^platform_session=[A-Za-z0-9]{32,};/);
    expect(setCookie).toContain("HttpOnly");
    expect(setCookie).toContain("SameSite=Lax");
    expect(setCookie).toContain("Path=/");
    ownerCookie = sessionCookieOf(response);

    const session = await server.request("GET", "/api/auth/session", { headers: { cookie: ownerCookie } });
    expect(session.status).toBe(200);
    expect(session.body.user.email).toBe("owner@example.com");
    expect(session.body.role).toBe("owner");
    expect(session.body.activeOrganizationId).toBe(cliKey.workspaceId);
    const keys = await server.request("GET", "/api/api-keys/", { headers: { cookie: ownerCookie } });
    expect(keys.body.keys.map((key: { id: string }) => key.id)).toEqual([cliKey.id]);
    expect((await server.request("GET", "/api/auth/setup")).body.setupRequired).toBe(false);
  });

  test("a second setup -> 409 ALREADY_SET_UP", async () => {
    const response = await server.request("POST", "/api/auth/setup", { body: { email: "intruder@example.com", password: "intruder-password" } });
    expectErrorEnvelope(response, 409, "ALREADY_SET_UP");
    expectErrorEnvelope(await login("intruder@example.com", "intruder-password"), 401, "INVALID_CREDENTIALS");
  });
});

describe("login", () => {
  test("a wrong password -> 401 INVALID_CREDENTIALS and auth.login_failed in the audit log", async () => {
    const response = await login(OWNER.email, "not-the-password");
    expectErrorEnvelope(response, 401, "INVALID_CREDENTIALS");
    expect(response.headers.get("set-cookie")).toBeNull();
    const failed = (await auditActions(cliKey.key)).find((event) => event.action === "auth.login_failed");
    expect(failed?.target).toBe("owner@example.com");
  });

  test("an unknown email gets the same answer as a wrong password", async () => {
    const response = await login("nobody@example.com", "not-the-password");
    expectErrorEnvelope(response, 401, "INVALID_CREDENTIALS");
  });

  test("the right password (email in any case) starts a session whose cookie authenticates", async () => {
    const response = await login("OWNER@example.COM", OWNER.password);
    expect(response.status).toBe(200);
    const cookie = sessionCookieOf(response);
    const session = await server.request("GET", "/api/auth/session", { headers: { cookie } });
    expect(session.status).toBe(200);
    expect(session.body.via).toBe("session");
    expect(session.body.user.email).toBe("owner@example.com");
    expect((await auditActions(cliKey.key)).some((event) => event.action === "auth.login")).toBe(true);
  });

  test("after logout the cookie no longer works", async () => {
    const cookie = sessionCookieOf(await login(OWNER.email, OWNER.password));
    expect((await asBrowser(cookie, "POST", "/api/auth/logout")).status).toBe(200);
    expectErrorEnvelope(await server.request("GET", "/api/auth/session", { headers: { cookie } }), 401);
  });
});

describe("Origin check on cookie requests", () => {
  const newKey = (headers: Record<string, string>) =>
    server.request("POST", "/api/api-keys/", { headers: { cookie: ownerCookie, ...headers }, body: { name: "from the browser" } });

  test("a state-changing cookie request without Origin -> 403 CSRF_REJECTED", async () => {
    expectErrorEnvelope(await newKey({}), 403, "CSRF_REJECTED");
  });

  test("from a foreign Origin -> 403 CSRF_REJECTED", async () => {
    expectErrorEnvelope(await newKey({ origin: "https://evil.example" }), 403, "CSRF_REJECTED");
    const port = new URL(server.baseUrl).port;
    expectErrorEnvelope(await newKey({ origin: `http://127.0.0.1.evil.example:${port}` }), 403, "CSRF_REJECTED");
  });

  test("from this host's own Origin it works", async () => {
    expect((await newKey({ origin: server.baseUrl })).status).toBe(201);
  });

  test("a login form posted from a foreign page -> 403 CSRF_REJECTED", async () => {
    const response = await server.request("POST", "/api/auth/login", { body: OWNER, headers: { origin: "https://evil.example" } });
    expectErrorEnvelope(response, 403, "CSRF_REJECTED");
  });
});

describe("invitations and organizations", () => {
  let daveCookie: string;
  let daveId: string;

  beforeAll(async () => {
    // `keys create --workspace team` gives "team" an owner of its own; the owner claims it with its key.
    team = await server.createKey("team key", "team");
    expect((await server.request("POST", "/api/auth/claim", { key: team.key, body: OWNER })).status).toBe(200);
    // A key of the owner made to act in "team" too (a key acts only in its own workspace otherwise).
    wideKey = (await asBrowser(ownerCookie, "POST", "/api/api-keys/", { name: "both", workspaceIds: [team.workspaceId] })).body.key;
  });

  test("create: the email is lowercased, the invitation is pending for 48 hours", async () => {
    const response = await server.request("POST", "/api/organization/invitations", { key: cliKey.key, body: { email: "Carol@Example.COM" } });
    expect(response.status).toBe(201);
    const invitation = response.body.invitation;
    expect(invitation).toEqual(expect.objectContaining({ email: "carol@example.com", status: "pending", role: "member" }));
    expect(invitation.organizationId).toBe(cliKey.workspaceId);
    const hours = (Date.parse(invitation.expiresAt) - Date.parse(invitation.createdAt)) / 3_600_000;
    expect(hours).toBe(48);
  });

  test("a second pending invitation for the same email -> 409", async () => {
    const response = await server.request("POST", "/api/organization/invitations", { key: cliKey.key, body: { email: "carol@EXAMPLE.com" } });
    expectErrorEnvelope(response, 409);
  });

  test("list, cancel, and a canceled invitation cannot be accepted", async () => {
    const list = await server.request("GET", "/api/organization/invitations", { key: cliKey.key });
    expect(list.status).toBe(200);
    const carol = list.body.invitations.find((invitation: any) => invitation.email === "carol@example.com");
    expect(carol.status).toBe("pending");

    const canceled = await server.request("DELETE", `/api/organization/invitations/${carol.id}`, { key: cliKey.key });
    expect(canceled.status).toBe(200);
    const after = await server.request("GET", "/api/organization/invitations", { key: cliKey.key });
    expect(after.body.invitations.find((invitation: any) => invitation.id === carol.id).status).toBe("canceled");
    const accept = await server.request("POST", `/api/organization/invitations/${carol.id}/accept`, { body: { password: "carol-password" } });
    expectErrorEnvelope(accept, 404);
  });

  test("accept with a new password: the account is created and the session is in the invited workspace", async () => {
    const created = await server.request("POST", "/api/organization/invitations", { key: cliKey.key, body: { email: "dave@example.com" } });
    const accept = await server.request("POST", `/api/organization/invitations/${created.body.invitation.id}/accept`, {
      body: { password: "dave-password" },
    });
    expect(accept.status).toBe(200);
    daveCookie = sessionCookieOf(accept);
    const session = await server.request("GET", "/api/auth/session", { headers: { cookie: daveCookie } });
    expect(session.body).toEqual(
      expect.objectContaining({ activeOrganizationId: cliKey.workspaceId, role: "member", user: expect.objectContaining({ email: "dave@example.com" }) }),
    );
    daveId = session.body.user.id;
    const event = (await auditActions(cliKey.key)).find((entry) => entry.action === "invitation.accepted");
    expect(event).toEqual(expect.objectContaining({ target: "dave@example.com", actor: { type: "user", id: daveId } }));
    expect((await login("dave@example.com", "dave-password")).status).toBe(200);
    const used = await server.request("POST", `/api/organization/invitations/${created.body.invitation.id}/accept`, {
      body: { password: "dave-password" },
    });
    expectErrorEnvelope(used, 404);
  });

  test("a member cannot invite", async () => {
    const response = await asBrowser(daveCookie, "POST", "/api/organization/invitations", { email: "frank@example.com" });
    expectErrorEnvelope(response, 403, "FORBIDDEN");
  });

  test("set-active-organization for a workspace the user is not in -> 403", async () => {
    const response = await asBrowser(daveCookie, "POST", "/api/auth/set-active-organization", { organizationId: team.workspaceId });
    expectErrorEnvelope(response, 403, "NOT_A_MEMBER");
  });

  test("an existing account accepts with its own password and lands in the invited workspace", async () => {
    const created = await server.request("POST", "/api/organization/invitations", { key: team.key, body: { email: "dave@example.com", role: "admin" } });
    const path = `/api/organization/invitations/${created.body.invitation.id}/accept`;
    expectErrorEnvelope(await server.request("POST", path, { body: { password: "not-daves-password" } }), 401, "INVALID_CREDENTIALS");
    const accept = await server.request("POST", path, { body: { password: "dave-password" } });
    expect(accept.status).toBe(200);
    const session = await server.request("GET", "/api/auth/session", { headers: { cookie: sessionCookieOf(accept) } });
    expect(session.body.user.id).toBe(daveId);
    expect(session.body.activeOrganizationId).toBe(team.workspaceId);
    expect(session.body.role).toBe("admin");
    expect(session.body.organizations.map((organization: any) => organization.id).sort()).toEqual(
      [cliKey.workspaceId, team.workspaceId].sort(),
    );
  });

  test("set-active-organization switches the session's workspace for a member", async () => {
    const response = await asBrowser(ownerCookie, "POST", "/api/auth/set-active-organization", { organizationId: team.workspaceId });
    expect(response.status).toBe(200);
    const keys = await server.request("GET", "/api/api-keys/", { headers: { cookie: ownerCookie } });
    expect(keys.body.keys.map((key: { id: string }) => key.id)).toEqual([team.id]);
    await asBrowser(ownerCookie, "POST", "/api/auth/set-active-organization", { organizationId: cliKey.workspaceId });
  });

  test("an expired invitation -> 410 and shows as expired", async () => {
    const created = await server.request("POST", "/api/organization/invitations", { key: cliKey.key, body: { email: "erin@example.com" } });
    const id = created.body.invitation.id;
    // 48 hours cannot be waited out in a test. The server reads expires_at from the database on every
    // accept, so moving it into the past in the SQLite file is the same as the time having passed.
    const sqlite = new Database(join(server.dataDir, "platform.sqlite"));
    sqlite.exec("PRAGMA busy_timeout = 5000");
    sqlite.query("UPDATE invitations SET expires_at = ? WHERE id = ?").run(Date.now() - 1000, id);
    sqlite.close();

    const accept = await server.request("POST", `/api/organization/invitations/${id}/accept`, { body: { password: "erin-password" } });
    expectErrorEnvelope(accept, 410, "INVITATION_EXPIRED");
    const list = await server.request("GET", "/api/organization/invitations", { key: cliKey.key });
    expect(list.body.invitations.find((invitation: any) => invitation.id === id).status).toBe("expired");
    const again = await server.request("POST", "/api/organization/invitations", { key: cliKey.key, body: { email: "erin@example.com" } });
    expect(again.status).toBe(201);
  });

  test("another workspace's invitation id -> 404, unless the key's owner names that workspace", async () => {
    const created = await server.request("POST", "/api/organization/invitations", { key: team.key, body: { email: "gina@example.com" } });
    const path = `/api/organization/invitations/${created.body.invitation.id}`;
    expectErrorEnvelope(await server.request("DELETE", path, { key: cliKey.key }), 404);
    const listed = await server.request("GET", "/api/organization/invitations", { key: cliKey.key });
    expect(listed.body.invitations.map((invitation: any) => invitation.email)).not.toContain("gina@example.com");
    // A key made to act in "team" as well may act there; the default workspace's key may not.
    expectErrorEnvelope(await server.request("DELETE", `${path}?workspaceId=${team.workspaceId}`, { key: cliKey.key }), 404, "WORKSPACE_NOT_FOUND");
    expect((await server.request("DELETE", `${path}?workspaceId=${team.workspaceId}`, { key: wideKey })).status).toBe(200);
  });
});

describe("audit log", () => {
  test("lists the workspace's security events newest first, each with actor and time", async () => {
    const events = await auditActions(cliKey.key);
    const actions = new Set(events.map((event) => event.action));
    for (const action of ["api_key.created", "auth.owner_created", "auth.login", "auth.login_failed", "invitation.created", "invitation.canceled", "invitation.accepted"]) {
      expect(actions).toContain(action);
    }
    for (const event of events) {
      expect(["user", "api_key", "cli"]).toContain(event.actor.type);
      expect(new Date(event.createdAt).toISOString()).toBe(event.createdAt);
    }
    const times = events.map((event) => Date.parse(event.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  test("holds only its own workspace's events", async () => {
    const teamEvents = await auditActions(wideKey, team.workspaceId);
    const defaultEvents = await auditActions(cliKey.key);
    const teamIds = new Set(teamEvents.map((event: any) => event.id));
    expect(defaultEvents.some((event: any) => teamIds.has(event.id))).toBe(false);
    expect(teamEvents.map((event) => event.target)).toContain("gina@example.com");
    expect(defaultEvents.map((event) => event.target)).not.toContain("gina@example.com");
  });
});
