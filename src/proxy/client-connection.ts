// One client connection to the public proxy, and the exchanges on it: the request head is read and
// checked here (./http1.ts), routed, rate limited, and sent on to the app over a pooled upstream
// connection (./upstream-pool.ts) with the forwarded headers (./forwarding.ts). Bodies are relayed
// byte for byte both ways, with backpressure: while one side cannot take more, the other is paused.
// A WebSocket handshake the app accepts turns the two connections into a tunnel.
//
// Requests on one connection are served in order; bytes of a next request that arrive early wait
// until the current response is done. The timeouts are checked by the server's sweep (tick()).
import type { Socket } from "bun";
import type { CidrRange } from "../http/trusted-proxies";
import { BodyTracker, HeadError, indexOfHeadEnd, MAX_HEAD_BYTES, parseRequestHead, parseResponseHead, responseFraming, type RequestHead, type ResponseHead } from "./http1";
import { clientIdentityOf, clientResponseHead, headerValue, interimResponseHead, requestIdOf, upstreamRequestHead } from "./forwarding";
import { proxyErrorAnswer, type ProxyErrorCode } from "./pages";
import { refusalHeaders, type ProxyRateLimiter } from "./rate-limit";
import { subdomainOf, type ProxyRoutes, type Upstream } from "./routes";
import type { TrafficRecorder } from "./traffic";
import { UpstreamUnavailable, type UpstreamConnection, type UpstreamListener, type UpstreamPools } from "./upstream-pool";
import { SocketWriter } from "./socket-writer";

export interface ProxyTimeouts {
  /** A client must send a whole request head within this long. */
  headerMs: number;
  /** A keep-alive connection without a request in progress is closed after this long. */
  idleMs: number;
  /** The longest the proxy waits for a byte from the app (or the client's body) during an exchange. */
  upstreamMs: number;
}

export interface RelayContext {
  domain: string;
  routes: ProxyRoutes;
  limiter: ProxyRateLimiter;
  traffic: TrafficRecorder;
  pools: UpstreamPools;
  trustedProxies: readonly CidrRange[];
  timeouts: ProxyTimeouts;
  /** The port clients reach the proxy on (X-Forwarded-Port when the Host has none). */
  port: number;
  /** The proxy is stopping: connections close after their current exchange. */
  stopping: boolean;
}

/** How long a client is told to wait before asking a stopped app again. */
const NOT_RUNNING_RETRY_SECONDS = 30;
/** Bytes of early (pipelined) requests held while a response is in progress before reading pauses. */
const MAX_EARLY_BYTES = MAX_HEAD_BYTES;
/** Below this, a head and the first body bytes are joined into one write. */
const JOIN_BELOW_BYTES = 16 * 1024;

/** Socket data arrives as Buffers; a head's text is its bytes as latin1. */
const latin1 = (bytes: Uint8Array, end: number) => (bytes as Buffer).toString("latin1", 0, end);
/**
 * A head as written: its text when it is ASCII (Bun writes that without a buffer of ours), else its
 * latin1 bytes. What the proxy adds to a head is ASCII; the parser says whether the rest is.
 */
const headForSocket = (text: string, ascii: boolean): string | Uint8Array => (ascii ? text : Buffer.from(text, "latin1"));
const concat = (first: Uint8Array | null, second: Uint8Array): Uint8Array => (first?.byteLength ? Buffer.concat([first, second]) : second);

function isWebSocketUpgrade(head: RequestHead): boolean {
  if (head.method !== "GET" || !head.connection.includes("upgrade")) return false;
  return (headerValue(head, "upgrade") ?? "").toLowerCase().split(",").some((token) => token.trim() === "websocket");
}

