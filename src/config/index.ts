// Settings of the platform, read once from PLATFORM_* environment variables.
// Every setting is documented in README.md with its default; keep the two in step.
import { resolve } from "node:path";
import { availableParallelism, hostname } from "node:os";
import { isIP } from "node:net";
import { parseCidr, parseCidrList, type CidrRange } from "../http/trusted-proxies";

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

/** An S3-compatible bucket that receives a copy of every backup. */
export interface BackupBucket {
  endpoint: string;
  region: string;
  bucket: string;
  /** Put before every object key ("" or ending in "/"). */
  prefix: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Most seconds one request to the bucket may go without progress before the copy fails. */
  stallSeconds: number;
}

export interface BackupSettings {
  /** The largest dump `POST .../backups/upload` accepts, as sent (gzip or not). */
  uploadMaxBytes: number;
  /** A dump or a load (restore, verify) whose command moves no byte this long is stopped. */
  idleTimeoutSeconds: number;
  /** A load may run idleTimeoutSeconds plus this per MiB of its backup file, in all; past it, it is stopped. */
  loadSecondsPerMB: number;
  /** The longest a volume's archive (backup) or its extraction (restore) may take in all. */
  volumeTimeoutSeconds: number;
  /** Null unless PLATFORM_BACKUP_S3_BUCKET is set. */
  s3: BackupBucket | null;
}

/** Where repository deploys clone from, and how the platform proves it may (src/apps/repository). */
export interface GitSettings {
  /** Repositories are `<baseUrl>/<owner>/<name>.git`. */
  baseUrl: string;
  cloneTimeoutSeconds: number;
  /** The GitHub App that grants access to private repositories; null unless PLATFORM_GITHUB_APP_ID is set. */
  githubApp: {
    appId: string;
    privateKeyFile: string;
    apiBaseUrl: string;
    /** The App's public page (https://github.com/apps/<slug>), where install links point; null: none are made. */
    publicUrl: string | null;
    /** The App's OAuth client, with which the setup URL learns who installed it; null: no installation can be connected. */
    userAuthorization: GitHubUserAuthorizationSettings | null;
  } | null;
  /** The GitHub App's webhook secret, which signs the deliveries of POST /api/webhooks/github; that webhook is off while unset. */
  githubAppWebhookSecret: string | undefined;
  /** PLATFORM_GITHUB_WEBHOOK_SECRET, the secret every tenant once shared, is set: it is read no more, and the start says so. */
  sharedWebhookSecretSet: boolean;
}

/** The GitHub App's OAuth client (PLATFORM_GITHUB_APP_CLIENT_ID/SECRET) and where GitHub's OAuth endpoints are. */
export interface GitHubUserAuthorizationSettings {
  clientId: string;
  clientSecret: string;
  /** Without a trailing slash, e.g. https://github.com: the code is traded at `<oauthBaseUrl>/login/oauth/access_token`. */
  oauthBaseUrl: string;
}

/** HTTPS at the public proxy: its listener, the platform's own certificate, ACME (src/certificates). */
export interface TlsSettings {
  /** Port of the HTTPS listener; it opens once a certificate exists. */
  port: number;
  /** The platform's own certificate and key files (PLATFORM_TLS_CERT/KEY): first for the hosts it covers. */
  ownCertificate: { certFile: string; keyFile: string } | null;
  /** Automatic certificates by ACME HTTP-01; null unless PLATFORM_ACME_EMAIL is set. */
  acme: { email: string; directoryUrl: string; caFile: string | undefined } | null;
  /** Croner schedule of the check that orders missing certificates and renews old ones. */
  renewalSchedule: string;
  /** The host name the API and dashboard answer at through the proxy; null: not through the proxy. */
  apiDomain: string | null;
  /** This server's public addresses, which custom domains should resolve to; empty: detected. */
  publicIps: string[];
  /** DNS servers (host or host:port) for the check of custom domains; empty: the system's. */
  dnsServers: string[];
}

/** Apps' own domains (src/apps/domains): proof of ownership and limits. */
export interface CustomDomainSettings {
  /** A verified domain removed stays reserved to its workspace this long. */
  reservationMs: number;
  /** Domains (any state) the apps of one workspace may have together. */
  maxPerWorkspace: number;
  /** Croner schedule of the background TXT check of every domain claim. */
  checkSchedule: string;
}

export const LETS_ENCRYPT_DIRECTORY = "https://acme-v02.api.letsencrypt.org/directory";

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

function integerSetting(env: Record<string, string | undefined>, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) {
    throw new Error(`${name} must be a number >= ${min}, got "${raw}"`);
  }
  return value;
}

function percentSetting(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const value = integerSetting(env, name, fallback);
  if (value > 100) throw new Error(`${name} must be a percentage from 0 to 100, got "${env[name]}"`);
  return value;
}

