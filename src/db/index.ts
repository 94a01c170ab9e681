// Opens the platform's SQLite file with the durability settings every write relies on, and
// brings its schema up to date from the embedded migrations; or, for a thread that only reads
// (the public proxy's), opens it read-only once that is done.
import { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import * as schema from "./schema";
import { embeddedMigrations } from "./migrations";

export type PlatformDb = BunSQLiteDatabase<typeof schema> & { $client: Database };

export function openDatabase(file: string): PlatformDb {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const sqlite = new Database(file, { create: true, strict: true });
  sqlite.exec("PRAGMA journal_mode = WAL");
  // FULL: a 2xx answer means the write survives a crash or SIGKILL right after it.
  sqlite.exec("PRAGMA synchronous = FULL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  const db = drizzle(sqlite, { schema });
  // drizzle's public migrator only reads from a folder; the dialect takes the same input in memory.
  (db as any).dialect.migrate(embeddedMigrations(), (db as any).session, { migrationsFolder: "" });
  return db as PlatformDb;
}

/** A read-only connection to a database openDatabase has brought up to date. */
export function openDatabaseForReading(file: string): PlatformDb {
  const sqlite = new Database(file, { readonly: true, strict: true });
  sqlite.exec("PRAGMA busy_timeout = 5000");
  return drizzle(sqlite, { schema }) as PlatformDb;
}

export { schema };
