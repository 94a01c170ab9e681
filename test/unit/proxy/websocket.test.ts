// WebSockets through the public proxy's upgrade path, with real sockets on 127.0.0.1: an echo app
// as the upstream, a small Bun.serve wired with src/proxy/websocket.ts as the proxy, and Bun's
// WebSocket client as the browser.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Server, ServerWebSocket, WebSocketOptions } from "bun";
import { connect as connectTcp } from "node:net";
import {
  MAX_BUFFERED,
  isWebSocketUpgrade,
  proxiedWebSocketHandlers,
  upgradeToUpstream,
  type ProxiedSocketData,
} from "../../../src/proxy/websocket";

type Client = import("bun").WebSocket;
const Client = WebSocket as unknown as new (url: string, options?: WebSocketOptions | string | string[]) => Client;

const CHUNK = 64 * 1024;

interface AppSocket {
  id: number;
  /** Bytes of binary messages received. */
  received: number;
  /** Bytes of binary messages the flood handed to send(). */
  sent: number;
  flood: (() => void) | null;
}

// The app: echoes; `close:<code>:<reason>` closes with that code, `close:none` without a code,
// `terminate` drops the connection, `flood:<n>` sends n binary chunks as fast as its own
// backpressure lets it, `hold` stops reading.
const appSockets = new Map<number, ServerWebSocket<AppSocket>>();
const appClosed = new Map<number, { code: number; reason: string }>();
const appHandshakes: Headers[] = [];
let nextId = 1;
let app: Server<AppSocket>;
let notWebSocket: Server<undefined>;
let proxy: Server<ProxiedSocketData>;
const proxySockets: ServerWebSocket<ProxiedSocketData>[] = [];
let closedPort: number;

beforeAll(() => {
  app = Bun.serve<AppSocket>({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request, server) {
      appHandshakes.push(request.headers);
      const offered = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((protocol) => protocol.trim());
      const chosen = ["chat.v2", "chat.v1"].find((protocol) => offered.includes(protocol));
      const data: AppSocket = { id: nextId++, received: 0, sent: 0, flood: null };
      const upgraded = server.upgrade(request, { data, headers: chosen ? { "Sec-WebSocket-Protocol": chosen } : undefined });
      return upgraded ? undefined : new Response("not a websocket", { status: 400 });
    },
    websocket: {
      open(ws) {
        appSockets.set(ws.data.id, ws);
        ws.send(`hello ${ws.data.id}`);
      },
      message(ws, message) {
        if (typeof message !== "string") {
          ws.data.received += message.byteLength;
          if (message.byteLength < CHUNK) ws.send(message); // echoes, but not a flood back
          return;
        }
        const [command, ...rest] = message.split(":");
        if (command === "close" && rest[0] === "none") return ws.close(1005); // a Close frame with no code
        if (command === "close") return ws.close(Number(rest[0]), rest.slice(1).join(":"));
        if (command === "terminate") return ws.terminate();
        if (command === "hold") return ws.pause();
        if (command === "flood") {
          const total = Number(rest[0]) * CHUNK;
          const chunk = new Uint8Array(CHUNK).fill(7);
          ws.data.flood = () => {
            while (ws.data.sent < total) {
              const status = ws.send(chunk);
              if (status === 0) return; // dropped: retried on drain
              ws.data.sent += CHUNK;
              if (status === -1) return;
            }
            ws.data.flood = null;
          };
          return ws.data.flood();
        }
        ws.send(message);
      },
      drain(ws) {
        ws.data.flood?.();
      },
      close(ws, code, reason) {
        appClosed.set(ws.data.id, { code, reason });
      },
    },
  });
  notWebSocket = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("no such page", { status: 404 }) });
  const reserved = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  closedPort = reserved.port!;
  reserved.stop(true);

  proxy = Bun.serve<ProxiedSocketData>({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request, server) {
      const path = new URL(request.url).pathname;
      const port = path.startsWith("/refuse") ? notWebSocket.port! : path.startsWith("/dead") ? closedPort : app.port!;
      const headers = new Headers(request.headers);
      headers.set("x-forwarded-for", server.requestIP(request)?.address ?? "");
      if (isWebSocketUpgrade(request)) return upgradeToUpstream(server, request, { host: "127.0.0.1", port }, headers);
      return new Response("plain HTTP", { status: 200 });
    },
    websocket: {
      ...proxiedWebSocketHandlers,
      open(ws) {
        proxySockets.push(ws);
        return proxiedWebSocketHandlers.open?.(ws);
      },
    },
  });
});

