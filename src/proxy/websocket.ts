// WebSockets through the public proxy: a client's upgrade to `<subdomain>.<domain>` becomes a
// WebSocket from the proxy to the app's container, and frames go both ways with their type (text
// or binary), close codes and reasons.
//
// The upstream is connected FIRST, and the client's upgrade is accepted only once the app accepted
// its own: an app that refuses (404, not a WebSocket endpoint) or is down gives the client an HTTP
// 502 instead of a socket that opens and closes at once, the subprotocol the app picked goes into
// the client's 101 (accepting first could only guess it), and nothing the client sends has to be
// held while the app is still connecting. The cost is one handshake to a local container before
// the 101, hence `upgradeToUpstream` is async.
//
// Backpressure, both ways, bounded: a reader that falls behind makes the proxy stop reading from
// the writer (`pause()`), so the writer sees TCP backpressure rather than the proxy buffering.
// - app -> client: `send()` on the client's socket queues; above HIGH_WATER queued bytes the
//   upstream socket is paused, and the `drain` handler resumes it once the queue is below LOW_WATER.
// - client -> app: Bun's WebSocket client has no drain event, so above HIGH_WATER of
//   `bufferedAmount` the client's socket is paused and a short timer resumes it below LOW_WATER.
// What was already read when a side is paused is still delivered; past MAX_BUFFERED queued bytes
// (4 MiB) the proxy gives up and closes both sides with 1011 rather than grow.
//
// Close codes pass through unchanged, with their reason. The codes that have no wire form:
// - 1005 (a Close frame without a code) is forwarded as a Close frame without a code, so the
//   other side sees 1005 as well.
// - 1006 (the connection ended without a Close frame): when the app's side dropped, the client
//   gets 1011 "Upstream connection lost"; when the client's side dropped, the app gets 1001
//   "Client connection lost" (an endpoint going away, not a server error).
// - Any other code an endpoint may not send is replaced by 1011 (keeping no reason).
// An error on either side (the upstream's `error` event, a throwing handler) closes the other
// with 1011. Pings and pongs are answered by Bun on each hop and are not forwarded.
//
// Known limits: headers of the app's 101 (Set-Cookie...) do not reach the client (Bun's client does
// not expose them); permessage-deflate is negotiated per hop (off towards the app, as Bun.serve's
// `websocket` option decides towards the client).
import type { Server, ServerWebSocket, WebSocketHandler, WebSocketOptions } from "bun";

// Bun's WebSocket client (headers, pause/resume, terminate): tsconfig's DOM lib types the global
// as the browser's.
type UpstreamSocket = import("bun").WebSocket;
const UpstreamSocket = WebSocket as unknown as new (url: string, options: WebSocketOptions) => UpstreamSocket;

/** Queued bytes above which the side that writes is paused. */
export const HIGH_WATER = 1024 * 1024;
/** Queued bytes below which it is resumed. */
export const LOW_WATER = 256 * 1024;
/** Queued bytes past which the proxy closes both sides with 1011 instead of buffering more. */
export const MAX_BUFFERED = 4 * 1024 * 1024;
/** How long the app has to accept the upgrade (below Bun.serve's default 10 s idle timeout). */
export const UPSTREAM_HANDSHAKE_TIMEOUT_MS = 8_000;
/** How often a paused client is checked for the app's queue having drained. */
const UPSTREAM_DRAIN_POLL_MS = 2;

/** Headers the proxy's own handshake with the app sets (or that do not belong on it). */
const HANDSHAKE_HEADERS = [
  "connection",
  "upgrade",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "content-length",
  "sec-websocket-key",
  "sec-websocket-version",
  "sec-websocket-extensions",
  "sec-websocket-protocol",
  "sec-websocket-accept",
];

/** One proxied connection: the socket to the app, and the client's once it is open. */
export interface ProxiedSocketData {
  readonly upstream: UpstreamSocket;
  /** The client's socket, from its `open` on. */
  client: ServerWebSocket<ProxiedSocketData> | null;
  /** What the app sent before the client's socket opened, delivered on open in order. */
  early: (string | Buffer)[];
  /** Set once either side closed: the other side is being closed, nothing more is forwarded. */
  done: boolean;
  /** Timer resuming the paused client once the app's queue drained. */
  drainPoll: ReturnType<typeof setInterval> | null;
}

