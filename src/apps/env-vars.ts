// An app's environment variables, stored encrypted (AES-256-GCM, app id + name as associated
// data). Values leave this module only decrypted for the API's GET and the app's container.
import { and, eq } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { appEnvVars } from "../db/schema";
import type { SecretBox } from "../crypto/secrets";
import { ApiError } from "../http/errors";
import { ENV_NAME_PATTERN, MAX_ENV_VALUE_BYTES, MAX_ENV_VARS } from "./model";

/** Names the platform sets itself. */
const RESERVED = new Set(["PORT"]);

export function validateEnvVars(envVars: Record<string, unknown>): Record<string, string> {
  const entries = Object.entries(envVars);
  if (entries.length > MAX_ENV_VARS) throw new ApiError("VALIDATION_FAILED", `At most ${MAX_ENV_VARS} environment variables`);
  for (const [name, value] of entries) {
    if (!ENV_NAME_PATTERN.test(name)) {
      throw new ApiError("VALIDATION_FAILED", `Invalid envVars name '${name.slice(0, 64)}': letters, digits and _ only, not starting with a digit`);
    }
    if (RESERVED.has(name)) throw new ApiError("VALIDATION_FAILED", `envVars.${name} is set by the platform (use exposePort)`);
    if (typeof value !== "string") throw new ApiError("VALIDATION_FAILED", `envVars.${name} must be a string`);
    if (Buffer.byteLength(value) > MAX_ENV_VALUE_BYTES || value.includes("\0")) {
      throw new ApiError("VALIDATION_FAILED", `envVars.${name} must be at most ${MAX_ENV_VALUE_BYTES} bytes with no NUL`);
    }
  }
  return envVars as Record<string, string>;
}

/** Parses the deploy form's `envVars` JSON text. */
export function parseEnvVarsField(text: string | undefined): Record<string, string> {
  if (text === undefined || text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError("VALIDATION_FAILED", "envVars must be a JSON object of strings");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ApiError("VALIDATION_FAILED", "envVars must be a JSON object of strings");
  }
  return validateEnvVars(parsed as Record<string, unknown>);
}

const associatedData = (appId: string, name: string) => `app-env:${appId}:${name}`;

export function readEnvVars(db: PlatformDb, secrets: SecretBox, appId: string): Record<string, string> {
  const envVars: Record<string, string> = {};
  // In name order: the container's settings digest (deployer.ts) hashes the variables in the order read.
  for (const row of db.select().from(appEnvVars).where(eq(appEnvVars.appId, appId)).orderBy(appEnvVars.name).all()) {
    envVars[row.name] = secrets.decrypt(row.ciphertext, associatedData(appId, row.name));
  }
  return envVars;
}

/** Adds or replaces the given variables, keeping the others. Returns whether anything changed. */
/** Removes the variable `name`; false when the app has none of that name. */
export function deleteEnvVar(db: PlatformDb, appId: string, name: string): boolean {
  return db.delete(appEnvVars).where(and(eq(appEnvVars.appId, appId), eq(appEnvVars.name, name))).returning({ name: appEnvVars.name }).all().length > 0;
}

export function mergeEnvVars(db: PlatformDb, secrets: SecretBox, appId: string, envVars: Record<string, string>): boolean {
  const current = readEnvVars(db, secrets, appId);
  const changed = Object.entries(envVars).filter(([name, value]) => current[name] !== value);
  if (Object.keys({ ...current, ...envVars }).length > MAX_ENV_VARS) {
    throw new ApiError("VALIDATION_FAILED", `At most ${MAX_ENV_VARS} environment variables`);
  }
  db.transaction((tx) => {
    for (const [name, value] of changed) {
      const ciphertext = secrets.encrypt(value, associatedData(appId, name));
      tx.insert(appEnvVars)
        .values({ appId, name, ciphertext })
        .onConflictDoUpdate({ target: [appEnvVars.appId, appEnvVars.name], set: { ciphertext } })
        .run();
    }
  });
  return changed.length > 0;
}