/** What a container's `cpus` may be, for apps, databases and builds alike. */
export const CONTAINER_CPUS = { minimum: 0.1, maximum: 16 };

function cpusSetting(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  const { minimum, maximum } = CONTAINER_CPUS;
  if (!Number.isFinite(value) || value < minimum || value > maximum) throw new Error(`${name} must be a number from ${minimum} to ${maximum}, got "${raw}"`);
  return value;
}

/** Empty or "root": the image's own user. Otherwise a numeric uid or uid:gid (names may not exist in the image). */
function appUserSetting(env: Record<string, string | undefined>, name: string, fallback: string): string | undefined {
  const raw = env[name];
  if (raw === "" || raw === "root" || raw === "0" || raw === "0:0") return undefined;
  const value = raw ?? fallback;
  if (!/^\d{1,9}(:\d{1,9})?$/.test(value)) throw new Error(`${name} must be a uid or uid:gid (numbers), "root" or empty, got "${value}"`);
  return value;
}

function onOffSetting(env: Record<string, string | undefined>, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "on") return true;
  if (raw === "off") return false;
  throw new Error(`${name} must be "on" or "off", got "${raw}"`);
}

/** Comma-separated IPv4 addresses or CIDRs, e.g. "169.254.0.0/16,10.0.0.5", kept as written (iptables takes them so). */
function ipv4CidrListSetting(env: Record<string, string | undefined>, name: string, fallback: string): string[] {
  const items = (env[name] ?? fallback).split(",").map((item) => item.trim()).filter(Boolean);
  for (const item of items) {
    let family: number | undefined;
    try {
      family = parseCidr(item).family;
    } catch {}
    if (family !== 4 || item.includes(":")) throw new Error(`${name} must be comma-separated IPv4 addresses or CIDRs, got "${item}"`);
  }
  return items;
}

function trustedProxiesSetting(env: Record<string, string | undefined>, name: string): CidrRange[] {
  try {
    return parseCidrList(env[name] ?? "");
  } catch (error) {
    throw new Error(`${name} must be comma-separated IPv4 or IPv6 addresses or CIDRs: ${(error as Error).message}`);
  }
}

/** Comma-separated registry hosts as image references name them (`host` or `host:port`), lowercased. */
function registryListSetting(env: Record<string, string | undefined>, name: string): string[] {
  const items = (env[name] ?? "").split(",").map((item) => item.trim().toLowerCase()).filter(Boolean);
  const bad = items.find((item) => !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d{1,5})?$/.test(item));
  if (bad !== undefined) throw new Error(`${name} must be comma-separated registry hosts (host or host:port), got "${bad}"`);
  return items;
}

const HOST_NAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/** Comma-separated host names, lowercased; "*" allows any. The fallback's odd names are left out. */
function hostListSetting(env: Record<string, string | undefined>, name: string, fallback: string[]): string[] {
  const lowered = (text: string) => text.trim().toLowerCase().replace(/\.$/, "");
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback.map(lowered).filter((item) => HOST_NAME.test(item));
  const names = raw.split(",").map(lowered).filter(Boolean);
  const bad = names.find((item) => item !== "*" && !HOST_NAME.test(item));
  if (bad !== undefined) throw new Error(`${name} must be comma-separated host names (or "*"), got "${bad}"`);
  return names;
}

/** The PLATFORM_BACKUP_S3_* settings; all of bucket, access key and secret, or none. */
function backupBucketSetting(env: Record<string, string | undefined>): BackupBucket | null {
  const bucket = env.PLATFORM_BACKUP_S3_BUCKET;
  if (!bucket) return null;
  const accessKeyId = env.PLATFORM_BACKUP_S3_ACCESS_KEY_ID;
  const secretAccessKey = env.PLATFORM_BACKUP_S3_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw new Error("PLATFORM_BACKUP_S3_BUCKET needs PLATFORM_BACKUP_S3_ACCESS_KEY_ID and PLATFORM_BACKUP_S3_SECRET_ACCESS_KEY");
  }
  const prefix = textSetting(env, "PLATFORM_BACKUP_S3_PREFIX", "");
  return {
    endpoint: textSetting(env, "PLATFORM_BACKUP_S3_ENDPOINT", "https://s3.amazonaws.com"),
    region: textSetting(env, "PLATFORM_BACKUP_S3_REGION", "us-east-1"),
    bucket,
    prefix: prefix === "" || prefix.endsWith("/") ? prefix : `${prefix}/`,
    accessKeyId,
    secretAccessKey,
    stallSeconds: integerSetting(env, "PLATFORM_BACKUP_S3_STALL_SECONDS", 120, 1),
  };
}

/** An http(s) URL without credentials (a token in it would reach logs) or a trailing slash. */
function baseUrlSetting(env: Record<string, string | undefined>, name: string, fallback: string): string {
  const raw = textSetting(env, name, fallback);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (!/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash) {
    throw new Error(`${name} must be an http(s) URL without credentials, query or fragment, got "${raw}"`);
  }
  return raw.replace(/\/+$/, "");
}

