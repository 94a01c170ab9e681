// WebSockets through the public proxy (src/proxy/server.ts): after the app's 101 the proxy is a
// byte tunnel, so frames, close codes and reasons pass untouched both ways, and backpressure is
// TCP's. A Bun.serve WebSocket app as the upstream; Bun's WebSocket client as the browser, and a
// client of raw frames on a TCP socket where a test must stop reading or send exact bytes.
import { afterEach, describe, expect, test } from "bun:test";
import type { ServerWebSocket } from "bun";
import net from "node:net";
import { RawConnection } from "../../helpers/raw-http";
import { ProxyHarness, hostOf, rssMegabytes, settled, until, type TestProxy } from "../../helpers/proxy-harness";

const harness = new ProxyHarness();
afterEach(() => harness.cleanup());

const HOST = hostOf("shop");
const CHUNK = 64 * 1024;

interface AppSocket {
  id: number;
  /** Bytes of binary messages received. */
  received: number;
  /** Bytes of binary messages send() took (sent or queued). */
  sent: number;
  /** send() said the app's own buffer is backed up (-1) or dropped a message (0). */
  backedUp: number;
  flood: (() => void) | null;
}

/**
 * The app: greets with `hello <id>` and echoes; `close:<code>:<reason>` closes with that code,
 * `terminate` drops the connection, `flood:<n>` sends n binary chunks of 64 KiB as fast as its
 * own backpressure lets it.
 */
function wsApp() {
  const sockets = new Map<number, ServerWebSocket<AppSocket>>();
  const closed = new Map<number, { code: number; reason: string }>();
  const handshakes: Headers[] = [];
  let nextId = 1;
  const app = harness.app(
    (request, server) => {
      handshakes.push(request.headers);
      const offered = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((protocol) => protocol.trim());
      const chosen = ["chat.v2", "chat.v1"].find((protocol) => offered.includes(protocol));
      const data: AppSocket = { id: nextId++, received: 0, sent: 0, backedUp: 0, flood: null };
      const upgraded = (server as unknown as import("bun").Server<AppSocket>).upgrade(request, { data, headers: chosen ? { "Sec-WebSocket-Protocol": chosen } : undefined });
      return upgraded ? undefined : new Response("not a websocket", { status: 400 });
    },
    {
      websocket: {
        // Frames pass untouched: no compression on the app's side either, so sizes are what was sent.
        perMessageDeflate: false,
        open(ws: ServerWebSocket<AppSocket>) {
          sockets.set(ws.data.id, ws);
          ws.send(`hello ${ws.data.id}`);
        },
        message(ws: ServerWebSocket<AppSocket>, message: string | Buffer) {
          if (typeof message !== "string") {
            ws.data.received += message.byteLength;
            if (message.byteLength < CHUNK) ws.send(message);
            return;
          }
          const [command, ...rest] = message.split(":");
          if (command === "close") return ws.close(Number(rest[0]), rest.slice(1).join(":"));
          if (command === "terminate") return ws.terminate();
          if (command === "flood") {
            const total = Number(rest[0]) * CHUNK;
            const chunk = new Uint8Array(CHUNK).fill(7);
            ws.data.flood = () => {
              while (ws.data.sent < total) {
                const status = ws.send(chunk);
                if (status === 0) {
                  ws.data.backedUp++;
                  return; // dropped: sent again on drain
                }
                ws.data.sent += CHUNK;
                if (status === -1) {
                  ws.data.backedUp++;
                  return;
                }
              }
              ws.data.flood = null;
            };
            return ws.data.flood();
          }
          ws.send(message);
        },
        drain(ws: ServerWebSocket<AppSocket>) {
          ws.data.flood?.();
        },
        close(ws: ServerWebSocket<AppSocket>, code: number, reason: string) {
          closed.set(ws.data.id, { code, reason });
        },
      },
    } as never,
  );
  return { ...app, sockets, closed, handshakes };
}

function setup() {
  const app = wsApp();
  const proxy = harness.proxy();
  proxy.route("shop", app.upstream);
  return { app, proxy };
}