afterAll(() => {
  proxy.stop(true);
  app.stop(true);
  notWebSocket.stop(true);
});

/** A client through the proxy, open, with the app's greeting read (which names the app's socket). */
async function connect(path = "/", protocols?: string[]) {
  const client = new Client(`ws://127.0.0.1:${proxy.port}${path}`, protocols ? { protocols } : undefined);
  client.binaryType = "nodebuffer";
  const messages: (string | Buffer)[] = [];
  const waiting: ((message: string | Buffer) => void)[] = [];
  client.onmessage = (event: MessageEvent) => {
    const waiter = waiting.shift();
    if (waiter) waiter(event.data);
    else messages.push(event.data);
  };
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    client.onclose = (event: CloseEvent) => resolve({ code: event.code, reason: event.reason });
  });
  await new Promise<void>((resolve, reject) => {
    client.onopen = () => resolve();
    client.onerror = () => reject(new Error("the client's socket failed"));
  });
  const next = () =>
    new Promise<string | Buffer>((resolve) => {
      const queued = messages.shift();
      if (queued !== undefined) resolve(queued);
      else waiting.push(resolve);
    });
  const greeting = await next();
  const appId = Number(String(greeting).replace("hello ", ""));
  return { client, next, closed, appId, proxySide: proxySockets.at(-1)! };
}

async function until(condition: () => boolean, what: string, timeoutMs = 3000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

/** Waits until a counter stops moving for `quietMs`. */
async function settled(read: () => number, quietMs = 200) {
  let last = read();
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    await Bun.sleep(20);
    const now = read();
    if (now !== last) {
      last = now;
      since = Date.now();
    }
  }
  return last;
}

/** The status line a raw HTTP/1.1 upgrade request to the proxy gets. */
function rawUpgrade(path: string, extraHeaders: Record<string, string> = {}): Promise<string> {
  const headers = {
    Host: "shop.example.com",
    Upgrade: "websocket",
    Connection: "Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
    ...extraHeaders,
  };
  const lines = Object.entries(headers).filter(([, value]) => value !== "").map(([name, value]) => `${name}: ${value}`);
  return new Promise((resolve, reject) => {
    const socket = connectTcp(proxy.port!, "127.0.0.1", () => socket.write(`GET ${path} HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n`));
    let answer = "";
    socket.on("data", (chunk) => {
      answer += chunk.toString();
      if (answer.includes("\r\n")) {
        socket.destroy();
        resolve(answer.split("\r\n")[0]!);
      }
    });
    socket.on("error", reject);
  });
}

test("text and binary frames go both ways and keep their type", async () => {
  const { client, next } = await connect("/echo?room=1");
  client.send("héllo");
  expect(await next()).toBe("héllo");
  client.send(new Uint8Array([0, 1, 2, 255]));
  const binary = await next();
  expect(Buffer.isBuffer(binary)).toBe(true);
  expect([...(binary as Buffer)]).toEqual([0, 1, 2, 255]);
  client.send("");
  expect(await next()).toBe("");
  client.close();
});

test("the app sees the path, the forwarded headers and a handshake of its own", async () => {
  const { client } = await connect("/echo?room=2");
  const handshake = appHandshakes.at(-1)!;
  expect(handshake.get("x-forwarded-for")).toBe("127.0.0.1");
  expect(handshake.get("sec-websocket-version")).toBe("13");
  expect(handshake.get("sec-websocket-extensions")).toBeNull(); // no compression towards the app
  client.close();
});

test("the subprotocol the app picks is the one the client gets", async () => {
  const { client } = await connect("/", ["chat.v1", "chat.v2"]);
  expect(client.protocol).toBe("chat.v2");
  expect(appHandshakes.at(-1)!.get("sec-websocket-protocol")).toBe("chat.v1, chat.v2");
  client.close();
  const { client: none } = await connect("/", []);
  expect(none.protocol).toBe("");
  none.close();
});

