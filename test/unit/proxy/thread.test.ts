// The public proxy on its own thread (src/proxy/thread.ts, src/proxy-worker.ts), started from this
// test's thread as src/main.ts starts it. What the main thread changes (routes, certificates, ACME
// challenges) is served there from the next request, the traffic counted there is read here, and
// a main thread that stalls does not stall the requests in flight, as it did when the proxy
// shared it. The app answers from a process of its own, so that nothing of it runs on this thread.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { openDatabase, type PlatformDb } from "../../../src/db";
import { apps, workspaces } from "../../../src/db/schema";
import { ProxyRoutes } from "../../../src/proxy/routes";
import { startProxy } from "../../../src/proxy/server";
import { ProxyThread, type ProxyThreadSettings } from "../../../src/proxy/thread";
import { TrafficRecorder } from "../../../src/proxy/traffic";
import { makeCertificate } from "../../helpers/certificates";
import { tempDir } from "../../helpers/temp";

const DOMAIN = "apps.test";
const UNLIMITED = { burst: 1_000_000, refillPerSecond: 1_000_000 };
const CONFIG: ProxyThreadSettings["config"] = {
  trustedProxies: [],
  proxyRateLimits: { perClient: UNLIMITED, perHost: UNLIMITED },
  proxyTimeouts: { headerSeconds: 10, idleSeconds: 60, upstreamSeconds: 60, connectSeconds: 5 },
  proxyMaxConnectionsPerClient: 1000,
};
/** How long the main thread stalls in the isolation test. */
const STALL_MS = 800;

let db: PlatformDb;
let databaseFile: string;
let app: Bun.Subprocess<"ignore", "pipe", "inherit">;
let appPort: number;
let thread: ProxyThread;
const routes = new ProxyRoutes();

beforeAll(async () => {
  databaseFile = join(tempDir(), "platform.sqlite");
  db = openDatabase(databaseFile);
  app = Bun.spawn(
    [process.execPath, "-e", 'const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => new Response(`hello from ${new URL(request.url).pathname}`) }); console.log(server.port);'],
    { stdin: "ignore", stdout: "pipe", stderr: "inherit" },
  );
  const { value } = await app.stdout.getReader().read();
  appPort = Number(new TextDecoder().decode(value).trim());
  thread = new ProxyThread(new Worker(new URL("../../../src/proxy-worker.ts", import.meta.url).href), { hostname: "127.0.0.1", port: 0, domain: DOMAIN, tlsPort: 0, databaseFile, config: CONFIG }, { routes: [], certificates: [] });
  routes.onChange = (change) => thread.route(change);
});

afterAll(async () => {
  await thread?.stop(true);
  app?.kill();
  await app?.exited;
  db?.$client.close();
});

const viaThread = (host: string, path = "/") => fetch(`http://127.0.0.1:${thread.port}${path}`, { headers: { host } });

test("a route set or removed on the main thread is served so from the very next request", async () => {
  routes.set("shop", { host: "127.0.0.1", port: appPort });
  const routed = await viaThread(`shop.${DOMAIN}`, "/first");
  expect(routed.status).toBe(200);
  expect(await routed.text()).toBe("hello from /first");

  // The app still exists, stopped: the proxy's thread finds it in the database and says so.
  db.insert(workspaces).values({ id: "ws_1", name: "main", createdAt: 0 }).run();
  db.insert(apps)
    .values({ id: "app_1", workspaceId: "ws_1", name: "shop", runtime: "bun", status: "stopped", memoryMB: 256, subdomain: "shop", startupCommand: "bun index.ts", autoRestart: true, autoDeploy: false, machineId: "local", createdAt: 0, updatedAt: 0 })
    .run();
  routes.delete("shop");
  const stopped = await viaThread(`shop.${DOMAIN}`);
  expect(stopped.status).toBe(503);
  expect(stopped.headers.get("retry-after")).toBe("30");
  expect((await viaThread(`nobody.${DOMAIN}`)).status).toBe(404);

  routes.set("shop", { host: "127.0.0.1", port: appPort });
  routes.setDomain("shop.example.com", "shop");
  expect(await (await viaThread("shop.example.com", "/own-domain")).text()).toBe("hello from /own-domain");
});

test("the traffic counted on the proxy's thread is read from the main thread", async () => {
  routes.set("counted", { host: "127.0.0.1", port: appPort });
  for (let i = 0; i < 5; i++) await (await viaThread(`counted.${DOMAIN}`)).text();
  const { last5Minutes, lastHour } = thread.report("counted");
  expect(last5Minutes.requests).toBe(5);
  expect(last5Minutes.byStatusClass["2xx"]).toBe(5);
  expect(lastHour.bytesOut).toBe(5 * "hello from /".length);
  expect(thread.report("never-asked").lastHour.requests).toBe(0);
});

test("ACME challenges and certificates given on the main thread are answered and served by the proxy's thread", async () => {
  routes.set("secure", { host: "127.0.0.1", port: appPort });
  expect(() => thread.startTls()).toThrow("the HTTPS listener needs a certificate");

  thread.challenge("token-1", "token-1.thumbprint");
  const challenge = await viaThread(`secure.${DOMAIN}`, "/.well-known/acme-challenge/token-1");
  expect(await challenge.text()).toBe("token-1.thumbprint");
  thread.challenge("token-1", null);
  expect(await (await viaThread(`secure.${DOMAIN}`, "/.well-known/acme-challenge/token-1")).text()).toBe("hello from /.well-known/acme-challenge/token-1");

  const certificate = await makeCertificate({ names: [`*.${DOMAIN}`] });
  thread.certificate({ kind: "own", pair: { chainPem: certificate.chainPem, keyPem: certificate.keyPem } });
  const tlsPort = thread.startTls();
  const secure = await fetch(`https://127.0.0.1:${tlsPort}/over-tls`, { headers: { host: `secure.${DOMAIN}` }, tls: { serverName: `secure.${DOMAIN}`, ca: certificate.chainPem } });
  expect(await secure.text()).toBe("hello from /over-tls");
});

/** curl through a proxy on 127.0.0.1:port while this thread sleeps STALL_MS: its status and seconds taken. */
async function requestDuringStall(port: number): Promise<{ status: string; seconds: number }> {
  const curl = Bun.spawn(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "--max-time", "10", "-H", `host: shop.${DOMAIN}`, `http://127.0.0.1:${port}/`], { stdout: "pipe" });
  Bun.sleepSync(STALL_MS);
  const [status = "", seconds = ""] = (await new Response(curl.stdout).text()).split(" ");
  return { status, seconds: Number(seconds) };
}

test("a main thread that stalls does not hold up proxied requests, as it holds up a proxy that shares it", async () => {
  routes.set("shop", { host: "127.0.0.1", port: appPort });
  const onItsThread = await requestDuringStall(thread.port);
  expect(onItsThread.status).toBe("200");
  expect(onItsThread.seconds).toBeLessThan(STALL_MS / 2000);

  const sharedRoutes = new ProxyRoutes();
  sharedRoutes.set("shop", { host: "127.0.0.1", port: appPort });
  const sharing = startProxy({ hostname: "127.0.0.1", port: 0, domain: DOMAIN, routes: sharedRoutes, traffic: new TrafficRecorder(), config: CONFIG });
  try {
    const onThisThread = await requestDuringStall(sharing.port);
    expect(onThisThread.status).toBe("200");
    expect(onThisThread.seconds).toBeGreaterThan(STALL_MS / 2000);
  } finally {
    await sharing.stop(true);
  }
});
