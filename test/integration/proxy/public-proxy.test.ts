// The public proxy in front of a real app on the real engine: routing by Host, what it answers
// for no app, a stopped app and an app that does not answer, the headers the app is given, and
// the rate limits per client address and per app. Other client addresses are other loopback
// addresses (curl --interface 127.0.0.x), all on this machine.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

const HEADERS_APP = appZip({
  "package.json": JSON.stringify({ name: "echo", main: "server.js" }),
  "server.js": [
    'const http = require("http");',
    "const server = http.createServer((req, res) => {",
    '  if (req.url === "/stop-listening") { res.end("bye", () => { server.close(); server.closeAllConnections(); }); setInterval(() => {}, 1000); return; }',
    '  if (req.url === "/slow") { setTimeout(() => res.end("slow done"), 1500); return; }',
    '  res.setHeader("content-type", "application/json");',
    '  res.setHeader("x-app-hop", "kept");',
    '  res.setHeader("connection", "x-app-hop-named, keep-alive");',
    '  res.setHeader("x-app-hop-named", "dropped");',
    "  res.end(JSON.stringify({ url: req.url, headers: req.headers }));",
    "});",
    'server.listen(process.env.PORT, () => console.log("echo up"));',
  ].join("\n"),
});

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

/** A request from another loopback address than 127.0.0.1: a different client to the proxy. */
async function curlFrom(localAddress: string, port: number, host: string, path = "/", headers: Record<string, string> = {}): Promise<Answer> {
  const args = ["curl", "-s", "-i", "--interface", localAddress, "-H", `Host: ${host}`];
  for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`);
  args.push(`http://127.0.0.1:${port}${path}`);
  const child = Bun.spawn(args, { stdout: "pipe", stderr: "pipe" });
  const output = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`curl failed: ${await new Response(child.stderr).text()}`);
  const [head, ...rest] = output.split("\r\n\r\n");
  const [statusLine, ...lines] = head!.split("\r\n");
  const parsed = new Headers(lines.map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trim()] as [string, string]));
  return { status: Number(statusLine!.split(" ")[1]), headers: parsed, body: rest.join("\r\n\r\n") };
}

async function deployEcho(server: TestServer, key: string, name: string) {
  const deployed = await deployZip(server, key, { name, runtime: "node", memoryMB: "96", autoRestart: "false" }, HEADERS_APP);
  expect(deployed.status).toBe(202);
  const app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
  expect(app.status).toBe("running");
  return app as { id: string; subdomain: string };
}