/** Bun's WebSocket client through the proxy, open, with the app's greeting read (which names the app's socket). */
async function connect(proxy: TestProxy, path = "/", protocols?: string[]) {
  const client = new WebSocket(`ws://127.0.0.1:${proxy.port}${path}`, { headers: { host: HOST }, protocols } as never);
  client.binaryType = "nodebuffer" as BinaryType;
  harness.onCleanup(() => client.close());
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
  return { client, next, closed, appId };
}

const UPGRADE_HEADERS = {
  Upgrade: "websocket",
  Connection: "Upgrade",
  "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
  "Sec-WebSocket-Version": "13",
};

function upgradeRequest(path = "/", headers: Record<string, string> = UPGRADE_HEADERS): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${HOST}\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join("\r\n")}\r\n\r\n`;
}

/** A client frame (masked, as a client's must be). */
function clientFrame(opcode: number, payload: Uint8Array | string): Buffer {
  const data = typeof payload === "string" ? Buffer.from(payload) : Buffer.from(payload);
  const length = data.byteLength;
  const head = length < 126 ? Buffer.from([0x80 | opcode, 0x80 | length]) : length < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  if (length >= 126 && length < 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 0x80 | 126;
    head.writeUInt16BE(length, 2);
  } else if (length >= 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(length), 2);
  }
  const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  for (let index = 0; index < length; index++) data[index]! ^= mask[index & 3]!;
  return Buffer.concat([head, mask, data]);
}

/**
 * A WebSocket client of raw frames on a TCP socket: the handshake by hand, then server frames
 * parsed as they come (text kept, binary only counted), reading paused and resumed at will.
 */
class RawWebSocket {
  head = "";
  texts: string[] = [];
  binaryBytes = 0;
  closeFrame: Buffer | null = null;
  closed = false;
  /** The first MiB after the head, as it came. */
  bytes: Buffer = Buffer.alloc(0);
  private pending: Buffer = Buffer.alloc(0);
  private headDone = false;

  private constructor(readonly socket: net.Socket) {
    socket.on("data", (piece: Buffer) => this.onData(piece));
    socket.on("error", () => {});
    socket.on("close", () => (this.closed = true));
  }

  /** Connects and sends `request` (the handshake, and whatever follows it in the same write). */
  static async open(proxy: TestProxy, request: string | Buffer): Promise<RawWebSocket> {
    const socket = net.connect({ host: "127.0.0.1", port: proxy.port });
    harness.onCleanup(() => socket.destroy());
    await new Promise((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    const client = new RawWebSocket(socket);
    socket.write(request);
    await until(() => client.headDone || client.closed, "the handshake's answer");
    return client;
  }

  get status(): number {
    return Number(this.head.split(" ")[1]);
  }

  send(opcode: number, payload: Uint8Array | string): boolean {
    return this.socket.write(clientFrame(opcode, payload));
  }

  private onData(piece: Buffer) {
    this.pending = this.pending.length ? Buffer.concat([this.pending, piece]) : piece;
    if (!this.headDone) {
      const end = this.pending.indexOf("\r\n\r\n");
      if (end < 0) return;
      this.head = this.pending.toString("latin1", 0, end);
      this.pending = this.pending.subarray(end + 4);
      this.headDone = true;
    }
    if (this.bytes.length < 1024 * 1024) this.bytes = Buffer.concat([this.bytes, this.bytes.length ? piece : this.pending]);
    for (;;) {
      if (this.pending.length < 2) return;
      let length = this.pending[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.pending.length < 4) return;
        length = this.pending.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.pending.length < 10) return;
        length = Number(this.pending.readBigUInt64BE(2));
        offset = 10;
      }
      if (this.pending.length < offset + length) return;
      const opcode = this.pending[0]! & 0x0f;
      const payload = this.pending.subarray(offset, offset + length);
      if (opcode === 1) this.texts.push(payload.toString());
      else if (opcode === 2) this.binaryBytes += length;
      else if (opcode === 8) this.closeFrame = Buffer.from(payload);
      this.pending = this.pending.subarray(offset + length);
    }
  }
}

describe("the tunnel", () => {
  test("text and binary frames go both ways and keep their type, small and large", async () => {
    const { proxy } = setup();
    const { client, next } = await connect(proxy, "/echo?room=1");
    client.send("héllo");
    expect(await next()).toBe("héllo");
    client.send(new Uint8Array([0, 1, 2, 255]));
    const binary = await next();
    expect(Buffer.isBuffer(binary)).toBe(true);
    expect([...(binary as Buffer)]).toEqual([0, 1, 2, 255]);
    client.send("");
    expect(await next()).toBe("");
    const large = "x".repeat(CHUNK - 1);
    client.send(large);
    expect(await next()).toBe(large);
  });

  test("the app sees the path, the forwarded headers and the client's handshake", async () => {
    const { app, proxy } = setup();
    await connect(proxy, "/echo?room=2");
    const handshake = app.handshakes.at(-1)!;
    expect(handshake.get("host")).toBe(HOST);
    expect(handshake.get("x-forwarded-for")).toBe("127.0.0.1");
    expect(handshake.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(handshake.get("sec-websocket-version")).toBe("13");
    expect(handshake.get("sec-websocket-key")).toBeTruthy();
    expect(handshake.get("upgrade")).toBe("websocket");
  });

  test("the subprotocol the app picks is the one the client gets", async () => {
    const { app, proxy } = setup();
    const { client } = await connect(proxy, "/", ["chat.v1", "chat.v2"]);
    expect(client.protocol).toBe("chat.v2");
    expect(app.handshakes.at(-1)!.get("sec-websocket-protocol")).toBe("chat.v1, chat.v2");
    const { client: none } = await connect(proxy, "/", []);
    expect(none.protocol).toBe("");
  });

  test("the answer to the handshake is the app's, with the proxy's request id", async () => {
    const { proxy } = setup();
    const client = await RawWebSocket.open(proxy, upgradeRequest("/", { ...UPGRADE_HEADERS, "X-Request-Id": "ws-1" }));
    expect(client.head.split("\r\n")[0]).toBe("HTTP/1.1 101 Switching Protocols");
    const fields = client.head.toLowerCase();
    expect(fields).toContain("\r\nupgrade: websocket");
    expect(fields).toContain("\r\nconnection: upgrade");
    expect(fields).toContain("\r\nsec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo=");
    expect(fields).toContain("\r\nx-request-id: ws-1");
    await until(() => client.texts.length === 1, "the greeting");
    expect(client.texts[0]).toMatch(/^hello \d+$/);
  });

  test("frames a client sends right behind its handshake reach the app", async () => {
    const { proxy } = setup();
    const client = await RawWebSocket.open(proxy, Buffer.concat([Buffer.from(upgradeRequest()), clientFrame(1, "early bird")]));
    expect(client.status).toBe(101);
    await until(() => client.texts.length === 2, "the greeting and the echo");
    expect(client.texts[1]).toBe("early bird");
  });
});

test("frames pass byte for byte both ways: fragments, pings, Close frames with and without a code", async () => {
  const WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  // The server's frames (unmasked): a text, a ping, a fragmented text, a Close frame without a code.
  const fromApp = Buffer.from([0x81, 0x02, 0x68, 0x69, 0x89, 0x00, 0x01, 0x01, 0x61, 0x80, 0x01, 0x62, 0x88, 0x00]);
  const upgraded = harness.rawApp((head, connection) => {
    const key = /sec-websocket-key: *(\S+)/i.exec(head)![1]!;
    const accept = new Bun.CryptoHasher("sha1").update(`${key}${WEBSOCKET_GUID}`).digest("base64");
    connection.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    connection.write(fromApp);
  });
  const proxy = harness.proxy();
  proxy.route("shop", upgraded.upstream);
  const client = await RawWebSocket.open(proxy, upgradeRequest());
  expect(client.status).toBe(101);
  const closeWithCode = Buffer.concat([Buffer.from([0x0f, 0xa2]), Buffer.from("going away, with a reason")]);
  const fromClient = Buffer.concat([clientFrame(1, "héllo"), clientFrame(9, ""), clientFrame(2, new Uint8Array(300).fill(3)), clientFrame(8, closeWithCode)]);
  client.socket.write(fromClient);
  await until(() => client.bytes.length >= fromApp.length, "the app's frames");
  expect(client.bytes.equals(fromApp)).toBe(true);
  const appSide = upgraded.connections[0]!;
  await until(() => appSide.unread().length >= fromClient.length, "the client's frames");
  expect(Buffer.from(appSide.unread(), "latin1").equals(fromClient)).toBe(true);
});

describe("closing", () => {
  test("the client's close code and reason reach the app, and the app's echo comes back", async () => {
    const { app, proxy } = setup();
    const { client, appId, closed } = await connect(proxy);
    client.close(4000, "bye");
    await until(() => app.closed.has(appId), "the app to see the close");
    expect(app.closed.get(appId)).toEqual({ code: 4000, reason: "bye" });
    expect(await closed).toEqual({ code: 4000, reason: "bye" });
  });

  test("a client's Close frame without a code reaches the app without one", async () => {
    const { app, proxy } = setup();
    const { client, appId } = await connect(proxy);
    client.close();
    await until(() => app.closed.has(appId), "the app to see the close");
    expect(app.closed.get(appId)!.code).toBe(1005);
  });

  test("the app's close code and reason reach the client", async () => {
    const { proxy } = setup();
    const { client, closed } = await connect(proxy);
    client.send("close:4001:reason: with colons");
    expect(await closed).toEqual({ code: 4001, reason: "reason: with colons" });
  });

  test("an app that vanishes closes the client's connection: 1006, no Close frame was sent", async () => {
    const { proxy } = setup();
    const { client, closed } = await connect(proxy);
    client.send("terminate");
    expect((await closed).code).toBe(1006);
  });

  test("a client that vanishes closes the app's connection: 1006", async () => {
    const { app, proxy } = setup();
    const client = await RawWebSocket.open(proxy, upgradeRequest());
    await until(() => client.texts.length === 1, "the greeting");
    const appId = Number(client.texts[0]!.replace("hello ", ""));
    client.socket.destroy();
    await until(() => app.closed.has(appId), "the app to see the close");
    expect(app.closed.get(appId)!.code).toBe(1006);
  });
});

describe("handshakes that fail", () => {
  test("an app that refuses the upgrade: its own answer reaches the client, and the client never opens", async () => {
    const { proxy } = setup();
    const refusing = harness.app(() => new Response("no websockets here", { status: 400 }));
    proxy.route("refuse", refusing.upstream);
    const raw = await RawConnection.open(proxy.port);
    harness.onCleanup(() => raw.close());
    await raw.write(upgradeRequest().replace(HOST, hostOf("refuse")));
    const answer = await raw.readResponse();
    expect(answer.status).toBe(400);
    expect(answer.text()).toBe("no websockets here");
    expect(answer.headers.has("upgrade")).toBe(false);

    const client = new WebSocket(`ws://127.0.0.1:${proxy.port}/`, { headers: { host: hostOf("refuse") } } as never);
    const outcome = await new Promise<string>((resolve) => {
      client.onopen = () => resolve("opened");
      client.onclose = (event: CloseEvent) => resolve(`closed ${event.code}`);
    });
    expect(outcome).toBe("closed 1006");
  });

  test("an app that is down: 502", async () => {
    const proxy = harness.proxy();
    proxy.route("shop", { host: "127.0.0.1", port: harness.closedPort() });
    const client = await RawWebSocket.open(proxy, upgradeRequest());
    expect(client.status).toBe(502);
  });

  test("a 101 to a request that asked for no upgrade: 502, and nothing is tunnelled", async () => {
    const app = harness.rawApp((_head, connection) => connection.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nsecret"));
    const proxy = harness.proxy();
    proxy.route("shop", app.upstream);
    const raw = await RawConnection.open(proxy.port);
    harness.onCleanup(() => raw.close());
    await raw.write(`GET / HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`);
    expect((await raw.readResponse()).status).toBe(502);
    await Bun.sleep(50);
    expect(raw.unread()).not.toContain("secret");
  });
});

