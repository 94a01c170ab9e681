// Settings of the platform, read once from PLATFORM_* environment variables.
// Every setting is documented in README.md with its default; keep the two in step.
import { resolve } from "node:path";
import { availableParallelism, hostname } from "node:os";
import { isIP } from "node:net";
import { parseCidrList, type CidrRange } from "../http/trusted-proxies";
import type { BackupSettings } from "./backups";
import type { GitSettings } from "./git";
import type { CustomDomainSettings, TlsSettings } from "./tls";
import { gitSettings } from "./git";
import { backupBucketSetting } from "./backups";
import { tlsSettings } from "./tls";
import {
  appUserSetting,
  cpusSetting,
  hostListSetting,
  integerSetting,
  ipv4CidrListSetting,
  onOffSetting,
  percentSetting,
  portRangeSetting,
  registryListSetting,
  textSetting,
  trustedProxiesSetting,
  type PortRange,
} from "./parse";

export type { BackupBucket, BackupSettings } from "./backups";
export type { GitHubUserAuthorizationSettings, GitSettings } from "./git";
export { LETS_ENCRYPT_DIRECTORY, type CustomDomainSettings, type TlsSettings } from "./tls";
export { CONTAINER_CPUS, type PortRange } from "./parse";

export type Runtime = "node" | "bun" | "python";
export type Engine = "postgresql" | "mysql" | "mongodb" | "redis";

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
  /** Image registries (`host` or `host:port`) builds may pull from besides the public ones, whatever their address: the administrator's own, trusted (PLATFORM_BUILD_REGISTRIES). */
  buildRegistries: string[];
  /** Longest an image deploy's pull may take (PLATFORM_IMAGE_PULL_TIMEOUT_SECONDS). */
  imagePullTimeoutSeconds: number;
  /** Largest image an image deploy may run, unpacked, in MB (PLATFORM_IMAGE_MAX_MB). */
  imageMaxMB: number;
  buildMemoryMB: number;
  buildCpus: number;
  buildPidsLimit: number;
  buildTimeoutSeconds: number;
  /** A build log past this keeps its first and last part. */
  buildLogMaxBytes: number;
  buildsPerWorkspace: number;
  /** A volume's size is measured again once its last measure is this old (src/volumes/sizes.ts). */
  volumeSizeRefreshSeconds: number;
  buildsMax: number;
  uploads: { maxUploadBytes: number; maxArchiveEntries: number; maxUncompressedBytes: number };
  apiRateLimit: RateLimit;
  /** The public proxy's limits: per client address of an app, and per app. */
  proxyRateLimits: { perClient: RateLimit; perHost: RateLimit };
  /**
   * The public proxy's time limits: for a client to send a request head, for a keep-alive
   * connection to sit idle, for the app to send a byte during an exchange, and to connect to it.
   */
  proxyTimeouts: { headerSeconds: number; idleSeconds: number; upstreamSeconds: number; connectSeconds: number };
  /** Connections one client address may hold open to the public proxy. */
  proxyMaxConnectionsPerClient: number;
  authFailureRateLimit: RateLimit;
  /** Failed password attempts per account (email, invitation, the owner setup), from any address. */
  accountFailureRateLimit: RateLimit;
  /** How many password hashes or checks run at once, and how many more may wait for a turn. */
  passwordHashing: { concurrency: number; queueLimit: number };
  /** Peers whose X-Forwarded-For, -Proto and -Host are believed. */
  trustedProxies: CidrRange[];
  /**
   * Whose X-Forwarded-* the API believes: the trusted proxies, and with PLATFORM_API_DOMAIN the
   * public proxy itself, which reaches the API over loopback.
   */
  apiTrustedProxies: CidrRange[];
  /** Where the proxy reaches the API for PLATFORM_API_DOMAIN: PLATFORM_HOST, or loopback when that is a wildcard. */
  apiRouteHost: string;
  /** Host names the dashboard may be reached by (besides IP literals and localhost); "*" allows any. */
  apiHosts: string[];
  sessionTtlSeconds: number;
  reconcileSchedule: string;
  /** Builds kept per app (besides its current build and unfinished ones) when housekeeping runs. */
  buildRetention: number;
  /** Images kept per app for rollbacks (besides the one serving): the newest successful builds'. */
  appImagesKept: number;
  /** Releases and the running apps' health (src/apps/health). */
  health: HealthSettings;
  git: GitSettings;
  backups: BackupSettings;
  /** Croner schedule of housekeeping: pruning expired sessions and old builds. */
  housekeepingSchedule: string;
  /** A stall of the event loop this long or longer is logged; 0 turns the watch off. */
  eventLoopWarnMs: number;
  /** Under this share of the data directory's disk free (percent), a `disk.low` event is raised. */
  diskLowPercent: number;
  quotas: WorkspaceQuotas;
  /** CPUs of an app or database container whose `cpus` is not set. */
  defaultCpus: number;
  /** uid[:gid] app containers run as; undefined: the image's own user (root in the runtime images). */
  appUser: string | undefined;
  egress: { firewall: boolean; blockedCidrs: string[] };
  tls: TlsSettings;
  customDomains: CustomDomainSettings;
}