describe("routing, errors and forwarded headers", () => {
  let server: TestServer;
  let key: string;
  let app: { id: string; subdomain: string };

  beforeAll(async () => {
    server = await TestServer.start({ PLATFORM_TRUSTED_PROXIES: "127.0.0.2/32" });
    key = (await server.createKey("proxy")).key;
    app = await deployEcho(server, key, "echo");
  }, 120_000);
  afterAll(async () => {
    await deleteAllApps(server, key);
    await server.stop();
  }, 60_000);

  test("the Host names the app whatever its case, port or trailing dot", async () => {
    for (const host of [`${app.subdomain}.localhost`, `${app.subdomain.toUpperCase()}.LocalHost`, `${app.subdomain}.localhost:8080`, `${app.subdomain}.localhost.`]) {
      const response = await fetch(`http://127.0.0.1:${server.proxyPort}/where?x=1`, { headers: { host } });
      expect({ host, status: response.status }).toEqual({ host, status: 200 });
      expect((await response.json()).url).toBe("/where?x=1");
    }
  });

  test("an unknown host gets 404, as HTML or as JSON when asked", async () => {
    const page = await viaProxy(server, "nothing-here");
    expect(page.status).toBe(404);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain("No app is published at this address.");
    const json = await viaProxy(server, "nothing-here", "/", { headers: { accept: "application/json" } });
    expect(await json.json()).toEqual({ success: false, error: "No app is published at this address.", code: "APP_NOT_FOUND" });
  });

  test("the app gets the client in X-Forwarded-* and a request id; client-sent ones from an untrusted peer are replaced", async () => {
    const answer = await curlFrom("127.0.0.3", server.proxyPort, `${app.subdomain}.localhost`, "/", {
      "X-Forwarded-For": "6.6.6.6",
      "X-Real-IP": "6.6.6.6",
      Forwarded: "for=6.6.6.6",
      "X-Request-Id": "req-42",
    });
    expect(answer.status).toBe(200);
    const seen = JSON.parse(answer.body).headers;
    expect(seen).toMatchObject({
      "x-forwarded-for": "127.0.0.3",
      "x-real-ip": "127.0.0.3",
      "x-forwarded-host": `${app.subdomain}.localhost`,
      "x-forwarded-proto": "http",
      "x-forwarded-port": String(server.proxyPort),
      "x-request-id": "req-42",
    });
    expect(seen.forwarded).toBeUndefined();
    expect(answer.headers.get("x-request-id")).toBe("req-42");
    // Hop-by-hop headers of the answer go, with those its Connection names.
    expect(answer.headers.get("x-app-hop")).toBe("kept");
    expect(answer.headers.get("x-app-hop-named")).toBeNull();
  });

  test("a trusted proxy's X-Forwarded-For is kept and extended", async () => {
    const answer = await curlFrom("127.0.0.2", server.proxyPort, `${app.subdomain}.localhost`, "/", { "X-Forwarded-For": "203.0.113.9" });
    const seen = JSON.parse(answer.body).headers;
    expect(seen["x-forwarded-for"]).toBe("203.0.113.9, 127.0.0.2");
    expect(seen["x-real-ip"]).toBe("203.0.113.9");
  });

  test("an app whose container does not answer gets 502; a stopped app 503 with Retry-After", async () => {
    const other = await deployEcho(server, key, "quits");
    expect((await viaProxy(server, other.subdomain, "/stop-listening")).status).toBe(200);
    const notAnswering = await viaProxy(server, other.subdomain, "/", { headers: { accept: "application/json" } });
    expect(notAnswering.status).toBe(502);
    expect((await notAnswering.json()).code).toBe("APP_NOT_ANSWERING");

    expect((await server.request("POST", `/api/apps/${other.id}/stop`, { key })).status).toBe(202);
    await waitForStatus(server, key, other.id, ["stopped"]);
    const stopped = await viaProxy(server, other.subdomain);
    expect(stopped.status).toBe(503);
    expect(Number(stopped.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await stopped.text()).toContain("not running");
  }, 120_000);
});

describe("WebSockets", () => {
  test("a WebSocket to a deployed app echoes through the proxy, and the app's close code reaches the client", async () => {
    const server = await TestServer.start();
    const key = (await server.createKey("ws")).key;
    const deployed = await deployZip(
      server,
      key,
      { name: "sockets", runtime: "bun", memoryMB: "128" },
      appZip({
        "package.json": JSON.stringify({ name: "sockets", scripts: { start: "bun index.ts" } }),
        "index.ts":
          "Bun.serve({ port: Number(process.env.PORT), fetch(req, server) { return server.upgrade(req) ? undefined : new Response('http'); },\n" +
          "  websocket: { message(ws, message) { if (message === 'close') ws.close(4001, 'asked to'); else ws.send(message); } } });\n",
      }),
    );
    expect(deployed.status).toBe(202);
    const app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
    expect(app.status).toBe("running");
    try {
      const socket = new WebSocket(`ws://127.0.0.1:${server.proxyPort}/`, { headers: { host: `${app.subdomain}.localhost` } } as never);
      const received: string[] = [];
      const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason })));
      await new Promise((resolve, reject) => {
        socket.addEventListener("open", resolve);
        socket.addEventListener("error", reject);
      });
      socket.addEventListener("message", (event) => received.push(String(event.data)));
      socket.send("hello");
      for (const deadline = Date.now() + 5000; received.length === 0 && Date.now() < deadline; ) await Bun.sleep(20);
      expect(received).toEqual(["hello"]);
      socket.send("close");
      expect(await closed).toEqual({ code: 4001, reason: "asked to" });
    } finally {
      await deleteAllApps(server, key);
      await server.stop();
    }
  }, 120_000);
});

