import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { EMBEDDED_MIGRATIONS, MIGRATION_JOURNAL_TAGS } from "../../src/db/migrations";
import { openDatabase } from "../../src/db";
import { tempDir } from "../helpers/temp";

describe("embedded migrations", () => {
  test("every SQL file and journal entry is embedded in the binary", () => {
    const files = readdirSync(new URL("../../src/db/migrations", import.meta.url))
      .filter((name) => name.endsWith(".sql"))
      .map((name) => name.replace(/\.sql$/, ""));
    expect(Object.keys(EMBEDDED_MIGRATIONS).sort()).toEqual(files.sort());
    expect(MIGRATION_JOURNAL_TAGS.sort()).toEqual(files.sort());
  });

  test("a new file gets the schema with WAL and foreign keys, and reopening is a no-op", () => {
    const file = `${tempDir()}/platform.sqlite`;
    const first = openDatabase(file);
    expect(first.$client.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
    expect(first.$client.query("PRAGMA foreign_keys").get()).toEqual({ foreign_keys: 1 });
    expect(first.$client.query("PRAGMA synchronous").get()).toEqual({ synchronous: 2 });
    const tables = first.$client
      .query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((row: any) => row.name);
    expect(tables).toContain("api_keys");
    expect(tables).toContain("audit_events");
    first.$client.close();
    const again = openDatabase(file);
    const applied = again.$client.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number };
    expect(applied.n).toBe(MIGRATION_JOURNAL_TAGS.length);
    again.$client.close();
  });
});
