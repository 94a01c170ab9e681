// One client connection to the public proxy, and the exchanges on it: the request head is read and
// checked here (./http1.ts), routed, rate limited, and sent on to the app over a pooled upstream
// connection (./upstream-pool.ts) with the forwarded headers (./forwarding.ts). Bodies are relayed
// byte for byte both ways, with backpressure: while one side cannot take more, the other is paused.
// A WebSocket handshake the app accepts turns the two connections into a tunnel (./exchange.ts).
//
// Requests on one connection are served in order; bytes of a next request that arrive early wait
// until the current response is done. The timeouts are checked by the server's sweep (tick()).
import type { Socket } from "bun";
import type { CidrRange } from "../http/trusted-proxies";
import { now, wallNow } from "./clock";
import { Exchange } from "./exchange";
import { endOfSameHead, HeadError, headerValue, indexOfHeadEnd, MAX_HEAD_BYTES, parseRequestHead, type RequestHead } from "./http1";
import { clientIdentityOf, requestIdOf, type ClientIdentity } from "./forwarding";
import { challengeAnswer, httpsRedirectAnswer, proxyErrorAnswer, type ProxyErrorCode } from "./pages";
import { clientBucketOf, refusalHeaders, type ProxyRateLimiter } from "./rate-limit";
import { hostNameOf, type ProxyRoutes } from "./routes";
import type { TrafficRecorder } from "./traffic";
import type { UpstreamPools } from "./upstream-pool";
import { joined, type OutgoingHead, SocketWriter } from "./socket-writer";

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
  /** The ports clients reach the proxy on, plain and HTTPS (X-Forwarded-Port when the Host has none). */
  port: number;
  tlsPort: number;
  /** Certificates and ACME challenges; null when the proxy speaks plain HTTP only. */
  https: ProxyHttps | null;
  /** The proxy is stopping: connections close after their current exchange. */
  stopping: boolean;
}

/** What the proxy needs of the certificates (src/certificates). */
export interface ProxyHttps {
  /** A valid certificate serves `host` now: plain HTTP to it may be redirected. */
  servesHttps(host: string): boolean;
  /** The key authorization answered for an ACME HTTP-01 challenge token, while its order waits. */
  challengeAnswer(token: string): string | undefined;
}

/** Where an ACME CA asks for the answer to an HTTP-01 challenge (RFC 8555 8.3). */
export const CHALLENGE_PATH_PREFIX = "/.well-known/acme-challenge/";

/** How long a client is told to wait before asking a stopped app again. */
const NOT_RUNNING_RETRY_SECONDS = 30;
/** Past this many bytes after a request head in the same piece, the head is read from a copy (see readHeads). */
const KEPT_WITH_HEAD_BYTES = 16 * 1024;
/**
 * A head read from a piece of at most this many bytes is kept to be matched by the next (see
 * lastHead): an idle connection holds no more than that, whatever its last request was.
 */
