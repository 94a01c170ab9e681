// The public proxy's own thread (src/proxy/thread.ts explains why), started by src/main.ts: its
// copies of the routing table and the certificates, the ACME challenges in progress, the traffic
// counters, and the proxy itself (src/proxy/server.ts). Apps without a route are looked up in the
// platform's database, read-only.
import { unroutedAppOf } from "./apps/unrouted";
import { ServedCertificates } from "./certificates/served";
import { openDatabaseForReading } from "./db";
import { ProxyRoutes } from "./proxy/routes";
import { startProxy, type PublicProxy } from "./proxy/server";
import { answerProxyCalls } from "./proxy/thread";
import { TrafficRecorder } from "./proxy/traffic";

declare const self: Worker;

const routes = new ProxyRoutes();
const certificates = new ServedCertificates();
/** Key authorizations of the ACME HTTP-01 challenges in progress, by token. */
const challenges = new Map<string, string>();
const traffic = new TrafficRecorder();
let proxy: PublicProxy | null = null;

answerProxyCalls(self, {
  start(settings, state) {
    const db = openDatabaseForReading(settings.databaseFile);
    routes.setUnroutedLookup((subdomain) => unroutedAppOf(db, subdomain));
    for (const change of state.routes) routes.apply(change);
    for (const change of state.certificates) certificates.apply(change);
    proxy = startProxy({
      ...settings,
      routes,
      traffic,
      tls: {
        port: settings.tlsPort,
        secureContextFor: (serverName) => certificates.secureContextFor(serverName),
        defaultPair: () => certificates.defaultPair(),
        servesHttps: (host) => certificates.servesHttps(host),
        challengeAnswer: (token) => challenges.get(token),
      },
    });
    return proxy.port;
  },
  route(change) {
    routes.apply(change);
    if (change.kind === "vacate") traffic.forget(change.subdomain);
  },
  certificate: (change) => certificates.apply(change),
  challenge(token, keyAuthorization) {
    if (keyAuthorization === null) challenges.delete(token);
    else challenges.set(token, keyAuthorization);
  },
  startTls: () => proxy!.startTls(),
  traffic: (subdomain) => traffic.report(subdomain),
  inFlight: (host, port) => proxy!.inFlight(host, port),
  stop: (force) => proxy!.stop(force),
});
