// The migrations that brought proof of ownership to custom domains (0012_domains,
// 0014_domains_takeover): the domains that routed before keep routing, as verified claims of their
// app's workspace, which gets its token (never published, so another workspace that proves the
// name takes it over: test/unit/domains-check.test.ts).
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { EMBEDDED_MIGRATIONS, MIGRATION_JOURNAL_TAGS } from "../../src/db/migrations";

function apply(db: Database, tag: string) {
  for (const statement of EMBEDDED_MIGRATIONS[tag]!.split("--> statement-breakpoint")) if (statement.trim()) db.run(statement);
}

/** A database with every migration before `tag` applied, and workspaces with these ids. */
function migratedUpTo(tag: string, workspaceIds: string[]): Database {
  const db = new Database(":memory:");
  db.run("PRAGMA foreign_keys = ON");
  for (const earlier of MIGRATION_JOURNAL_TAGS.slice(0, MIGRATION_JOURNAL_TAGS.indexOf(tag))) apply(db, earlier);
  for (const id of workspaceIds) db.run("INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, 1)", [id, id]);
  return db;
}

/** An app of `workspace`, its subdomain its id. */
function addApp(db: Database, id: string, workspace: string) {
  db.run(
    "INSERT INTO apps (id, workspace_id, name, runtime, status, memory_mb, startup_command, auto_restart, auto_deploy, machine_id, subdomain, created_at, updated_at) " +
      "VALUES (?, ?, ?, 'node', 'running', 64, 'npm start', 1, 0, 'local', ?, 1, 1)",
    [id, workspace, id, id],
  );
}

describe("0012_domains", () => {
  test("domains from before count as verified in their app's workspace, and one name may then be claimed by several workspaces", () => {
    const db = migratedUpTo("0012_domains", ["ws_a", "ws_b"]);
    addApp(db, "app_a", "ws_a");
    addApp(db, "app_b", "ws_b");
    db.run("INSERT INTO app_domains (id, app_id, domain, created_at) VALUES ('dom_1', 'app_a', 'www.example.test', 1234)");

    apply(db, "0012_domains");

    expect(db.query("SELECT id, app_id, workspace_id, domain, verified_at, checked_at, created_at FROM app_domains").all()).toEqual([
      { id: "dom_1", app_id: "app_a", workspace_id: "ws_a", domain: "www.example.test", verified_at: 1234, checked_at: null, created_at: 1234 },
    ]);
    // A pending claim of another workspace on the same name is allowed; a second verified one is not.
    db.run("INSERT INTO app_domains (id, app_id, workspace_id, domain, created_at) VALUES ('dom_2', 'app_b', 'ws_b', 'www.example.test', 2)");
    expect(() => db.run("UPDATE app_domains SET verified_at = 3 WHERE id = 'dom_2'")).toThrow(/UNIQUE/);
    expect(() => db.run("INSERT INTO app_domains (id, app_id, workspace_id, domain, created_at) VALUES ('dom_3', 'app_a', 'ws_a', 'www.example.test', 2)")).toThrow(/UNIQUE/);
  });
});

describe("0014_domains_takeover", () => {
  test("a workspace with claims from before gets its verification token; one without claims gets none", () => {
    const db = migratedUpTo("0014_domains_takeover", ["ws_a", "ws_b", "ws_c"]);
    db.run("INSERT INTO domain_verification_tokens (workspace_id, token, created_at) VALUES ('ws_c', 'platform-verification=kept', 1)");
    addApp(db, "app_a", "ws_a");
    addApp(db, "app_c", "ws_c");
    db.run("INSERT INTO app_domains (id, app_id, workspace_id, domain, verified_at, created_at) VALUES ('dom_1', 'app_a', 'ws_a', 'one.example.test', 1, 1), ('dom_2', 'app_a', 'ws_a', 'two.example.test', 1, 1), ('dom_3', 'app_c', 'ws_c', 'c.example.test', 1, 1)");

    apply(db, "0014_domains_takeover");

    const tokens = db.query("SELECT workspace_id, token FROM domain_verification_tokens ORDER BY workspace_id").all() as { workspace_id: string; token: string }[];
    expect(tokens.map((row) => row.workspace_id)).toEqual(["ws_a", "ws_c"]);
    expect(tokens[0]!.token).toMatch(/^platform-verification=[0-9a-f]{32}$/);
    expect(tokens[1]!.token).toBe("platform-verification=kept");
    expect(db.query("SELECT record_present, lost_at FROM app_domains WHERE id = 'dom_1'").get()).toEqual({ record_present: null, lost_at: null });
  });
});