describe("rate limits", () => {
  let server: TestServer;
  let key: string;
  let app: { id: string; subdomain: string };

  beforeAll(async () => {
    server = await TestServer.start({
      PLATFORM_PROXY_IP_BURST: "3",
      PLATFORM_PROXY_IP_RPS: "1",
      PLATFORM_PROXY_HOST_BURST: "8",
      PLATFORM_PROXY_HOST_RPS: "1",
    });
    key = (await server.createKey("limits")).key;
    app = await deployEcho(server, key, "limited");
  }, 120_000);
  afterAll(async () => {
    await deleteAllApps(server, key);
    await server.stop();
  }, 60_000);

  test("a client over its limit gets 429 with Retry-After and RateLimit fields, and is let in after waiting; another client is not affected", async () => {
    const host = `${app.subdomain}.localhost`;
    for (let i = 0; i < 3; i++) expect((await curlFrom("127.0.0.11", server.proxyPort, host)).status).toBe(200);
    const refused = await curlFrom("127.0.0.11", server.proxyPort, host, "/", { Accept: "application/json" });
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body).code).toBe("RATE_LIMITED");
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get("ratelimit-policy")).toBe('"client";q=3;w=3');
    expect(refused.headers.get("ratelimit")).toBe(`"client";r=0;t=${retryAfter}`);

    expect((await curlFrom("127.0.0.12", server.proxyPort, host)).status).toBe(200);

    await Bun.sleep(retryAfter * 1000);
    expect((await curlFrom("127.0.0.11", server.proxyPort, host)).status).toBe(200);
  });

  test("the app's own limit applies across clients", async () => {
    const host = `${app.subdomain}.localhost`;
    const statuses: number[] = [];
    for (let client = 20; client < 30; client++) statuses.push((await curlFrom(`127.0.0.${client}`, server.proxyPort, host)).status);
    expect(statuses).toContain(429);
    const refused = await curlFrom("127.0.0.40", server.proxyPort, host);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("ratelimit-policy")).toStartWith('"host";q=8;');
  });

  test("GET /api/apps/{appId}/traffic counts what went through, refusals included", async () => {
    const { status, body } = await server.request("GET", `/api/apps/${app.id}/traffic`, { key });
    expect(status).toBe(200);
    const { last5Minutes, lastHour } = body.traffic;
    expect(last5Minutes.byStatusClass["2xx"]).toBeGreaterThanOrEqual(5);
    expect(last5Minutes.rateLimited).toBeGreaterThanOrEqual(2);
    expect(last5Minutes.byStatusClass["4xx"]).toBe(last5Minutes.rateLimited);
    expect(last5Minutes.requests).toBe(last5Minutes.byStatusClass["2xx"] + last5Minutes.byStatusClass["4xx"]);
    expect(last5Minutes.upstreamLatencyMs.p99).toBeGreaterThanOrEqual(last5Minutes.upstreamLatencyMs.p50);
    expect(last5Minutes.bytesOut).toBeGreaterThan(0);
    expect(lastHour.requests).toBeGreaterThanOrEqual(last5Minutes.requests);
  });

  test("an app moved to another subdomain starts its traffic afresh, and leaves none of it behind for the next app there", async () => {
    const requestsLastHour = async () => (await server.request("GET", `/api/apps/${app.id}/traffic`, { key })).body.traffic.lastHour.requests;
    expect(await requestsLastHour()).toBeGreaterThan(0);
    const original = app.subdomain;
    const moved = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { subdomain: `${original}-moved` } });
    expect(moved.status).toBe(200);
    expect(await requestsLastHour()).toBe(0);
    // Back at its old subdomain, as another app given it would be: what was counted there is gone.
    const back = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { subdomain: original } });
    expect(back.status).toBe(200);
    expect(await requestsLastHour()).toBe(0);
  });

  test("a deleted app's traffic is not inherited by the next app given its subdomain", async () => {
    const host = `${app.subdomain}.localhost`;
    // Its route comes back in the background after the move above: until then the proxy answers 503 and counts nothing.
    let status = 503;
    for (const deadline = Date.now() + 10_000; status === 503 && Date.now() < deadline; await Bun.sleep(100)) status = (await curlFrom("127.0.0.50", server.proxyPort, host)).status;
    const trafficOf = async (appId: string) => (await server.request("GET", `/api/apps/${appId}/traffic`, { key })).body.traffic.lastHour.requests;
    expect(await trafficOf(app.id)).toBeGreaterThan(0);

    await deleteAllApps(server, key);
    const deployed = await deployZip(server, key, { name: "successor", subdomain: app.subdomain, runtime: "node", memoryMB: "96" }, HEADERS_APP);
    expect(deployed.status).toBe(202);
    expect(deployed.body.app.subdomain).toBe(app.subdomain);
    expect(await trafficOf(deployed.body.app.id)).toBe(0);
  }, 60_000);
});

describe("graceful stop", () => {
  test("on SIGTERM the proxy takes no new connection, and a request in flight still gets its answer", async () => {
    const server = await TestServer.start();
    const key = (await server.createKey("drain")).key;
    const app = await deployEcho(server, key, "draining");
    const inFlight = viaProxy(server, app.subdomain, "/slow");
    await Bun.sleep(300);
    const stopped = server.stop("SIGTERM");
    await Bun.sleep(300);
    const late = await viaProxy(server, app.subdomain).then(
      (response) => `answered ${response.status}`,
      () => "refused",
    );
    expect(late).toBe("refused");
    const answer = await inFlight;
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe("slow done");
    await stopped;
    await server.boot();
    await deleteAllApps(server, key);
    await server.stop();
  }, 120_000);
});
