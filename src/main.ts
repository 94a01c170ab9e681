// The `platform` command: `serve` runs everything in one process; `keys create`, `version`
// and `help` work without a running server.
import { loadConfig } from "./config";
import { openDatabase } from "./db";
import { createServerContext } from "./http/context";
import { createServer } from "./http/server";
import { ProxyThread } from "./proxy/thread";
import { startHousekeeping } from "./housekeeping";
import { createKeyFromCli } from "./cli/keys";
import { PLATFORM_VERSION } from "./version";
import { setupRequired } from "./auth/service";
import { sharedCookieDomainWarning } from "./auth/cookie-scope";
import { hostname } from "node:os";
import { applyEgressFirewall } from "./docker/egress";
import { describeStall, watchEventLoop } from "./metrics/event-loop";
import { keepServingOnUnhandledRejection } from "./unhandled-rejections";

const HELP = `platform ${PLATFORM_VERSION}: a self-hosted application platform in one binary

Usage:
  platform serve                                   run the API, dashboard and workers
  platform keys create --name NAME [--workspace W] create an API key (prints one JSON line)
  platform version                                 print the version
  platform help                                    this text

Settings are PLATFORM_* environment variables; see README.md.`;

/** The API limits its own clients: at the proxy, the API domain's route refuses nothing. */
const API_ROUTE_LIMITS = { perClient: { burst: 1e9, refillPerSecond: 1e9 }, perHost: { burst: 1e9, refillPerSecond: 1e9 } };
/** How long a shutdown waits for deletions in progress. */
const SHUTDOWN_GRACE_MS = 15_000;
/** How long requests in flight through the public proxy may take to finish at shutdown. */
const PROXY_DRAIN_MS = 10_000;

