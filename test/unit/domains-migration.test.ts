// The migration that brought proof of ownership to custom domains (0012_domains): the domains
// that routed before it keep routing, as verified claims of their app's workspace.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { EMBEDDED_MIGRATIONS, MIGRATION_JOURNAL_TAGS } from "../../src/db/migrations";

function apply(db: Database, tag: string) {
  for (const statement of EMBEDDED_MIGRATIONS[tag]!.split("--> statement-breakpoint")) if (statement.trim()) db.run(statement);
}

describe("0012_domains", () => {
  test("domains from before count as verified in their app's workspace, and one name may then be claimed by several workspaces", () => {
    const db = new Database(":memory:");
    db.run("PRAGMA foreign_keys = ON");
    const tags = MIGRATION_JOURNAL_TAGS.slice(0, MIGRATION_JOURNAL_TAGS.indexOf("0012_domains"));
    for (const tag of tags) apply(db, tag);
    db.run("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_a', 'a', 1), ('ws_b', 'b', 1)");
    const app = (id: string, workspace: string) =>
      db.run(
        "INSERT INTO apps (id, workspace_id, name, runtime, status, memory_mb, startup_command, auto_restart, auto_deploy, machine_id, subdomain, created_at, updated_at) " +
          `VALUES ('${id}', '${workspace}', '${id}', 'node', 'running', 64, 'npm start', 1, 0, 'local', '${id}', 1, 1)`,
      );
    app("app_a", "ws_a");
    app("app_b", "ws_b");
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