export class ClientConnection {
  readonly writer: SocketWriter;
  state: "head" | "exchange" | "tunnel" | "closed" = "head";
  /** Bytes not handled yet: a head in progress, or early requests. */
  private buffered: Uint8Array | null = null;
  /** Since when the connection waits for a head (its first byte, or the end of the last exchange). */
  private waitingSince = performance.now();
  private exchange: Exchange | null = null;
  private paused = false;
  /** Close once what was written is sent; since when (a client that never reads is cut off). */
  private ending = false;
  private endingSince = 0;
  /** The client sent its FIN. */
  private peerEnded = false;
  private lastHost: string | null = null;
  private lastSubdomain: string | null = null;
  /** Requests answered on this connection: until the first, it gets only the header timeout to send one. */
  private answered = 0;

  constructor(
    readonly socket: Socket<ClientConnection>,
    readonly context: RelayContext,
    readonly peerAddress: string,
    private readonly onClosed: (connection: ClientConnection) => void,
  ) {
    this.writer = new SocketWriter(socket);
  }

  /** Nothing in progress: a stopping proxy may close it at once. */
  get idle(): boolean {
    return this.state === "head" && !this.buffered?.byteLength;
  }

  onData(chunk: Uint8Array) {
    if (this.state === "closed" || this.ending) return;
    if (this.state === "tunnel") {
      this.exchange!.toUpstream(chunk);
      return;
    }
    if (this.state === "exchange") {
      const rest = this.exchange!.requestBytes(chunk);
      if (rest?.byteLength) this.holdEarly(rest);
      return;
    }
    if (!this.buffered?.byteLength) this.waitingSince = performance.now();
    this.buffered = concat(this.buffered, chunk);
    this.readHeads();
  }

  private holdEarly(bytes: Uint8Array) {
    this.buffered = concat(this.buffered, bytes);
    if (this.buffered.byteLength > MAX_EARLY_BYTES) this.pause();
  }

  /** Starts the exchanges of the complete heads buffered, one at a time. */
  private readHeads() {
    while (this.state === "head" && !this.ending && this.buffered?.byteLength) {
      const data = this.buffered;
      const end = indexOfHeadEnd(data);
      if (end < 0 || end > MAX_HEAD_BYTES) {
        if (end > MAX_HEAD_BYTES || data.byteLength > MAX_HEAD_BYTES) this.refuse(431, "HEADERS_TOO_LARGE", `The request head is over ${MAX_HEAD_BYTES} bytes.`, null, {}, true);
        return;
      }
      let head: RequestHead;
      const text = latin1(data, end);
      try {
        head = parseRequestHead(text);
      } catch (error) {
        if (!(error instanceof HeadError)) throw error;
        this.refuse(error.status, "BAD_REQUEST", `Malformed request: ${error.message}.`, null, {}, true);
        return;
      }
      this.buffered = data.subarray(end + 4);
      this.startExchange(text, head);
    }
  }

  private startExchange(text: string, head: RequestHead) {
    const context = this.context;
    // A keep-alive client asks for the same host again and again.
    if (head.host !== this.lastHost) {
      this.lastHost = head.host;
      this.lastSubdomain = subdomainOf(head.host, context.domain);
    }
    const subdomain = this.lastSubdomain;
    const upstream = subdomain === null ? undefined : context.routes.get(subdomain);
    // A refusal with a body still to come closes the connection: its bytes are not read.
    const mustClose = head.framing.kind !== "none" || !head.keepAlive || head.method === "HEAD";
    if (!upstream) {
      if (subdomain !== null && context.routes.unrouted(subdomain)) {
        this.refuse(503, "APP_UNAVAILABLE", "The app published at this address is not running right now.", head, { "retry-after": String(NOT_RUNNING_RETRY_SECONDS) }, mustClose);
      } else {
        this.refuse(404, "APP_NOT_FOUND", "No app is published at this address.", head, {}, mustClose);
      }
      return;
    }
    const identity = clientIdentityOf(head, this.peerAddress, context.trustedProxies, context.port, false);
    // A WebSocket counts once against the limits, at its upgrade.
    const refusal = context.limiter.admit(subdomain!, identity.clientAddress, upstream.rateLimits);
    if (refusal) {
      context.traffic.record(subdomain!, { status: 429, bytesIn: 0, bytesOut: 0, upstreamMs: null });
      this.refuse(429, "RATE_LIMITED", `Too many requests: try again in ${refusal.retryAfterSeconds} s.`, head, refusalHeaders(refusal), mustClose);
      return;
    }
    const requestId = requestIdOf(head);
    const websocket = isWebSocketUpgrade(head);
    const upstreamHead = headForSocket(upstreamRequestHead(text, head, identity, requestId, websocket), head.ascii);
    this.state = "exchange";
    const exchange = new Exchange(this, head, subdomain!, upstream, requestId, upstreamHead, websocket);
    this.exchange = exchange;
    const early = this.buffered;
    this.buffered = null;
    const rest = early?.byteLength ? exchange.requestBytes(early) : null;
    if (rest?.byteLength) this.holdEarly(rest);
    exchange.start();
  }