/** Per-workspace limits; see "Isolation" in README.md. */
export interface WorkspaceQuotas {
  apps: number;
  databases: number;
  /** Sum of the memoryMB of the workspace's apps and databases. */
  memoryMB: number;
  /** Databases with a host port. */
  dbPorts: number;
  /** What a workspace keeps on the platform's disk: app source trees, build logs and backups. */
  diskMB: number;
  /** Manual and uploaded backups kept per database (scheduled ones have their schedule's retention). */
  backupsPerDatabase: number;
}

export interface HealthSettings {
  /** Longest a release waits for the requests in flight to its old container before stopping it. */
  releaseDrainSeconds: number;
  /** Longest wait between two restarts the platform makes of an unhealthy or crashing app. */
  restartBackoffMaxSeconds: number;
  /** This many exits of an app's container within crashLoopMinutes make it `crash-loop`. */
  crashLoopExits: number;
  crashLoopMinutes: number;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const dataDir = resolve(textSetting(env, "PLATFORM_DATA_DIR", "./data"));
  const trustedProxies = trustedProxiesSetting(env, "PLATFORM_TRUSTED_PROXIES");
  const tls = tlsSettings(env);
  const host = textSetting(env, "PLATFORM_HOST", "0.0.0.0");
  const apiRouteHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  return {
    dataDir,
    databaseFile: resolve(dataDir, "platform.sqlite"),
    host,
    port: integerSetting(env, "PLATFORM_PORT", 3000),
    proxyPort: integerSetting(env, "PLATFORM_PROXY_PORT", 80),
    // Hosts are compared, and certificates stored, by their lowercase name.
    domain: textSetting(env, "PLATFORM_DOMAIN", "localhost").toLowerCase().replace(/\.$/, ""),
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
    buildRegistries: registryListSetting(env, "PLATFORM_BUILD_REGISTRIES"),
    imagePullTimeoutSeconds: integerSetting(env, "PLATFORM_IMAGE_PULL_TIMEOUT_SECONDS", 600, 1),
    imageMaxMB: integerSetting(env, "PLATFORM_IMAGE_MAX_MB", 4096, 1),
    buildMemoryMB: integerSetting(env, "PLATFORM_BUILD_MEMORY_MB", 2048, 64),
    buildCpus: cpusSetting(env, "PLATFORM_BUILD_CPUS", 1),
    buildPidsLimit: integerSetting(env, "PLATFORM_BUILD_PIDS_LIMIT", 512, 16),
    buildTimeoutSeconds: integerSetting(env, "PLATFORM_BUILD_TIMEOUT_SECONDS", 900, 1),
    buildLogMaxBytes: integerSetting(env, "PLATFORM_BUILD_LOG_MAX_BYTES", 5 * 1024 * 1024, 64 * 1024),
    buildsPerWorkspace: integerSetting(env, "PLATFORM_BUILDS_PER_WORKSPACE", 2, 1),
    volumeSizeRefreshSeconds: integerSetting(env, "PLATFORM_VOLUME_SIZE_REFRESH_SECONDS", 60, 0),
    buildsMax: integerSetting(env, "PLATFORM_BUILDS_MAX", 4, 1),
    uploads: {
      maxUploadBytes: integerSetting(env, "PLATFORM_MAX_UPLOAD_BYTES", 512 * 1024 * 1024, 1),
      maxArchiveEntries: integerSetting(env, "PLATFORM_MAX_ARCHIVE_ENTRIES", 20_000, 1),
      maxUncompressedBytes: integerSetting(env, "PLATFORM_MAX_UNCOMPRESSED_BYTES", 1024 * 1024 * 1024, 1),
    },
    apiRateLimit: {
      burst: integerSetting(env, "PLATFORM_API_RATE_BURST", 200, 1),
      refillPerSecond: integerSetting(env, "PLATFORM_API_RATE_PER_SECOND", 100, 0),
    },
    proxyRateLimits: {
      perClient: {
        burst: integerSetting(env, "PLATFORM_PROXY_IP_BURST", 200, 1),
        refillPerSecond: integerSetting(env, "PLATFORM_PROXY_IP_RPS", 100, 0),
      },
      perHost: {
        burst: integerSetting(env, "PLATFORM_PROXY_HOST_BURST", 2000, 1),
        refillPerSecond: integerSetting(env, "PLATFORM_PROXY_HOST_RPS", 1000, 0),
      },
    },
    proxyTimeouts: {
      headerSeconds: integerSetting(env, "PLATFORM_PROXY_HEADER_TIMEOUT_SECONDS", 10, 1),
      idleSeconds: integerSetting(env, "PLATFORM_PROXY_IDLE_TIMEOUT_SECONDS", 60, 1),
      upstreamSeconds: integerSetting(env, "PLATFORM_PROXY_UPSTREAM_TIMEOUT_SECONDS", 300, 1),
      connectSeconds: integerSetting(env, "PLATFORM_PROXY_CONNECT_TIMEOUT_SECONDS", 5, 1),
    },
    proxyMaxConnectionsPerClient: integerSetting(env, "PLATFORM_PROXY_IP_MAX_CONNECTIONS", 512, 1),
    authFailureRateLimit: {
      burst: integerSetting(env, "PLATFORM_AUTH_FAILURE_BURST", 10, 1),
      refillPerSecond: integerSetting(env, "PLATFORM_AUTH_FAILURE_PER_MINUTE", 10, 0) / 60,
    },
    accountFailureRateLimit: {
      burst: integerSetting(env, "PLATFORM_AUTH_ACCOUNT_FAILURE_BURST", 20, 1),
      refillPerSecond: integerSetting(env, "PLATFORM_AUTH_ACCOUNT_FAILURE_PER_MINUTE", 2, 0) / 60,
    },
    passwordHashing: {
      concurrency: integerSetting(env, "PLATFORM_PASSWORD_HASH_CONCURRENCY", availableParallelism(), 1),
      queueLimit: integerSetting(env, "PLATFORM_PASSWORD_HASH_QUEUE", 32, 0),
    },
    trustedProxies,
    apiTrustedProxies: tls.apiDomain ? [...trustedProxies, ...parseCidrList(`127.0.0.0/8,::1/128${isIP(apiRouteHost) ? `,${apiRouteHost}` : ""}`)] : trustedProxies,
    apiRouteHost,
    apiHosts: [
      ...hostListSetting(env, "PLATFORM_API_HOSTS", [hostname(), textSetting(env, "PLATFORM_PUBLIC_HOST", "localhost"), textSetting(env, "PLATFORM_DOMAIN", "localhost")]),
      ...(tls.apiDomain ? [tls.apiDomain] : []),
    ],
    sessionTtlSeconds: integerSetting(env, "PLATFORM_SESSION_TTL_HOURS", 168, 1) * 3600,
    reconcileSchedule: textSetting(env, "PLATFORM_RECONCILE_SCHEDULE", "*/30 * * * * *"),
    buildRetention: integerSetting(env, "PLATFORM_BUILD_RETENTION", 50, 1),
    appImagesKept: integerSetting(env, "PLATFORM_APP_IMAGES_KEPT", 3, 1),
    health: {
      releaseDrainSeconds: integerSetting(env, "PLATFORM_RELEASE_DRAIN_SECONDS", 30, 0),
      restartBackoffMaxSeconds: integerSetting(env, "PLATFORM_RESTART_BACKOFF_MAX_SECONDS", 300, 2),
      crashLoopExits: integerSetting(env, "PLATFORM_CRASH_LOOP_EXITS", 5, 2),
      crashLoopMinutes: integerSetting(env, "PLATFORM_CRASH_LOOP_MINUTES", 10, 1),
    },
    git: gitSettings(env),
    backups: {
      uploadMaxBytes: integerSetting(env, "PLATFORM_BACKUP_UPLOAD_MAX_MB", 10_240, 1) * 1024 * 1024,
      idleTimeoutSeconds: integerSetting(env, "PLATFORM_BACKUP_IDLE_TIMEOUT_SECONDS", 900, 1),
      loadSecondsPerMB: integerSetting(env, "PLATFORM_BACKUP_LOAD_SECONDS_PER_MB", 60, 0),
      volumeTimeoutSeconds: integerSetting(env, "PLATFORM_VOLUME_BACKUP_TIMEOUT_SECONDS", 3600, 1),
      s3: backupBucketSetting(env),
    },
    housekeepingSchedule: textSetting(env, "PLATFORM_HOUSEKEEPING_SCHEDULE", "0 */15 * * * *"),
    eventLoopWarnMs: integerSetting(env, "PLATFORM_EVENT_LOOP_WARN_MS", 200),
    diskLowPercent: percentSetting(env, "PLATFORM_DISK_LOW_PERCENT", 10),
    quotas: {
      apps: integerSetting(env, "PLATFORM_QUOTA_APPS", 50),
      databases: integerSetting(env, "PLATFORM_QUOTA_DATABASES", 20),
      memoryMB: integerSetting(env, "PLATFORM_QUOTA_MEMORY_MB", 16_384),
      dbPorts: integerSetting(env, "PLATFORM_QUOTA_DB_PORTS", 20),
      diskMB: integerSetting(env, "PLATFORM_QUOTA_DISK_MB", 10_240),
      backupsPerDatabase: integerSetting(env, "PLATFORM_QUOTA_BACKUPS_PER_DATABASE", 20),
    },
    defaultCpus: cpusSetting(env, "PLATFORM_DEFAULT_CPUS", 1),
    appUser: appUserSetting(env, "PLATFORM_APP_USER", "1000:1000"),
    egress: {
      firewall: onOffSetting(env, "PLATFORM_EGRESS_FIREWALL", true),
      blockedCidrs: ipv4CidrListSetting(env, "PLATFORM_EGRESS_BLOCKED", "169.254.0.0/16"),
    },
    tls,
    customDomains: {
      reservationMs: integerSetting(env, "PLATFORM_DOMAIN_RESERVATION_HOURS", 7 * 24) * 3600_000,
      maxPerWorkspace: integerSetting(env, "PLATFORM_MAX_DOMAINS_PER_WORKSPACE", 100, 1),
      checkSchedule: textSetting(env, "PLATFORM_DOMAIN_CHECK_SCHEDULE", "0 */5 * * * *"),
    },
  };
}
