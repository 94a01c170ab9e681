// Tenant isolation and membership: keys made on the command line stay in their workspace, a key
// reaches other workspaces only when made for them, and owners and admins manage members and every
// key of their workspace, with the last owner and ownership protected.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer, type CreatedKey } from "../helpers/server";
import { expectErrorEnvelope, sessionCookieOf } from "../helpers/auth-matrix";
import { createDatabase, deleteAllDatabases, removeWorkspaceNetworks } from "../helpers/databases";

const OWNER = { email: "owner@example.com", password: "owner-password-1" };

let server: TestServer;
let teamA: CreatedKey;
let teamB: CreatedKey;
let ownerCookie: string;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_AUTH_FAILURE_BURST: "1000" });
  teamA = await server.createKey("a", "team-a");
  teamB = await server.createKey("b", "team-b");
}, 60_000);
afterAll(() => server.stop());

const asBrowser = (method: string, path: string, body?: unknown) =>
  server.request(method, path, { headers: { cookie: ownerCookie, origin: server.baseUrl }, body });

async function join(ownerKey: string, email: string, role: string) {
  const invitation = await server.request("POST", "/api/organization/invitations", { key: ownerKey, body: { email, role } });
  expect(invitation.status).toBe(201);
  const accepted = await server.request("POST", `/api/organization/invitations/${invitation.body.invitation.id}/accept`, {
    body: { password: `${role}-password-1` },
  });
  expect(accepted.status).toBe(200);
  const cookie = sessionCookieOf(accepted);
  const key = await server.request("POST", "/api/api-keys/", { headers: { cookie, origin: server.baseUrl }, body: { name: `${role} key` } });
  expect(key.status).toBe(201);
  return { userId: accepted.body.user.id as string, key: key.body.key as string, keyId: key.body.id as string, cookie };
}

describe("keys made by the command line", () => {
  test("the recipe: team-a's key does not answer for team-b", async () => {
    for (const path of ["/api/apps/", "/api/auth/session", "/api/databases/", "/api/organization/members", "/api/volumes/", "/api/registries/"]) {
      const response = await server.request("GET", `${path}?workspaceId=${teamB.workspaceId}`, { key: teamA.key });
      expectErrorEnvelope(response, 404, "WORKSPACE_NOT_FOUND");
    }
    const session = await server.request("GET", `/api/auth/session?organizationId=${teamB.workspaceId}`, { key: teamA.key });
    expectErrorEnvelope(session, 404, "WORKSPACE_NOT_FOUND");
  });

  test("each workspace has an owner of its own", async () => {
    const a = (await server.request("GET", "/api/auth/session", { key: teamA.key })).body;
    const b = (await server.request("GET", "/api/auth/session", { key: teamB.key })).body;
    expect(a.role).toBe("owner");
    expect(b.role).toBe("owner");
    expect(a.user.id).not.toBe(b.user.id);
    expect(a.organizations.map((organization: { id: string }) => organization.id)).toEqual([teamA.workspaceId]);
    // A second key for an existing workspace belongs to the same owner.
    const again = await server.createKey("a2", "team-a");
    expect((await server.request("GET", "/api/auth/session", { key: again.key })).body.user.id).toBe(a.user.id);
  });
});

describe("a key made for other workspaces", () => {
  beforeAll(async () => {
    const setup = await server.request("POST", "/api/auth/setup", { body: OWNER, key: teamA.key });
    expect(setup.status).toBe(201);
    ownerCookie = sessionCookieOf(setup);
    expect((await server.request("POST", "/api/auth/claim", { body: OWNER, key: teamB.key })).status).toBe(200);
  }, 60_000);

  test("the owner of both still gets 404 for team-b with a key made in team-a", async () => {
    expectErrorEnvelope(await server.request("GET", `/api/apps/?workspaceId=${teamB.workspaceId}`, { key: teamA.key }), 404, "WORKSPACE_NOT_FOUND");
  });

  test("with workspaceIds it acts in each, chosen by workspaceId, and only there", async () => {
    const made = await asBrowser("POST", "/api/api-keys/", { name: "both", workspaceIds: [teamB.workspaceId] });
    expect(made.status).toBe(201);
    expect(made.body.apiKey).toEqual(expect.objectContaining({ workspaceId: teamA.workspaceId, otherWorkspaceIds: [teamB.workspaceId] }));
    const inB = await server.request("GET", `/api/auth/session?workspaceId=${teamB.workspaceId}`, { key: made.body.key });
    expect(inB.body).toEqual(expect.objectContaining({ activeOrganizationId: teamB.workspaceId, role: "owner" }));
    expect((await server.request("GET", "/api/auth/session", { key: made.body.key })).body.activeOrganizationId).toBe(teamA.workspaceId);

    const teamC = await server.createKey("c", "team-c");
    expectErrorEnvelope(await server.request("GET", `/api/apps/?workspaceId=${teamC.workspaceId}`, { key: made.body.key }), 404, "WORKSPACE_NOT_FOUND");
  });

  test("workspaceIds may name only workspaces of the caller, and a key passes on only its own scope", async () => {
    const teamC = await server.createKey("c", "team-c");
    const foreign = await asBrowser("POST", "/api/api-keys/", { name: "foreign", workspaceIds: [teamC.workspaceId] });
    expectErrorEnvelope(foreign, 404, "WORKSPACE_NOT_FOUND");
    // teamA.key acts in team-a only: it may not make a key for team-b, though its holder belongs there.
    const widened = await server.request("POST", "/api/api-keys/", { key: teamA.key, body: { name: "wider", workspaceIds: [teamB.workspaceId] } });
    expectErrorEnvelope(widened, 404, "WORKSPACE_NOT_FOUND");
    const names = (await asBrowser("GET", "/api/api-keys/")).body.keys.map((key: { name: string }) => key.name);
    expect(names).not.toContain("foreign");
    expect(names).not.toContain("wider");
  });
});