  /** The proxy's own answer; the connection closes after it when `close`, else the next request is read. */
  refuse(status: number, code: ProxyErrorCode, message: string, head: RequestHead | null, headers: Record<string, string>, close: boolean) {
    const shut = close || this.context.stopping;
    this.answered++;
    this.write(proxyErrorAnswer(status, code, message, head && headerValue(head, "accept"), headers, shut));
    if (shut) this.end();
    else this.waitingSince = performance.now();
  }

  write(bytes: Uint8Array | string): boolean {
    if (this.state === "closed") return false;
    return this.writer.write(bytes);
  }

  /** Called by the exchange when its response is complete. */
  exchangeDone(close: boolean) {
    this.exchange = null;
    this.answered++;
    if (this.state === "closed") return;
    if (close || this.peerEnded || this.context.stopping) {
      this.end();
      return;
    }
    this.state = "head";
    this.waitingSince = performance.now();
    this.resume();
    this.readHeads();
  }

  /** The client sent its FIN: what it asked for is still answered, then the connection closes. */
  onEnd() {
    this.peerEnded = true;
    if (this.idle) this.end();
    else if (this.state === "tunnel") this.exchange?.clientEnded();
  }

  /** The app accepted a WebSocket: from now on bytes pass both ways untouched. */
  startTunnel(): Uint8Array | null {
    this.state = "tunnel";
    this.resume();
    const early = this.buffered;
    this.buffered = null;
    return early;
  }

  pause() {
    if (this.paused || this.state === "closed") return;
    this.paused = true;
    this.socket.pause();
  }

  resume() {
    if (!this.paused || this.state === "closed") return;
    this.paused = false;
    this.socket.resume();
  }

  onDrain() {
    if (!this.writer.flush()) return;
    if (this.ending) {
      this.socket.end();
      return;
    }
    this.exchange?.onClientDrain();
  }

  /** Closes once what was written is sent. */
  end() {
    if (this.state === "closed" || this.ending) return;
    this.ending = true;
    this.endingSince = performance.now();
    if (!this.writer.blocked) this.socket.end();
  }

  destroy() {
    if (this.state === "closed") return;
    this.socket.terminate();
    this.onClose();
  }

  onClose() {
    if (this.state === "closed") return;
    this.state = "closed";
    this.writer.clear();
    this.buffered = null;
    this.exchange?.onClientClose();
    this.exchange = null;
    this.onClosed(this);
  }

  /** The sweep: the header, idle and upstream timeouts. */
  tick(now: number) {
    if (this.state === "exchange" && !this.ending) {
      this.exchange!.tick(now);
      return;
    }
    if (this.ending) {
      if (now - this.endingSince >= this.context.timeouts.headerMs) this.destroy();
      return;
    }
    if (this.state !== "head") return;
    const waited = now - this.waitingSince;
    if (this.buffered?.byteLength) {
      if (waited >= this.context.timeouts.headerMs) this.refuse(408, "REQUEST_TIMEOUT", "The request head did not arrive in time.", null, {}, true);
    } else if (waited >= (this.answered ? this.context.timeouts.idleMs : this.context.timeouts.headerMs)) {
      this.end();
    }
  }
}