test("the client's close code and reason reach the app", async () => {
  const { client, appId, closed } = await connect();
  client.close(4000, "bye");
  await until(() => appClosed.has(appId), "the app to see the close");
  expect(appClosed.get(appId)).toEqual({ code: 4000, reason: "bye" });
  expect(await closed).toEqual({ code: 4000, reason: "bye" }); // the app echoes the Close frame
});

test("a client's Close frame without a code reaches the app without one", async () => {
  const { client, appId } = await connect();
  client.close();
  await until(() => appClosed.has(appId), "the app to see the close");
  expect(appClosed.get(appId)).toEqual({ code: 1005, reason: "" });
});

test("the app's close code and reason reach the client", async () => {
  const { client, closed } = await connect();
  client.send("close:4001:reason");
  expect(await closed).toEqual({ code: 4001, reason: "reason" });
});

test("a Close frame without a code stays without one; an app that vanishes gives the client 1011", async () => {
  const first = await connect();
  first.client.send("close:none");
  expect((await first.closed).code).toBe(1005);

  const second = await connect();
  second.client.send("terminate");
  expect(await second.closed).toEqual({ code: 1011, reason: "Upstream connection lost" });
});

test("a client that vanishes leaves the app with 1001", async () => {
  const { client, appId } = await connect();
  client.terminate();
  await until(() => appClosed.has(appId), "the app to see the close");
  expect(appClosed.get(appId)).toEqual({ code: 1001, reason: "Client connection lost" });
});

test("an app that refuses the upgrade, or is down, gives the client an HTTP 502 and no socket", async () => {
  expect(await rawUpgrade("/refuse")).toBe("HTTP/1.1 502 Bad Gateway");
  expect(await rawUpgrade("/dead")).toBe("HTTP/1.1 502 Bad Gateway");
  const client = new Client(`ws://127.0.0.1:${proxy.port}/refuse`);
  const outcome = await new Promise<string>((resolve) => {
    client.onopen = () => resolve("opened");
    client.onclose = (event: CloseEvent) => resolve(`closed ${event.code}`);
  });
  expect(outcome).toBe("closed 1006"); // the handshake failed: never open
});

test("a malformed upgrade is a 400 and the app is not contacted", async () => {
  const before = appHandshakes.length;
  expect(await rawUpgrade("/", { "Sec-WebSocket-Key": "" })).toBe("HTTP/1.1 400 Bad Request");
  expect(await rawUpgrade("/", { "Sec-WebSocket-Version": "8" })).toBe("HTTP/1.1 400 Bad Request");
  expect(appHandshakes.length).toBe(before);
});

test("a client that does not read stops the app, instead of the proxy buffering its flood", async () => {
  const chunks = 1024; // 64 MiB: more than the socket buffers of both hops hold
  const { client, appId, proxySide, next } = await connect();
  client.pause();
  client.send(`flood:${chunks}`);
  const app = appSockets.get(appId)!;
  const sent = await settled(() => app.data.sent);
  expect(sent).toBeLessThan(chunks * CHUNK); // the app is held back by TCP
  expect(proxySide.getBufferedAmount()).toBeLessThanOrEqual(MAX_BUFFERED);
  expect(proxySide.data.upstream.isPaused).toBe(true);

  client.resume();
  let received = 0;
  while (received < chunks * CHUNK) {
    const message = await next();
    expect(typeof message).not.toBe("string");
    received += (message as Buffer).byteLength;
  }
  expect(received).toBe(chunks * CHUNK); // nothing dropped
  client.close();
});

test("an app that does not read stops the client, instead of the proxy buffering its flood", async () => {
  const chunks = 1024;
  const { client, appId, proxySide } = await connect();
  const app = appSockets.get(appId)!;
  client.send("hold");
  const chunk = new Uint8Array(CHUNK).fill(9);
  for (let i = 0; i < chunks; i++) client.send(chunk);
  await settled(() => proxySide.data.upstream.bufferedAmount + app.data.received);
  expect(proxySide.data.upstream.bufferedAmount).toBeLessThanOrEqual(MAX_BUFFERED);
  expect(proxySide.isPaused).toBe(true);
  expect(client.bufferedAmount).toBeGreaterThan(0); // the rest waits in the client

  app.resume();
  await until(() => app.data.received === chunks * CHUNK, "the app to receive everything");
  client.close();
});