describe("members", () => {
  let admin: Awaited<ReturnType<typeof join>>;
  let member: Awaited<ReturnType<typeof join>>;

  beforeAll(async () => {
    admin = await join(teamA.key, "admin@example.com", "admin");
    member = await join(teamA.key, "member@example.com", "member");
  }, 60_000);

  test("an owner or admin changes a member's role; it applies to the member's keys at once", async () => {
    const changed = await server.request("PATCH", `/api/organization/members/${member.userId}`, { key: admin.key, body: { role: "viewer" } });
    expect(changed.status).toBe(200);
    expect(changed.body.member).toEqual(expect.objectContaining({ userId: member.userId, role: "viewer" }));
    expect((await server.request("GET", "/api/auth/session", { key: member.key })).body.role).toBe("viewer");
    expectErrorEnvelope(await server.request("POST", "/api/databases/", { key: member.key, body: { name: "x", engine: "redis" } }), 403, "FORBIDDEN");
    expect((await server.request("PATCH", `/api/organization/members/${member.userId}`, { key: teamA.key, body: { role: "member" } })).status).toBe(200);
    const actions = (await server.request("GET", "/api/organization/audit-log", { key: teamA.key })).body.events;
    expect(actions.find((event: any) => event.action === "member.role_changed")).toEqual(
      expect.objectContaining({ target: "member@example.com: viewer -> member", actor: { type: "api_key", id: teamA.id } }),
    );
  });

  test("ownership is the owners': an admin can neither grant it nor touch an owner; a member manages nobody", async () => {
    const ownerId = (await server.request("GET", "/api/auth/session", { key: teamA.key })).body.user.id;
    expectErrorEnvelope(await server.request("PATCH", `/api/organization/members/${admin.userId}`, { key: admin.key, body: { role: "owner" } }), 403, "FORBIDDEN");
    expectErrorEnvelope(await server.request("PATCH", `/api/organization/members/${ownerId}`, { key: admin.key, body: { role: "member" } }), 403, "FORBIDDEN");
    expectErrorEnvelope(await server.request("DELETE", `/api/organization/members/${ownerId}`, { key: admin.key }), 403, "FORBIDDEN");
    const byMember = await server.request("DELETE", `/api/organization/members/${admin.userId}`, { key: member.key });
    expectErrorEnvelope(byMember, 403, "FORBIDDEN");
    expect(byMember.body.error).toContain("owner or admin");
  });

  test("the last owner cannot be demoted or removed: 409 LAST_OWNER; with a second owner it can", async () => {
    const ownerId = (await server.request("GET", "/api/auth/session", { key: teamA.key })).body.user.id;
    expectErrorEnvelope(await server.request("PATCH", `/api/organization/members/${ownerId}`, { key: teamA.key, body: { role: "admin" } }), 409, "LAST_OWNER");
    expectErrorEnvelope(await server.request("DELETE", `/api/organization/members/${ownerId}`, { key: teamA.key }), 409, "LAST_OWNER");
    expect((await server.request("PATCH", `/api/organization/members/${admin.userId}`, { key: teamA.key, body: { role: "owner" } })).status).toBe(200);
    expect((await server.request("PATCH", `/api/organization/members/${admin.userId}`, { key: admin.key, body: { role: "admin" } })).status).toBe(200);
    expectErrorEnvelope(await server.request("PATCH", "/api/organization/members/usr_unknown", { key: teamA.key, body: { role: "admin" } }), 404, "MEMBER_NOT_FOUND");
  });

  test("a removed member's keys stop working at once", async () => {
    const removed = await server.request("DELETE", `/api/organization/members/${member.userId}`, { key: admin.key });
    expect(removed.status).toBe(200);
    expect(removed.body.member).toEqual(expect.objectContaining({ userId: member.userId, revokedKeys: 1 }));
    expectErrorEnvelope(await server.request("GET", "/api/apps/", { key: member.key }), 401, "INVALID_API_KEY");
    expectErrorEnvelope(await server.request("GET", "/api/apps/", { headers: { cookie: member.cookie } }), 404, "WORKSPACE_NOT_FOUND");
    const members = (await server.request("GET", "/api/organization/members", { key: teamA.key })).body.members;
    expect(members.map((entry: { userId: string }) => entry.userId)).not.toContain(member.userId);
  });
});

