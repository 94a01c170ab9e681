// Prepared statements cached per database handle. drizzle builds and prepares a query anew on
// every call (~100 µs); the per-request queries of authentication are prepared once instead.
import type { PlatformDb } from "./index";

export function preparedStatement<Statement>(build: (db: PlatformDb) => Statement): (db: PlatformDb) => Statement {
  const cache = new WeakMap<PlatformDb, Statement>();
  return (db) => {
    let statement = cache.get(db);
    if (!statement) cache.set(db, (statement = build(db)));
    return statement;
  };
}
