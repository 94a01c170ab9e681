// Settings of the platform, read once from PLATFORM_* environment variables.
// Every setting is documented in README.md with its default; keep the two in step.
import { resolve } from "node:path";

export type Runtime = "node" | "bun" | "python";
export type Engine = "postgresql" | "mysql" | "mongodb" | "redis";

/** Ports `first` to `last`, both included. */
export interface PortRange {
  first: number;
  last: number;
}

export interface RateLimit {
  /** Bucket size: how many requests may come at once. */
  burst: number;
  /** Tokens added back per second. */
  refillPerSecond: number;
}

export interface Config {
  dataDir: string;
  databaseFile: string;
  host: string;
  port: number;
  proxyPort: number;
  domain: string;
  publicHost: string;
  dockerHost: string | undefined;
  dbBindAddress: string;
  dbPortRange: PortRange;
  images: Record<Runtime | Engine, string>;
  buildCaFile: string | undefined;
  buildNpmRegistry: string | undefined;
  buildMemoryMB: number;
  uploads: { maxUploadBytes: number; maxArchiveEntries: number; maxUncompressedBytes: number };
  apiRateLimit: RateLimit;
  authFailureRateLimit: RateLimit;
  sessionTtlSeconds: number;
  reconcileSchedule: string;
}

function integerSetting(env: Record<string, string | undefined>, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) {
    throw new Error(`${name} must be a number >= ${min}, got "${raw}"`);
  }
  return value;
}

function textSetting(env: Record<string, string | undefined>, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw === "" ? fallback : raw;
}

/** "first-last", e.g. "15400-15999". */
function portRangeSetting(env: Record<string, string | undefined>, name: string, fallback: string): PortRange {
  const raw = textSetting(env, name, fallback);
  const match = /^(\d{1,5})-(\d{1,5})$/.exec(raw.trim());
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (!match || first < 1 || last > 65_535 || first > last) {
    throw new Error(`${name} must be "first-last" with 1 <= first <= last <= 65535, got "${raw}"`);
  }
  return { first, last };
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const dataDir = resolve(textSetting(env, "PLATFORM_DATA_DIR", "./data"));
  return {
    dataDir,
    databaseFile: resolve(dataDir, "platform.sqlite"),
    host: textSetting(env, "PLATFORM_HOST", "0.0.0.0"),
    port: integerSetting(env, "PLATFORM_PORT", 3000),
    proxyPort: integerSetting(env, "PLATFORM_PROXY_PORT", 80),
    domain: textSetting(env, "PLATFORM_DOMAIN", "localhost"),
    publicHost: textSetting(env, "PLATFORM_PUBLIC_HOST", "localhost"),
    dockerHost: env.PLATFORM_DOCKER_HOST || env.DOCKER_HOST || undefined,
    dbBindAddress: textSetting(env, "PLATFORM_DB_BIND_ADDRESS", "127.0.0.1"),
    dbPortRange: portRangeSetting(env, "PLATFORM_DB_PORT_RANGE", "15400-15999"),
    images: {
      node: textSetting(env, "PLATFORM_IMAGE_NODE", "node:22-bookworm-slim"),
      bun: textSetting(env, "PLATFORM_IMAGE_BUN", "oven/bun:1"),
      python: textSetting(env, "PLATFORM_IMAGE_PYTHON", "python:3.12-slim"),
      postgresql: textSetting(env, "PLATFORM_IMAGE_POSTGRESQL", "postgres:17"),
      mysql: textSetting(env, "PLATFORM_IMAGE_MYSQL", "mysql:8.4"),
      mongodb: textSetting(env, "PLATFORM_IMAGE_MONGODB", "mongo:8"),
      redis: textSetting(env, "PLATFORM_IMAGE_REDIS", "redis:7"),
    },
    buildCaFile: env.PLATFORM_BUILD_CA_FILE || undefined,
    buildNpmRegistry: env.PLATFORM_BUILD_NPM_REGISTRY || undefined,
    buildMemoryMB: integerSetting(env, "PLATFORM_BUILD_MEMORY_MB", 2048, 64),
    uploads: {
      maxUploadBytes: integerSetting(env, "PLATFORM_MAX_UPLOAD_BYTES", 512 * 1024 * 1024, 1),
      maxArchiveEntries: integerSetting(env, "PLATFORM_MAX_ARCHIVE_ENTRIES", 20_000, 1),
      maxUncompressedBytes: integerSetting(env, "PLATFORM_MAX_UNCOMPRESSED_BYTES", 1024 * 1024 * 1024, 1),
    },
    apiRateLimit: {
      burst: integerSetting(env, "PLATFORM_API_RATE_BURST", 200, 1),
      refillPerSecond: integerSetting(env, "PLATFORM_API_RATE_PER_SECOND", 100, 0),
    },
    authFailureRateLimit: {
      burst: integerSetting(env, "PLATFORM_AUTH_FAILURE_BURST", 10, 1),
      refillPerSecond: integerSetting(env, "PLATFORM_AUTH_FAILURE_PER_MINUTE", 10, 0) / 60,
    },
    sessionTtlSeconds: integerSetting(env, "PLATFORM_SESSION_TTL_HOURS", 168, 1) * 3600,
    reconcileSchedule: textSetting(env, "PLATFORM_RECONCILE_SCHEDULE", "*/30 * * * * *"),
  };
}