describe("every key of the workspace", () => {
  test("owners and admins list them with their holders and revoke any of them", async () => {
    const viewer = await join(teamA.key, "viewer@example.com", "viewer");
    const list = await server.request("GET", "/api/organization/api-keys", { key: teamA.key });
    expect(list.status).toBe(200);
    const listed = list.body.keys.find((key: { id: string }) => key.id === viewer.keyId);
    expect(listed).toEqual(expect.objectContaining({ userId: viewer.userId, email: "viewer@example.com", name: "viewer key" }));
    expect(list.body.keys.every((key: any) => key.key === undefined)).toBe(true);
    expectErrorEnvelope(await server.request("GET", "/api/organization/api-keys", { key: viewer.key }), 403, "FORBIDDEN");

    expect((await server.request("DELETE", `/api/organization/api-keys/${viewer.keyId}`, { key: teamA.key })).status).toBe(200);
    expectErrorEnvelope(await server.request("GET", "/api/auth/session", { key: viewer.key }), 401, "INVALID_API_KEY");
    const events = (await server.request("GET", "/api/organization/audit-log", { key: teamA.key })).body.events;
    expect(events.some((event: any) => event.action === "api_key.revoked" && event.target.includes(viewer.keyId))).toBe(true);
    // Another workspace's key is not found here.
    expectErrorEnvelope(await server.request("DELETE", `/api/organization/api-keys/${teamB.id}`, { key: teamA.key }), 404, "API_KEY_NOT_FOUND");
  });

  test("a key made elsewhere for this workspace is listed, and revoking it here keeps it working where it was made", async () => {
    const made = await asBrowser("POST", "/api/api-keys/", { name: "reaching b", workspaceIds: [teamB.workspaceId] });
    const inB = `?workspaceId=${teamB.workspaceId}`;
    const listed = (await server.request("GET", `/api/organization/api-keys${inB}`, { key: made.body.key })).body.keys;
    expect(listed.map((key: { id: string }) => key.id)).toContain(made.body.id);
    expect((await server.request("DELETE", `/api/organization/api-keys/${made.body.id}`, { key: teamB.key })).status).toBe(200);
    expectErrorEnvelope(await server.request("GET", `/api/apps/${inB}`, { key: made.body.key }), 404, "WORKSPACE_NOT_FOUND");
    expect((await server.request("GET", "/api/apps/", { key: made.body.key })).status).toBe(200);
  });
});

describe("deleting a workspace", () => {
  test("owners only, refused while it holds a database, then everything of it is gone", async () => {
    const doomed = await server.createKey("doomed", "team-doomed");
    const admin = await join(doomed.key, "doomed-admin@example.com", "admin");
    expectErrorEnvelope(await server.request("DELETE", "/api/organization/", { key: admin.key }), 403, "FORBIDDEN");

    await createDatabase(server, doomed.key, { name: "keeps-it", engine: "redis", memoryMB: 256 });
    const refused = await server.request("DELETE", "/api/organization/", { key: doomed.key });
    expectErrorEnvelope(refused, 409, "WORKSPACE_NOT_EMPTY");
    await deleteAllDatabases(server, doomed.key);
    removeWorkspaceNetworks(doomed.workspaceId);

    const deleted = await server.request("DELETE", "/api/organization/", { key: doomed.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body.organization).toEqual({ id: doomed.workspaceId, name: "team-doomed" });
    expectErrorEnvelope(await server.request("GET", "/api/auth/session", { key: doomed.key }), 401, "INVALID_API_KEY");
    expectErrorEnvelope(await server.request("GET", "/api/auth/session", { key: admin.key }), 401, "INVALID_API_KEY");
    // The admin's account stays, with no workspace left.
    expectErrorEnvelope(await server.request("GET", "/api/auth/session", { headers: { cookie: admin.cookie } }), 404, "WORKSPACE_NOT_FOUND");
  }, 120_000);
});
