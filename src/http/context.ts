// What every route module is built with: settings, the database, the shared rate limiters, the
// machines with their Docker drivers, and the domain services that own background work.
import { eq } from "drizzle-orm";
import type { Config } from "../config";
import type { PlatformDb } from "../db";
import { ConcurrencyLimit, TokenBuckets } from "./rate-limit";
import { SetupToken } from "../auth/setup-token";
import { Machines } from "../machines/service";
import { Reconciler } from "../machines/reconciler";
import { openSecretBox, type SecretBox } from "../crypto/secrets";
import { ProxyRoutes } from "../proxy/routes";
import { TrafficRecorder, type TrafficSource } from "../proxy/traffic";
import { AppsService } from "../apps/service";
import { AppStorage } from "../apps/sources";
import { BuildLogs } from "../apps/build-logs";
import { Certificates, type WantedHost } from "../certificates/service";
import { CertificateFiles } from "../certificates/files";
import { AcmeIssuer } from "../certificates/acme";
import { DnsChecker, detectPublicAddresses } from "../certificates/dns-check";
import { PlatformEvents } from "../platform/events";
import { DiskMonitor } from "../platform/disk";
import { apps as appRows } from "../db/schema";
import { createVolumeBackupServices, type VolumeBackupServices } from "../volumes/backup-services";

export interface ServerContext {
  config: Config;
  db: PlatformDb;
  limits: {
    api: TokenBuckets;
    /** Failed authentications per client address. */
    authFailures: TokenBuckets;
    /** Failed password attempts per account: `login:<email>`, `invitation:<id>`, `setup`. */
    accountFailures: TokenBuckets;
    /** Password hashes and checks running at once, platform-wide. */
    passwordChecks: ConcurrencyLimit;
  };
  /** Asked of an owner setup that does not come from the machine itself; printed at start. */
  setupToken: SetupToken;
  machines: Machines;
  reconciler: Reconciler;
  secrets: SecretBox;
  proxyRoutes: ProxyRoutes;
  /**
   * What the public proxy counted per app, for GET /api/apps/{appId}/traffic: the proxy's thread once
   * it runs (src/main.ts), an empty recorder before.
   */
  traffic: TrafficSource;
  /** Where apps' sources and build logs live under the data dir. */
  storage: AppStorage;
  apps: AppsService;
  /** Volume backups, restores and their schedules (src/volumes). */
  volumeBackups: VolumeBackupServices;
  /** HTTPS certificates of every host the proxy serves. */
  certificates: Certificates;
  /** Platform-wide events (src/platform/events.ts). */
  events: PlatformEvents;
  /** The data directory's free space, and its `disk.low` event. */
  disk: DiskMonitor;
}

function encryptedDataExists(db: PlatformDb): boolean {
  return (
    db.$client
      .query(
        "SELECT 1 FROM app_env_vars UNION ALL SELECT 1 FROM databases UNION ALL SELECT 1 FROM two_factor_secrets UNION ALL " +
          "SELECT 1 FROM registry_credentials UNION ALL " +
          "SELECT 1 FROM apps WHERE repo_token_encrypted IS NOT NULL OR deploy_hook_encrypted IS NOT NULL OR webhook_secret_encrypted IS NOT NULL LIMIT 1",
      )
      .get() !== null
  );
}

export function createServerContext(config: Config, db: PlatformDb): ServerContext {
  const machines = Machines.fromConfig(config);
  const secrets = openSecretBox(config.dataDir, encryptedDataExists(db));
  const proxyRoutes = new ProxyRoutes();
  const storage = new AppStorage(config.dataDir);
  const buildLogs = new BuildLogs((appId, buildId) => storage.buildLogFile(appId, buildId), config.buildLogMaxBytes);
  const reconciler = new Reconciler(machines);
  const publicIps = config.tls.publicIps.length ? config.tls.publicIps : detectPublicAddresses();
  const dns = new DnsChecker({ expected: publicIps, servers: config.tls.dnsServers });
  const certificateFiles = new CertificateFiles(config.dataDir);
  const certificates: Certificates = new Certificates({
    db,
    config,
    files: certificateFiles,
    issuer: config.tls.acme ? new AcmeIssuer(config.tls.acme, certificateFiles) : null,
    wantedHosts: (): WantedHost[] => [...apps.domains.wantedHosts(), ...(config.tls.apiDomain ? [{ host: config.tls.apiDomain, owner: "platform", checkDns: false }] : [])],
    pointsHere: async (host) => ["ok", "unknown"].includes((await dns.check(host)).status),
  });
  const events = new PlatformEvents();
  const apps: AppsService = new AppsService({ db, config, machines, secrets, storage, buildLogs, proxyRoutes, certificates, dns, events });
  reconciler.register(apps.recovery);
  const volumeBackups = createVolumeBackupServices({
    db,
    config,
    machines,
    disk: apps.disk,
    volumes: apps.volumes,
    apps: {
      statusOf: (appId) => db.select({ status: appRows.status }).from(appRows).where(eq(appRows.id, appId)).get()?.status ?? null,
      stop: (workspaceId, appId) => apps.stop(workspaceId, appId),
      start: (workspaceId, appId) => apps.start(workspaceId, appId),
    },
  });
  return {
    config,
    db,
    limits: {
      api: new TokenBuckets(config.apiRateLimit),
      authFailures: new TokenBuckets(config.authFailureRateLimit),
      accountFailures: new TokenBuckets(config.accountFailureRateLimit),
      passwordChecks: new ConcurrencyLimit(config.passwordHashing.concurrency, config.passwordHashing.queueLimit),
    },
    setupToken: new SetupToken(),
    machines,
    reconciler,
    secrets,
    proxyRoutes,
    traffic: new TrafficRecorder(),
    storage,
    apps,
    volumeBackups,
    certificates,
    events,
    disk: new DiskMonitor(config.dataDir, config.diskLowPercent, events),
  };
}