const SAME_HEAD_KEPT_BYTES = 2 * 1024;
/** Bytes of early (pipelined) requests held while a response is in progress before reading pauses. */
const MAX_EARLY_BYTES = MAX_HEAD_BYTES;

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
  private waitingSince = now();
  private exchange: Exchange | null = null;
  private paused = false;
  /** Close once what was written is sent; since when (a client that never reads is cut off). */
  private ending = false;
  private endingSince = 0;
  /** The client sent its FIN. */
  private peerEnded = false;
  private lastHost: string | null = null;
  private lastSubdomain: string | null = null;
  /** Who the client is, for the last Host it asked for; kept only for a peer that is not a trusted proxy. */
  private lastIdentity: ClientIdentity | null = null;
  /** The client's rate-limit bucket key, for the identity and subdomain it was made for. */
  private bucket: { identity: ClientIdentity; subdomain: string; key: string } | null = null;
  /** Requests answered on this connection: until the first, it gets only the header timeout to send one. */
  private answered = 0;
  /** The last head read, without a body: the next one, when byte for byte the same, is not read again. */
  private lastHead: RequestHead | null = null;

  constructor(
    readonly socket: Socket<ClientConnection>,
    readonly context: RelayContext,
    readonly peerAddress: string,
    private readonly onClosed: (connection: ClientConnection) => void,
    /** It came through the HTTPS listener. */
    readonly secure: boolean,
  ) {
    this.writer = new SocketWriter(socket);
  }

  /**
   * Whether a request on it is in the hands of the upstream at this address (a release's drain
   * waits for it). An open WebSocket is not: it has no end to wait for.
   */
  relaysTo(host: string, port: number): boolean {
    return this.state === "exchange" && this.exchange !== null && this.exchange.goesTo(host, port);
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
    if (!this.buffered?.byteLength) this.waitingSince = now();
    this.buffered = joined(this.buffered, chunk);
    this.readHeads();
  }

  private holdEarly(bytes: Uint8Array) {
    this.buffered = joined(this.buffered, bytes);
    if (this.buffered.byteLength > MAX_EARLY_BYTES) this.pause();
  }

  /** Starts the exchanges of the complete heads buffered, one at a time. */
  private readHeads() {
    while (this.state === "head" && !this.ending && this.buffered?.byteLength) {
      const data = this.buffered;
      const last = this.lastHead;
      let end = last === null ? -1 : endOfSameHead(data, 0, last);
      let head: RequestHead;
      if (end >= 0) head = last!;
      else {
        end = indexOfHeadEnd(data);
        if (end < 0 || end > MAX_HEAD_BYTES) {
          if (end > MAX_HEAD_BYTES || data.byteLength > MAX_HEAD_BYTES) this.refuse(431, "HEADERS_TOO_LARGE", `The request head is over ${MAX_HEAD_BYTES} bytes.`, null, {}, true);
          return;
        }
        try {
          // The exchange keeps its head, and the head the bytes it was read from: a head that came with
          // much more (an upload's first piece) is read from a copy of its own bytes.
          head = parseRequestHead(data.byteLength - end > KEPT_WITH_HEAD_BYTES ? Uint8Array.prototype.slice.call(data, 0, end) : data, 0, end);
        } catch (error) {
          if (!(error instanceof HeadError)) throw error;
          this.refuse(error.status, "BAD_REQUEST", `Malformed request: ${error.message}.`, null, {}, true);
          return;
        }
        this.lastHead = head.framing.kind === "none" && head.source.buffer.byteLength <= SAME_HEAD_KEPT_BYTES ? head : null;
      }
      this.buffered = end + 4 < data.byteLength ? data.subarray(end + 4) : null;
      this.startExchange(head);
    }
  }

  private startExchange(head: RequestHead) {
    const context = this.context;
    const challenge = !this.secure && head.target.startsWith(CHALLENGE_PATH_PREFIX);
    if (challenge && context.https && this.answerChallenge(head)) return;
    // A keep-alive client asks for the same host again and again. An app's own domain is looked up
    // each time: it may be added or removed between two requests.
    if (head.host !== this.lastHost) {
      this.lastHost = head.host;
      this.lastSubdomain = context.routes.fixedRouteOf(head.host, context.domain);
    }
    const subdomain = this.lastSubdomain ?? context.routes.subdomainOfDomain(head.host);
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
    const identity = this.identityOf(head);
    // Plain HTTP (not TLS ended by a trusted proxy in front) to a host with a certificate, once the
    // HTTPS listener is open. A challenge this proxy does not know is the app's own (it may run its
    // own ACME client): never redirected; nor is `OPTIONS *`, which names no path.
    if (!identity.https && upstream.httpsRedirect && context.https && context.tlsPort && !challenge && head.target !== "*") {
      const host = hostNameOf(head.host);
      if (host !== null && context.https.servesHttps(host)) {
        this.answerRedirect(head, host, subdomain!);
        return;
      }
    }
    // A WebSocket counts once against the limits, at its upgrade.
    const refusal = context.limiter.admit(subdomain!, this.bucketKeyOf(identity, subdomain!), upstream.rateLimits, now());
    if (refusal) {
      context.traffic.record(subdomain!, { status: 429, bytesIn: 0, bytesOut: 0, upstreamMs: null }, wallNow());
      this.refuse(429, "RATE_LIMITED", `Too many requests: try again in ${refusal.retryAfterSeconds} s.`, head, refusalHeaders(refusal), mustClose);
      return;
    }
    this.state = "exchange";
    const exchange = new Exchange(this, head, subdomain!, upstream, requestIdOf(head), identity, isWebSocketUpgrade(head), identity.https && upstream.hsts === true);
    this.exchange = exchange;
    const early = this.buffered;
    this.buffered = null;
    const rest = early?.byteLength ? exchange.requestBytes(early) : null;
    if (rest?.byteLength) this.holdEarly(rest);
    exchange.start();
  }

  /**
   * The client's identity for this request. From a peer that is not a trusted proxy it depends on
   * the Host alone, which a keep-alive client sends the same again and again: it is kept for that Host.
   */
  private identityOf(head: RequestHead): ClientIdentity {
    const last = this.lastIdentity;
    if (last !== null && last.host === (head.host ?? "")) return last;
    const context = this.context;
    const identity = clientIdentityOf(head, this.peerAddress, context.trustedProxies, this.secure ? context.tlsPort : context.port, this.secure);
    this.lastIdentity = identity.trustedPeer ? null : identity;
    return identity;
  }

  /** The client's bucket key for the subdomain: kept while the identity (kept per Host) and the subdomain stay the same. */
  private bucketKeyOf(identity: ClientIdentity, subdomain: string): string {
    const bucket = this.bucket;
    if (bucket !== null && bucket.identity === identity && bucket.subdomain === subdomain) return bucket.key;
    const key = clientBucketOf(subdomain, identity.clientAddress);
    this.bucket = { identity, subdomain, key };
    return key;
  }

  /** An ACME challenge (whatever the host) answered from the certificates; false when none waits for this token. */
  private answerChallenge(head: RequestHead): boolean {
    const answer = this.context.https!.challengeAnswer(head.target.slice(CHALLENGE_PATH_PREFIX.length));
    if (answer === undefined) return false;
    this.reply((close) => challengeAnswer(answer, head.method === "HEAD", close), head);
    return true;
  }

  /** 308 to the HTTPS address of the same request (the parser made its target a path). */
  private answerRedirect(head: RequestHead, host: string, subdomain: string) {
    const port = this.context.tlsPort === 443 ? "" : `:${this.context.tlsPort}`;
    this.context.traffic.record(subdomain, { status: 308, bytesIn: 0, bytesOut: 0, upstreamMs: null }, wallNow());
    this.reply((close) => httpsRedirectAnswer(`https://${host}${port}${head.target}`, close), head);
  }

  /**
   * A whole answer of the proxy's own, written by `answer` knowing whether the connection closes
   * after it: when a request body would follow unread, the client asked to, or the proxy stops.
   */
  private reply(answer: (close: boolean) => string, head: RequestHead) {
    const shut = head.framing.kind !== "none" || !head.keepAlive || this.context.stopping;
    this.answered++;
    this.write(answer(shut));
    if (shut) this.end();
    else this.waitingSince = now();
  }

  /** The proxy's own answer; the connection closes after it when `close`, else the next request is read. */
  refuse(status: number, code: ProxyErrorCode, message: string, head: RequestHead | null, headers: Record<string, string>, close: boolean) {
    const shut = close || this.context.stopping;
    this.answered++;
    this.write(proxyErrorAnswer(status, code, message, head && headerValue(head, "accept"), headers, shut));
    if (shut) this.end();
    else this.waitingSince = now();
  }

  write(bytes: Uint8Array | string): boolean {
    if (this.state === "closed") return false;
    return this.writer.write(bytes);
  }

  /** Writes the head just built (with the body bytes appended to it, if any). */
  writeHead(head: OutgoingHead): boolean {
    if (this.state === "closed") return false;
    return this.writer.writeHead(head);
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
    this.waitingSince = now();
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
    this.endingSince = now();
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
  tick(at: number) {
    if (this.state === "exchange" && !this.ending) {
      this.exchange!.tick(at);
      return;
    }
    if (this.ending) {
      if (at - this.endingSince >= this.context.timeouts.headerMs) this.destroy();
      return;
    }
    if (this.state !== "head") return;
    const waited = at - this.waitingSince;
    if (this.buffered?.byteLength) {
      if (waited >= this.context.timeouts.headerMs) this.refuse(408, "REQUEST_TIMEOUT", "The request head did not arrive in time.", null, {}, true);
    } else if (waited >= (this.answered ? this.context.timeouts.idleMs : this.context.timeouts.headerMs)) {
      this.end();
    }
  }
}