/** One request and its response, between the client connection and an upstream connection. */
class Exchange implements UpstreamListener {
  private upstream: UpstreamConnection | null = null;
  /** Request body bytes that came before the upstream connection. */
  private early: Uint8Array[] = [];
  private readonly requestBody: BodyTracker;
  private responseHead: ResponseHead | null = null;
  private responseBody: BodyTracker | null = null;
  /** A partial response head. */
  private headBytes: Uint8Array | null = null;
  private wroteToClient = false;
  private closeClient: boolean;
  private reuseUpstream = true;
  private receivedAny = false;
  private done = false;
  private sentAt = 0;
  private upstreamMs: number | null = null;
  private lastActivity = performance.now();
  private upstreamPaused = false;
  private retried = false;

  constructor(
    private readonly client: ClientConnection,
    private readonly request: RequestHead,
    private readonly subdomain: string,
    private readonly address: Upstream,
    private readonly requestId: string,
    private readonly upstreamHead: string | Uint8Array,
    private readonly websocket: boolean,
  ) {
    this.requestBody = new BodyTracker(request.framing);
    this.closeClient = !request.keepAlive;
  }

  private get requestDone(): boolean {
    return this.requestBody.done;
  }

  start() {
    if (this.done) return;
    const idle = this.client.context.pools.takeIdle(this.address);
    if (idle) this.attach(idle);
    else this.connect();
  }

  private connect() {
    this.client.context.pools.connect(this.address).then(
      (connection) => {
        if (this.done) connection.destroy();
        else this.attach(connection);
      },
      (error: unknown) => {
        if (this.done) return;
        const timedOut = error instanceof UpstreamUnavailable && error.message.includes("no connection within");
        this.failBeforeResponse(timedOut ? 504 : 502);
      },
    );
  }

  private attach(connection: UpstreamConnection) {
    this.upstream = connection;
    connection.listener = this;
    this.sentAt = performance.now();
    this.lastActivity = this.sentAt;
    const early = this.early;
    this.early = [];
    let open = connection.writer.write(this.upstreamHead);
    for (const bytes of early) open = connection.writer.write(bytes);
    // The client was paused while its body waited for this connection.
    if (open) this.client.resume();
    else this.client.pause();
  }

  /** Client bytes while the exchange runs: the request body's part is sent on; what follows it is returned. */
  requestBytes(chunk: Uint8Array): Uint8Array | null {
    if (this.requestDone) return chunk;
    let end: number;
    try {
      end = this.requestBody.feed(chunk);
    } catch (error) {
      this.badRequestBody((error as Error).message);
      return null;
    }
    const body = end < 0 ? chunk : chunk.subarray(0, end);
    this.lastActivity = performance.now();
    if (body.byteLength) this.toUpstream(body);
    return end < 0 ? null : chunk.subarray(end);
  }

  /** A chunked request body that breaks its framing: the app's connection is dropped, the client told so. */
  private badRequestBody(reason: string) {
    if (this.done) return;
    this.done = true;
    this.dropUpstream();
    this.record(400);
    if (this.wroteToClient) this.client.destroy();
    else {
      this.client.refuse(400, "BAD_REQUEST", `Malformed request body: ${reason}.`, this.request, { "x-request-id": this.requestId }, true);
      this.client.exchangeDone(true);
    }
  }

  private dropUpstream() {
    const upstream = this.upstream;
    this.upstream = null;
    if (upstream) {
      upstream.listener = null;
      upstream.destroy();
    }
  }

  toUpstream(bytes: Uint8Array) {
    if (!this.upstream) {
      this.early.push(bytes);
      if (this.early.length > 1) this.client.pause();
      return;
    }
    if (this.upstream.closed) return;
    if (!this.upstream.writer.write(bytes)) this.client.pause();
  }

  onUpstreamDrain() {
    this.client.resume();
  }

  onClientDrain() {
    if (this.upstreamPaused && this.upstream && !this.upstream.closed) {
      this.upstreamPaused = false;
      this.upstream.socket.resume();
    }
  }