/** Whether a request asks for a WebSocket (GET, `Upgrade: websocket`, `Connection: upgrade`). */
export function isWebSocketUpgrade(request: Request): boolean {
  if (request.method !== "GET") return false;
  const upgrade = request.headers.get("upgrade") ?? "";
  const connection = request.headers.get("connection") ?? "";
  return tokens(upgrade).includes("websocket") && tokens(connection).includes("upgrade");
}

/**
 * Call from Bun.serve's fetch when `isWebSocketUpgrade(request)`: connects to the app, and once the
 * app accepted, upgrades the client's request. Resolves to undefined when upgraded; else to the
 * answer to send: 400 for a malformed upgrade, 502 when the app refused or could not be reached,
 * 504 when it did not answer in time.
 */
export async function upgradeToUpstream(
  server: Server<ProxiedSocketData>,
  request: Request,
  upstream: { host: string; port: number },
  forwardedHeaders: Headers,
): Promise<Response | undefined> {
  const problem = handshakeProblem(request);
  if (problem) return problem;

  const headers = new Headers(forwardedHeaders);
  for (const name of HANDSHAKE_HEADERS) headers.delete(name);
  const protocols = (request.headers.get("sec-websocket-protocol") ?? "")
    .split(",")
    .map((protocol) => protocol.trim())
    .filter(Boolean);
  const url = new URL(request.url);
  const host = upstream.host.includes(":") && !upstream.host.startsWith("[") ? `[${upstream.host}]` : upstream.host;

  let socket: UpstreamSocket;
  try {
    socket = new UpstreamSocket(`ws://${host}:${upstream.port}${url.pathname}${url.search}`, {
      headers,
      protocols,
      perMessageDeflate: false,
    });
  } catch {
    return plain(502, "The app did not accept the WebSocket");
  }
  socket.binaryType = "nodebuffer";
  // Nothing is read from the app until the client's socket is open to take it.
  socket.pause();

  const data: ProxiedSocketData = { upstream: socket, client: null, early: [], done: false, drainPoll: null };
  // Set before the handshake ends: a message that came in the same read as the 101 is kept.
  socket.onmessage = (event: MessageEvent) => {
    const message = event.data as string | Buffer;
    if (data.done) return;
    if (data.client) toClient(data, data.client, message);
    else data.early.push(message);
  };
  const outcome = await new Promise<"open" | "refused" | "timeout" | "aborted">((resolve) => {
    const timer = setTimeout(() => resolve("timeout"), UPSTREAM_HANDSHAKE_TIMEOUT_MS);
    const onAbort = () => resolve("aborted");
    request.signal?.addEventListener("abort", onAbort, { once: true });
    const settle = (value: "open" | "refused") => {
      clearTimeout(timer);
      request.signal?.removeEventListener("abort", onAbort);
      resolve(value);
    };
    socket.onopen = () => settle("open");
    socket.onerror = () => settle("refused");
    socket.onclose = () => settle("refused");
  });
  if (outcome !== "open" || socket.readyState !== WebSocket.OPEN) {
    socket.onopen = socket.onerror = socket.onclose = socket.onmessage = null;
    socket.terminate();
    return outcome === "timeout"
      ? plain(504, "The app did not answer the WebSocket upgrade in time")
      : plain(502, "The app did not accept the WebSocket");
  }

  socket.onerror = () => closeClient(data, 1011, "Upstream error");
  socket.onclose = (event: CloseEvent) => {
    if (event.code === 1006) closeClient(data, 1011, "Upstream connection lost");
    else closeClient(data, event.code, event.reason);
  };

  // The client's `open` runs inside upgrade(): `data` is complete before it.
  let upgraded = false;
  try {
    upgraded = server.upgrade(request, {
      data,
      headers: socket.protocol ? { "Sec-WebSocket-Protocol": socket.protocol } : undefined,
    });
  } catch {
    upgraded = false;
  }
  if (!upgraded) {
    data.done = true;
    closeSocket(socket, 1001, "Client connection lost");
    return plain(400, "Bad WebSocket upgrade");
  }
  return undefined;
}