describe("backpressure", () => {
  test("a client that does not read backs the app's sends up, instead of the proxy buffering its flood", async () => {
    const { app, proxy } = setup();
    const chunks = 2048; // 128 MiB: far more than the socket buffers of both hops hold
    const client = await RawWebSocket.open(proxy, upgradeRequest());
    await until(() => client.texts.length === 1, "the greeting");
    const appSocket = app.sockets.get(Number(client.texts[0]!.replace("hello ", "")))!;
    client.socket.pause();
    const before = rssMegabytes();
    client.send(1, `flood:${chunks}`);
    const sent = await settled(() => appSocket.data.sent, 300);
    expect(sent).toBeLessThan((chunks * CHUNK) / 2);
    expect(appSocket.data.backedUp).toBeGreaterThan(0);
    expect(appSocket.getBufferedAmount()).toBeGreaterThan(0);
    expect(rssMegabytes() - before).toBeLessThan(48);

    client.socket.resume();
    await until(() => client.binaryBytes === chunks * CHUNK, "every byte of the flood", 20_000);
  });

  test("an app that does not read backs the client's sends up, instead of the proxy buffering them", async () => {
    const upgraded = harness.rawApp((head, connection) => {
      const key = /sec-websocket-key: *(\S+)/i.exec(head)![1]!;
      const accept = new Bun.CryptoHasher("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
      connection.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      connection.socket.pause();
    });
    const proxy = harness.proxy();
    proxy.route("shop", upgraded.upstream);
    const client = await RawWebSocket.open(proxy, upgradeRequest());
    expect(client.status).toBe(101);
    const frame = clientFrame(2, new Uint8Array(CHUNK).fill(9));
    const most = 2048; // 128 MiB
    const before = rssMegabytes();
    // Writes as fast as the socket drains, until it has not drained for 300 ms.
    let written = 0;
    for (let i = 0; i < most; i++) {
      written += frame.byteLength;
      if (client.socket.write(frame)) continue;
      const drained = await Promise.race([new Promise((resolve) => client.socket.once("drain", () => resolve(true))), Bun.sleep(300).then(() => false)]);
      if (!drained) break;
    }
    expect(written).toBeLessThan((most * frame.byteLength) / 2);
    expect(rssMegabytes() - before).toBeLessThan(48);

    // Nothing was lost on the way.
    const appSide = upgraded.connections[0]!;
    appSide.socket.resume();
    await until(() => appSide.unread().length === written, "every byte the client wrote", 10_000);
  });
});

test("a WebSocket counts once against the rate limit, however many messages it carries", async () => {
  const app = wsApp();
  const proxy = harness.proxy();
  proxy.route("shop", { ...app.upstream, rateLimits: { perClient: { burst: 2, refillPerSecond: 0 }, perHost: { burst: 1000, refillPerSecond: 1000 } } });
  const { client, next } = await connect(proxy);
  for (let i = 0; i < 50; i++) client.send(`message ${i}`);
  for (let i = 0; i < 50; i++) expect(await next()).toBe(`message ${i}`);
  expect((await proxy.fetch("shop", "/")).status).toBe(400); // the app's own answer to a plain GET: the second token
  expect((await proxy.fetch("shop", "/")).status).toBe(429);
});

test("a graceful stop waits for an open WebSocket; stop(true) closes it", async () => {
  const { app, proxy } = setup();
  const { client, closed, appId, next } = await connect(proxy);
  let stopped = false;
  void proxy.stop().then(() => (stopped = true));
  client.send("still here");
  expect(await next()).toBe("still here");
  expect(stopped).toBe(false);
  await proxy.stop(true);
  expect((await closed).code).toBe(1006);
  await until(() => app.closed.has(appId), "the app to see the close");
});