  private toClient(bytes: Uint8Array | string) {
    this.wroteToClient = true;
    if (!this.client.write(bytes) && this.upstream && !this.upstreamPaused) {
      this.upstreamPaused = true;
      this.upstream.socket.pause();
    }
  }

  onUpstreamData(chunk: Uint8Array) {
    this.receivedAny = true;
    this.lastActivity = performance.now();
    if (this.client.state === "tunnel") {
      this.toClient(chunk);
      return;
    }
    if (this.done) return;
    let data = chunk;
    if (!this.responseHead) {
      data = concat(this.headBytes, chunk);
      this.headBytes = null;
      const rest = this.readResponseHead(data);
      if (!rest) return;
      data = rest;
    }
    if (!data.byteLength) return;
    let end: number;
    try {
      end = this.responseBody!.feed(data);
    } catch {
      this.brokenResponse();
      return;
    }
    if (end < 0) {
      this.toClient(data);
      return;
    }
    if (end > 0) this.toClient(data.subarray(0, end));
    // Bytes past the end of a response: the connection is out of step, not reused.
    if (end < data.byteLength) this.reuseUpstream = false;
    this.finish();
  }

  /** Reads the response head (skipping 1xx ones); the bytes after it, or null when it is not complete or failed. */
  private readResponseHead(data: Uint8Array): Uint8Array | null {
    for (;;) {
      const end = indexOfHeadEnd(data);
      if (end < 0 || end > MAX_HEAD_BYTES) {
        if (end > MAX_HEAD_BYTES || data.byteLength > MAX_HEAD_BYTES) this.failBeforeResponse(502);
        else this.headBytes = data;
        return null;
      }
      let head: ResponseHead;
      const text = latin1(data, end);
      try {
        head = parseResponseHead(text);
      } catch {
        this.failBeforeResponse(502);
        return null;
      }
      data = data.subarray(end + 4);
      if (head.status === 101) {
        if (!this.websocket) {
          this.failBeforeResponse(502);
          return null;
        }
        this.upstreamMs = performance.now() - this.sentAt;
        this.record(101);
        this.client.write(headForSocket(clientResponseHead(text, head, this.requestId, false), head.ascii));
        this.done = true;
        const early = this.client.startTunnel();
        if (early?.byteLength) this.toUpstream(early);
        if (data.byteLength) this.toClient(data);
        return null;
      }
      if (head.status < 200) {
        // 100 Continue, 103 Early Hints: passed on to an HTTP/1.1 client; the final head follows.
        if (this.request.minorVersion === 1) this.toClient(headForSocket(interimResponseHead(text, head), head.ascii));
        continue;
      }
      this.upstreamMs = performance.now() - this.sentAt;
      this.responseHead = head;
      const framing = responseFraming(this.request.method, head);
      this.responseBody = new BodyTracker(framing);
      if (framing.kind === "close" || head.minorVersion === 0 || head.connection.includes("close")) this.reuseUpstream = false;
      // An answer before the whole request body: where the next request would start is unknown.
      if (framing.kind === "close" || !this.requestDone || this.client.context.stopping) this.closeClient = true;
      const headText = clientResponseHead(text, head, this.requestId, this.closeClient);
      let bodyEnd: number;
      try {
        bodyEnd = this.responseBody.feed(data);
      } catch {
        this.brokenResponse();
        return null;
      }
      const body = bodyEnd < 0 ? data : data.subarray(0, bodyEnd);
      if (body.byteLength && body.byteLength < JOIN_BELOW_BYTES) {
        // One write, so one packet, for a small answer.
        const joined = Buffer.allocUnsafe(headText.length + body.byteLength);
        joined.write(headText, 0, "latin1");
        joined.set(body, headText.length);
        this.toClient(joined);
      } else {
        this.toClient(headForSocket(headText, head.ascii));
        if (body.byteLength) this.toClient(body);
      }
      if (bodyEnd >= 0) {
        if (bodyEnd < data.byteLength) this.reuseUpstream = false;
        this.finish();
      }
      return null;
    }
  }