function gitSettings(env: Record<string, string | undefined>): GitSettings {
  const appId = env.PLATFORM_GITHUB_APP_ID || undefined;
  if (appId !== undefined && !/^\d+$/.test(appId)) throw new Error(`PLATFORM_GITHUB_APP_ID must be a number, got "${appId}"`);
  const privateKeyFile = env.PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE || undefined;
  if (appId && !privateKeyFile) throw new Error("PLATFORM_GITHUB_APP_ID is set: PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE must name the app's private key");
  const clientId = env.PLATFORM_GITHUB_APP_CLIENT_ID || undefined;
  const clientSecret = env.PLATFORM_GITHUB_APP_CLIENT_SECRET || undefined;
  if (Boolean(clientId) !== Boolean(clientSecret)) throw new Error("PLATFORM_GITHUB_APP_CLIENT_ID and PLATFORM_GITHUB_APP_CLIENT_SECRET go together: set both or neither");
  return {
    baseUrl: baseUrlSetting(env, "PLATFORM_GIT_BASE_URL", "https://github.com"),
    cloneTimeoutSeconds: integerSetting(env, "PLATFORM_GIT_CLONE_TIMEOUT_SECONDS", 300, 1),
    githubApp:
      appId && privateKeyFile
        ? {
            appId,
            privateKeyFile,
            apiBaseUrl: baseUrlSetting(env, "PLATFORM_GITHUB_API_URL", "https://api.github.com"),
            publicUrl: env.PLATFORM_GITHUB_APP_URL ? baseUrlSetting(env, "PLATFORM_GITHUB_APP_URL", "") : null,
            userAuthorization:
              clientId && clientSecret ? { clientId, clientSecret, oauthBaseUrl: baseUrlSetting(env, "PLATFORM_GITHUB_OAUTH_URL", "https://github.com") } : null,
          }
        : null,
    githubAppWebhookSecret: env.PLATFORM_GITHUB_APP_WEBHOOK_SECRET || undefined,
    sharedWebhookSecretSet: Boolean(env.PLATFORM_GITHUB_WEBHOOK_SECRET),
  };
}

function tlsSettings(env: Record<string, string | undefined>): TlsSettings {
  const certFile = env.PLATFORM_TLS_CERT || undefined;
  const keyFile = env.PLATFORM_TLS_KEY || undefined;
  if (Boolean(certFile) !== Boolean(keyFile)) throw new Error("PLATFORM_TLS_CERT and PLATFORM_TLS_KEY go together: set both or neither");
  const email = env.PLATFORM_ACME_EMAIL || undefined;
  if (email !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) throw new Error(`PLATFORM_ACME_EMAIL must be an email address, got "${email}"`);
  const apiDomain = env.PLATFORM_API_DOMAIN ? hostListSetting(env, "PLATFORM_API_DOMAIN", [])[0]! : null;
  if (apiDomain === "*" || env.PLATFORM_API_DOMAIN?.includes(",")) throw new Error("PLATFORM_API_DOMAIN must be one host name");
  const publicIps = (env.PLATFORM_PUBLIC_IP ?? "").split(",").map((item) => item.trim()).filter(Boolean);
  const badIp = publicIps.find((item) => isIP(item) === 0);
  if (badIp !== undefined) throw new Error(`PLATFORM_PUBLIC_IP must be comma-separated IP addresses, got "${badIp}"`);
  const dnsServers = (env.PLATFORM_DNS_SERVERS ?? "").split(",").map((item) => item.trim()).filter(Boolean);
  const badServer = dnsServers.find((item) => isIP(item) === 0 && isIP(item.replace(/^\[(.*)\]:\d{1,5}$/, "$1").replace(/^([\d.]+):\d{1,5}$/, "$1")) === 0);
  if (badServer !== undefined) throw new Error(`PLATFORM_DNS_SERVERS must be comma-separated IP addresses, each with an optional :port, got "${badServer}"`);
  return {
    port: integerSetting(env, "PLATFORM_PROXY_TLS_PORT", 443),
    ownCertificate: certFile && keyFile ? { certFile: resolve(certFile), keyFile: resolve(keyFile) } : null,
    acme: email
      ? { email, directoryUrl: baseUrlSetting(env, "PLATFORM_ACME_DIRECTORY", LETS_ENCRYPT_DIRECTORY), caFile: env.PLATFORM_ACME_CA_FILE ? resolve(env.PLATFORM_ACME_CA_FILE) : undefined }
      : null,
    renewalSchedule: textSetting(env, "PLATFORM_CERTIFICATE_SCHEDULE", "0 */10 * * * *"),
    apiDomain,
    publicIps,
    dnsServers,
  };
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