function serve() {
  // A failed background write (a full disk) must not take the API and the proxy down with it.
  keepServingOnUnhandledRejection();
  const config = loadConfig();
  const cookieWarning = sharedCookieDomainWarning(config);
  if (cookieWarning) console.warn(cookieWarning);
  const db = openDatabase(config.databaseFile);
  const ctx = createServerContext(config, db);
  const server = createServer(ctx).listen({ hostname: config.host, port: config.port });
  const { certificates } = ctx;
  certificates.load();
  const proxy = new ProxyThread(
    new Worker(new URL("./proxy-worker.ts", import.meta.url).href),
    {
      hostname: config.host,
      port: config.proxyPort,
      domain: config.domain,
      tlsPort: config.tls.port,
      databaseFile: config.databaseFile,
      config: {
        trustedProxies: config.trustedProxies,
        proxyRateLimits: config.proxyRateLimits,
        proxyTimeouts: config.proxyTimeouts,
        proxyMaxConnectionsPerClient: config.proxyMaxConnectionsPerClient,
      },
    },
    { routes: ctx.proxyRoutes.changes(), certificates: certificates.served.changes() },
  );
  // From here on the proxy's thread is told of every change, and answers the traffic questions.
  ctx.proxyRoutes.onChange = (change) => proxy.route(change);
  certificates.served.onChange = (change) => proxy.certificate(change);
  certificates.onChallenge = (token, keyAuthorization) => proxy.challenge(token, keyAuthorization);
  ctx.traffic = proxy;
  ctx.apps.deployer.inFlight = (host, port) => proxy.inFlight(host, port);
  // Watched from here: building the routes above blocks the loop too, but before anyone can wait on it.
  const stopWatchingLoop = config.eventLoopWarnMs > 0 ? watchEventLoop(config.eventLoopWarnMs, (stall) => console.warn(describeStall(stall))) : () => {};
  ctx.apps.proxyPort = proxy.port;
  void applyEgressFirewall({ ...config.egress, dockerHost: config.dockerHost, apiPort: server.server!.port! })
    .then((outcome) => (outcome.startsWith("WARNING") ? console.warn : console.log)(`[egress] ${outcome}`))
    .catch((error) => console.error("[egress] the firewall rules could not be applied:", error));
  console.log(`proxy listening on http://${config.host}:${proxy.port} for *.${config.domain}`);
  if (config.git.sharedWebhookSecretSet) {
    console.warn(
      "[webhooks] PLATFORM_GITHUB_WEBHOOK_SECRET is no longer read: every app has a webhook of its own " +
        "(GET /api/apps/{appId}/webhook); the GitHub App's webhook takes PLATFORM_GITHUB_APP_WEBHOOK_SECRET, a new secret only you hold",
    );
  }
  if (config.tls.apiDomain) {
    // Through the proxy the API sees the client's address in X-Forwarded-For (config.apiTrustedProxies).
    ctx.proxyRoutes.setApi(config.tls.apiDomain, { host: config.apiRouteHost, port: server.server!.port!, rateLimits: API_ROUTE_LIMITS, httpsRedirect: true, hsts: false });
  }
  certificates.onAvailable = () => {
    if (ctx.apps.tlsPort) return;
    try {
      ctx.apps.tlsPort = proxy.startTls();
      console.log(`proxy listening on https://${config.host}:${ctx.apps.tlsPort}`);
    } catch (error) {
      // Tried again at the next check; until then nothing is redirected to HTTPS.
      console.error(`[proxy] the HTTPS listener cannot open on port ${config.tls.port}: ${(error as Error).message}`);
    }
  };
  certificates.start();
  ctx.apps.domains.start();
  ctx.disk.start();
  ctx.apps.healthMonitor.start();
  void ctx.apps.recovery
    .recoverAfterRestart()
    .catch((error) => console.error("[apps] recovery after restart:", error))
    .then(() => {
      ctx.reconciler.start(config.reconcileSchedule);
      ctx.apps.crashSupervisor.start();
    })
    .catch((error) => console.error("[reconciler] cannot start:", error));
  const housekeeping = startHousekeeping(
    { db, machines: ctx.machines, buildRetention: config.buildRetention, removeBuildLog: (appId, buildId) => ctx.apps.removeBuildLog(appId, buildId), refreshVolumeSizes: () => ctx.apps.volumes.sizes.refreshIfStale() },
    config.housekeepingSchedule,
  );
  console.log(`platform ${PLATFORM_VERSION} listening on http://${config.host}:${server.server?.port} (data in ${config.dataDir})`);
  if (setupRequired(db)) {
    const dashboardHost = config.host === "0.0.0.0" || config.host === "::" ? hostname() : config.host;
    console.log(
      `owner setup: open http://${dashboardHost}:${server.server?.port}/?setup=${ctx.setupToken.value} to create the owner ` +
        "account (from another machine the setup needs this one-time token; it changes at every start)",
    );
  }
  const shutdown = async (signal: string) => {
    console.log(`${signal} received, shutting down`);
    // The proxy takes no new connection from now on; requests in flight may finish, within reason.
    const proxyDrained = Promise.race([proxy.stop(), Bun.sleep(PROXY_DRAIN_MS)]);
    ctx.reconciler.stop();
    ctx.apps.healthMonitor.stop();
    ctx.apps.crashSupervisor.stop();
    certificates.stop();
    ctx.apps.domains.stop();
    housekeeping.stop();
    stopWatchingLoop();
    // A DELETE answers before its containers are gone: let those removals finish, within reason.
    await Promise.all([Promise.race([ctx.apps.deletionsDone(), Bun.sleep(SHUTDOWN_GRACE_MS)]), proxyDrained]);
    await proxy.stop(true);
    await server.stop();
    db.$client.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

function main(argv: string[]): number {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "serve":
        serve();
        return -1;
      case "keys":
        if (rest[0] !== "create") throw new Error("usage: platform keys create --name NAME [--workspace NAME]");
        console.log(JSON.stringify(createKeyFromCli(loadConfig(), rest.slice(1))));
        return 0;
      case "version":
      case "--version":
        console.log(PLATFORM_VERSION);
        return 0;
      case "help":
      case "--help":
      case undefined:
        console.log(HELP);
        return 0;
      default:
        console.error(`unknown command "${command}"\n\n${HELP}`);
        return 2;
    }
  } catch (error) {
    console.error(`platform: ${(error as Error).message}`);
    return 1;
  }
}

const exitCode = main(process.argv.slice(2));
if (exitCode >= 0) process.exit(exitCode);