/** The `websocket` option of Bun.serve. */
export const proxiedWebSocketHandlers: WebSocketHandler<ProxiedSocketData> = {
  // Past this many queued bytes, send() drops and returns 0; toClient then closes both sides.
  backpressureLimit: MAX_BUFFERED,
  closeOnBackpressureLimit: false,
  open(ws) {
    const data = ws.data;
    data.client = ws;
    const early = data.early;
    data.early = [];
    for (const message of early) {
      if (data.done) return;
      toClient(data, ws, message);
    }
    if (!data.done && ws.getBufferedAmount() <= HIGH_WATER) data.upstream.resume();
  },
  message(ws, message) {
    const data = ws.data;
    const upstream = data.upstream;
    if (data.done || upstream.readyState !== WebSocket.OPEN) return;
    if (upstream.bufferedAmount > MAX_BUFFERED) return closeBoth(data, 1011, "Proxy buffer full");
    upstream.send(message);
    if (upstream.bufferedAmount > HIGH_WATER && !data.drainPoll) {
      ws.pause();
      data.drainPoll = setInterval(() => {
        if (data.done || upstream.readyState !== WebSocket.OPEN) return stopDrainPoll(data);
        if (upstream.bufferedAmount > LOW_WATER) return;
        stopDrainPoll(data);
        ws.resume();
      }, UPSTREAM_DRAIN_POLL_MS);
    }
  },
  drain(ws) {
    const data = ws.data;
    if (!data.done && data.upstream.isPaused && ws.getBufferedAmount() <= LOW_WATER) data.upstream.resume();
  },
  close(ws, code, reason) {
    const data = ws.data;
    stopDrainPoll(data);
    if (data.done) return;
    data.done = true;
    if (code === 1006) closeSocket(data.upstream, 1001, "Client connection lost");
    else closeSocket(data.upstream, code, reason);
  },
  error(_error, ws) {
    closeBoth(ws.data, 1011, "Proxy error");
  },
};

function toClient(data: ProxiedSocketData, ws: ServerWebSocket<ProxiedSocketData>, message: string | Buffer) {
  const status = ws.send(message);
  if (status === 0) return closeBoth(data, 1011, "Proxy buffer full");
  if (ws.getBufferedAmount() > HIGH_WATER && !data.upstream.isPaused) data.upstream.pause();
}

/** The app's side closed (or failed): the client's side follows, with the same code where it can. */
function closeClient(data: ProxiedSocketData, code: number, reason: string) {
  stopDrainPoll(data);
  if (data.done) return;
  data.done = true;
  const client = data.client;
  if (!client) return; // closed before the client's socket opened: nothing left to tell
  const [sendable, why] = wireClose(code, reason);
  client.close(sendable ?? 1005, why); // ServerWebSocket: 1005 sends a Close frame with no code (no argument means 1000)
}

function closeBoth(data: ProxiedSocketData, code: number, reason: string) {
  stopDrainPoll(data);
  if (data.done) return;
  data.done = true;
  data.client?.close(code, reason);
  closeSocket(data.upstream, code, reason);
}

/** Closes the app's socket with the code, or without one for 1005; never throws. */
function closeSocket(socket: UpstreamSocket, code: number, reason: string) {
  // A paused socket would not read the app's Close reply, and Bun would wait 30 s for it.
  if (socket.isPaused) socket.resume();
  if (socket.readyState === WebSocket.CLOSING || socket.readyState === WebSocket.CLOSED) return;
  const [sendable, why] = wireClose(code, reason);
  try {
    if (sendable === undefined) socket.close();
    else socket.close(sendable, why);
  } catch {
    try {
      socket.close(sendable ?? 1000);
    } catch {
      socket.terminate();
    }
  }
}

/** A close code as it can go on the wire: undefined for "no code" (1005, 0), 1011 for codes no endpoint may send. */
function wireClose(code: number, reason: string): [number | undefined, string] {
  if (code === 0 || code === 1005) return [undefined, ""];
  const sendable = (code >= 1000 && code <= 1014 && (code < 1004 || code > 1006)) || (code >= 3000 && code <= 4999);
  return sendable ? [code, reason] : [1011, ""];
}

function stopDrainPoll(data: ProxiedSocketData) {
  if (data.drainPoll) clearInterval(data.drainPoll);
  data.drainPoll = null;
}

/** A 400 for an upgrade Bun.serve could not accept, checked before the app is contacted. */
function handshakeProblem(request: Request): Response | undefined {
  if (!isWebSocketUpgrade(request)) return plain(400, "Not a WebSocket upgrade");
  const key = request.headers.get("sec-websocket-key") ?? "";
  if (!/^[A-Za-z0-9+/]{22}==$/.test(key.trim())) return plain(400, "Bad Sec-WebSocket-Key");
  if (request.headers.get("sec-websocket-version")?.trim() !== "13") {
    const response = plain(400, "Unsupported WebSocket version");
    response.headers.set("sec-websocket-version", "13");
    return response;
  }
  return undefined;
}

function tokens(header: string): string[] {
  return header.split(",").map((token) => token.trim().toLowerCase());
}

function plain(status: number, text: string) {
  return new Response(text, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}
