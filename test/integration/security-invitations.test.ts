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
