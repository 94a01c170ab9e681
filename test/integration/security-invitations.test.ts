// Invitations and accounts without a password: the owner `platform keys create` makes has none
// until the owner setup claims it with one of its keys, so no invitation may reach it, and
// accepting one never sets the password of an account that exists.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { TestServer, type CreatedKey } from "../helpers/server";
import { expectErrorEnvelope } from "../helpers/auth-matrix";

let server: TestServer;
let cli: CreatedKey;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_AUTH_FAILURE_BURST: "1000" });
  cli = await server.createKey("headless");
});
afterAll(() => server.stop());

/** Writes straight into the server's SQLite file, for states the API cannot make. */
function sqlite<T>(run: (db: Database) => T): T {
  const db = new Database(join(server.dataDir, "platform.sqlite"));
  db.exec("PRAGMA busy_timeout = 5000");
  try {
    return run(db);
  } finally {
    db.close();
  }
}

describe("the passwordless owner made by platform keys create", () => {
  test("cannot be invited -> 409 PASSWORDLESS_ACCOUNT", async () => {
    // Its own address (owner@localhost) is not a valid email to the API; give it one that is.
    sqlite((db) => db.query("UPDATE users SET email = 'ops@example.com' WHERE password_hash IS NULL").run());
    try {
      const response = await server.request("POST", "/api/organization/invitations", { key: cli.key, body: { email: "ops@example.com" } });
      expectErrorEnvelope(response, 409, "PASSWORDLESS_ACCOUNT");
      expect(response.body.error).toContain("without a password");
    } finally {
      sqlite((db) => db.query("UPDATE users SET email = 'owner@localhost' WHERE password_hash IS NULL").run());
    }
  });

  test("an invitation to its email cannot set its password -> 409 PASSWORDLESS_ACCOUNT, and the setup still needs a key", async () => {
    const invitationId = "inv_to_the_placeholder";
    const now = Date.now();
    sqlite((db) =>
      db
        .query(
          "INSERT INTO invitations (id, workspace_id, email, role, status, invited_by, expires_at, created_at, updated_at) " +
            "VALUES (?, ?, 'owner@localhost', 'member', 'pending', 'usr_someone', ?, ?, ?)",
        )
        .run(invitationId, cli.workspaceId, now + 3_600_000, now, now),
    );
    const accept = await server.request("POST", `/api/organization/invitations/${invitationId}/accept`, { body: { password: "taken-over!" } });
    expectErrorEnvelope(accept, 409, "PASSWORDLESS_ACCOUNT");
    expect(accept.headers.get("set-cookie")).toBeNull();
    expect(sqlite((db) => db.query("SELECT password_hash FROM users WHERE email = 'owner@localhost'").get())).toEqual({ password_hash: null });
    expect((await server.request("GET", "/api/auth/setup")).body.keyRequired).toBe(true);
  });
});

describe("accepting at the same time", () => {
  const accept = (invitationId: string, password: string) =>
    server.request("POST", `/api/organization/invitations/${invitationId}/accept`, { body: { password } });
  const invite = async (key: string, email: string) => {
    const response = await server.request("POST", "/api/organization/invitations", { key, body: { email } });
    expect(response.status).toBe(201);
    return response.body.invitation.id as string;
  };

  test("one invitation accepted twice at once: one 200, the other 404, never 500", async () => {
    for (let round = 0; round < 5; round++) {
      const invitationId = await invite(cli.key, `twice-${round}@example.com`);
      const statuses = (await Promise.all([accept(invitationId, "password-one"), accept(invitationId, "password-two")])).map((response) => response.status);
      expect(statuses.sort()).toEqual([200, 404]);
    }
  });

  test("two workspaces' invitations to one new email accepted at once: never 500, and the account is made once", async () => {
    const second = await server.createKey("second", "second");
    for (let round = 0; round < 5; round++) {
      const email = `both-${round}@example.com`;
      const [first, other] = [await invite(cli.key, email), await invite(second.key, email)];
      const responses = await Promise.all([accept(first, "same-password"), accept(other, "same-password")]);
      for (const response of responses) {
        if (response.status !== 200) expectErrorEnvelope(response, 409, "CONFLICT");
      }
      expect(responses.some((response) => response.status === 200)).toBe(true);
      expect(sqlite((db) => db.query("SELECT count(*) AS accounts FROM users WHERE email = ?").get(email))).toEqual({ accounts: 1 });
    }
  });
});
