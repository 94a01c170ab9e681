// What every route module is built with: settings, the database, the shared rate limiters.
// Later domains add their own services here (the Docker driver, app and database services).
import type { Config } from "../config";
import type { PlatformDb } from "../db";
import { TokenBuckets } from "./rate-limit";
import { Machines } from "../machines/service";
import { Reconciler } from "../machines/reconciler";

export interface ServerContext {
  config: Config;
  db: PlatformDb;
  limits: { api: TokenBuckets; authFailures: TokenBuckets };
  machines: Machines;
  reconciler: Reconciler;
}

export function createServerContext(config: Config, db: PlatformDb): ServerContext {
  const machines = Machines.fromConfig(config);
  return {
    config,
    db,
    limits: { api: new TokenBuckets(config.apiRateLimit), authFailures: new TokenBuckets(config.authFailureRateLimit) },
    machines,
    reconciler: new Reconciler(machines),
  };
}
