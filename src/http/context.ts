// What every route module is built with: settings, the database, the shared rate limiters.
// Later domains add their own services here (the Docker driver, app and database services).
import type { Config } from "../config";
import type { PlatformDb } from "../db";
import { TokenBuckets } from "./rate-limit";
import { Machines } from "../machines/service";
import { Reconciler } from "../machines/reconciler";
import { openSecretBox, type SecretBox } from "../crypto/secrets";

export interface ServerContext {
  config: Config;
  db: PlatformDb;
  limits: { api: TokenBuckets; authFailures: TokenBuckets };
  machines: Machines;
  reconciler: Reconciler;
  secrets: SecretBox;
}

function encryptedDataExists(db: PlatformDb): boolean {
  return (
    db.$client.query("SELECT 1 FROM app_env_vars UNION ALL SELECT 1 FROM databases LIMIT 1").get() !== null
  );
}

export function createServerContext(config: Config, db: PlatformDb): ServerContext {
  const machines = Machines.fromConfig(config);
  return {
    config,
    db,
    limits: { api: new TokenBuckets(config.apiRateLimit), authFailures: new TokenBuckets(config.authFailureRateLimit) },
    machines,
    reconciler: new Reconciler(machines),
    secrets: openSecretBox(config.dataDir, encryptedDataExists(db)),
  };
}