  /** The app's body broke its framing after its head was accepted: both connections are closed. */
  private brokenResponse() {
    if (this.done) return;
    this.done = true;
    this.dropUpstream();
    this.record(this.responseHead?.status ?? 502);
    this.client.destroy();
  }

  private record(status: number) {
    this.client.context.traffic.record(this.subdomain, {
      status,
      bytesIn: this.requestBody.bytes,
      bytesOut: this.responseBody?.bytes ?? 0,
      upstreamMs: this.upstreamMs,
    });
  }

  /** The response is complete. */
  private finish() {
    if (this.done) return;
    this.done = true;
    this.record(this.responseHead!.status);
    const upstream = this.upstream;
    this.upstream = null;
    if (upstream) {
      if (this.upstreamPaused && !upstream.closed) upstream.socket.resume();
      // Only a connection that sent all it was given can carry the next request.
      if (this.reuseUpstream && this.requestDone && !upstream.closed && !upstream.writer.blocked) this.client.context.pools.release(upstream);
      else {
        upstream.listener = null;
        upstream.destroy();
      }
    }
    this.client.exchangeDone(this.closeClient);
  }

  /** No response came: the client gets the proxy's 502 or 504, unless part of a response was sent. */
  private failBeforeResponse(status: 502 | 504) {
    if (this.done) return;
    this.done = true;
    this.dropUpstream();
    this.record(status);
    if (this.wroteToClient) {
      this.client.destroy();
      return;
    }
    const close = this.closeClient || !this.requestDone;
    const headers = { "x-request-id": this.requestId };
    if (status === 504) this.client.refuse(504, "APP_TIMED_OUT", "The app published at this address did not answer in time.", this.request, headers, close);
    else this.client.refuse(502, "APP_NOT_ANSWERING", "The app published at this address did not answer.", this.request, headers, close);
    this.client.exchangeDone(close);
  }

  onUpstreamClose() {
    const upstream = this.upstream;
    this.upstream = null;
    if (this.client.state === "tunnel") {
      this.client.end();
      return;
    }
    if (this.done) return;
    if (!this.responseHead) {
      // A pooled connection the app had just closed: a request without a body is sent once more.
      if (upstream && upstream.uses > 0 && !this.receivedAny && this.request.framing.kind === "none" && !this.retried) {
        this.retried = true;
        this.connect();
        return;
      }
      this.failBeforeResponse(502);
      return;
    }
    if (this.responseBody!.framing.kind === "close") {
      this.reuseUpstream = false;
      this.finish();
      return;
    }
    // Closed mid-body: the client cannot be told otherwise than by closing its connection too.
    this.done = true;
    this.record(this.responseHead.status);
    this.client.destroy();
  }

  /** The tunnel's client will send no more: the app is told so, and may still answer. */
  clientEnded() {
    if (this.upstream && !this.upstream.closed) this.upstream.socket.end();
  }

  onClientClose() {
    const upstream = this.upstream;
    this.upstream = null;
    if (!upstream) {
      this.done = true;
      return;
    }
    upstream.listener = null;
    if (this.client.state === "tunnel") upstream.socket.end();
    else upstream.destroy();
    this.done = true;
  }

  tick(now: number) {
    if (this.done || now - this.lastActivity < this.client.context.timeouts.upstreamMs) return;
    if (!this.responseHead && !this.requestDone && !this.wroteToClient) {
      // The client stopped sending its body: its own doing, not the app's.
      this.done = true;
      this.dropUpstream();
      this.record(408);
      this.client.refuse(408, "REQUEST_TIMEOUT", "The request body stopped coming.", this.request, { "x-request-id": this.requestId }, true);
      this.client.exchangeDone(true);
    } else if (!this.responseHead) this.failBeforeResponse(504);
    else {
      this.done = true;
      this.record(this.responseHead.status);
      this.upstream?.destroy();
      this.client.destroy();
    }
  }
}
