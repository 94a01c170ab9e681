// One request and its response on a client connection (./client-connection.ts): the request head
// and body sent on over an upstream connection (./upstream-pool.ts), the app's answer read, checked
// (./http1.ts) and relayed back byte for byte, with backpressure both ways. An app's 101 to a
// WebSocket handshake turns the exchange into a tunnel. Ends in the client's hands: the connection
// reads the next request, or closes.
import type { ClientConnection } from "./client-connection";
import { now, readClock, wallNow } from "./clock";
import { BodyTracker } from "./body";
import { endOfSameHead, indexOfHeadEnd, MAX_HEAD_BYTES, parseResponseHead, responseFraming, type RequestHead, type ResponseHead } from "./http1";
import { writeClientResponseHead, writeInterimResponseHead, writeUpstreamRequestHead, type ClientIdentity } from "./forwarding";
import type { Upstream } from "./routes";
import { joined, type OutgoingHead, outgoingHead } from "./socket-writer";
import { UpstreamUnavailable, type UpstreamConnection, type UpstreamListener } from "./upstream-pool";

/** Below this, a head and the first body bytes that came with it are written together. */
const JOIN_BELOW_BYTES = 16 * 1024;
/** A response head read from a piece of at most this many bytes is kept on its connection, to be matched by the next (see endOfSameHead). */
const SAME_HEAD_KEPT_BYTES = 4 * 1024;

/** One request and its response, between the client connection and an upstream connection. */
export class Exchange implements UpstreamListener {
  private upstream: UpstreamConnection | null = null;
  /** Request body bytes that came before the upstream connection (most requests have none: no list made). */
  private early: Uint8Array[] | null = null;
  private readonly requestBody: BodyTracker;
  /** The status of the app's final response head, once it came (0 before). Not the head: it would keep the chunk it was read from. */
  private responseStatus = 0;
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
  private lastActivity = now();
  private upstreamPaused = false;
  private retried = false;
  /** The app accepted a WebSocket: bytes pass both ways untouched until either side closes. */
  private tunnel = false;

  constructor(
    private readonly client: ClientConnection,
    private readonly request: RequestHead,
    private readonly subdomain: string,
    private readonly address: Upstream,
    private readonly requestId: string,
    private readonly identity: ClientIdentity,
    private readonly websocket: boolean,
    /** The answer carries the proxy's Strict-Transport-Security (the app's `hsts`, over HTTPS). */
    private readonly hsts: boolean,
  ) {
    this.requestBody = new BodyTracker(request.framing);
    this.closeClient = !request.keepAlive;
  }

  goesTo(host: string, port: number): boolean {
    return !this.done && this.address.host === host && this.address.port === port;
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
        readClock();
        if (this.done) connection.destroy();
        else this.attach(connection);
      },
      (error: unknown) => {
        readClock();
        if (this.done) return;
        this.failBeforeResponse(error instanceof UpstreamUnavailable && error.timedOut ? 504 : 502);
      },
    );
  }

  private attach(connection: UpstreamConnection) {
    this.upstream = connection;
    connection.listener = this;
    this.sentAt = now();
    this.lastActivity = this.sentAt;
    const early = this.early;
    this.early = null;
    let open = connection.writer.writeHead(writeUpstreamRequestHead(outgoingHead.begin(), this.request, this.identity, this.requestId, this.websocket));
    if (early) for (const bytes of early) open = connection.writer.write(bytes);
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
    this.lastActivity = now();
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
      (this.early ??= []).push(bytes);
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

  private toClient(bytes: Uint8Array) {
    this.wroteToClient = true;
    if (!this.client.write(bytes)) this.pauseUpstream();
  }

  /** The head just built (with any body bytes appended to it). */
  private headToClient(head: OutgoingHead) {
    this.wroteToClient = true;
    if (!this.client.writeHead(head)) this.pauseUpstream();
  }

  /** The client cannot take more for now: the app's connection is not read until it can. */
  private pauseUpstream() {
    if (this.upstream && !this.upstreamPaused) {
      this.upstreamPaused = true;
      this.upstream.socket.pause();
    }
  }

  onUpstreamData(chunk: Uint8Array) {
    this.receivedAny = true;
    this.lastActivity = now();
    if (this.tunnel) {
      this.toClient(chunk);
      return;
    }
    if (this.done) return;
    if (!this.responseStatus) {
      const data = joined(this.headBytes, chunk);
      this.headBytes = null;
      this.readResponseHead(data);
      return;
    }
    let end: number;
    try {
      end = this.responseBody!.feed(chunk);
    } catch {
      this.brokenResponse();
      return;
    }
    if (end < 0) {
      this.toClient(chunk);
      return;
    }
    if (end > 0) this.toClient(chunk.subarray(0, end));
    // Bytes past the end of a response: the connection is out of step, not reused.
    if (end < chunk.byteLength) this.reuseUpstream = false;
    this.finish();
  }

  /**
   * Reads the response head (skipping 1xx ones) and passes it on with the body bytes that came with
   * it; a head not complete yet waits for more. Offsets into `data` rather than subarrays: this runs
   * for every response.
   */
  private readResponseHead(data: Uint8Array) {
    const upstream = this.upstream!;
    let start = 0;
    for (;;) {
      const last = upstream.lastResponseHead;
      let end = last === null ? -1 : endOfSameHead(data, start, last);
      let head: ResponseHead;
      if (end >= 0) head = last!;
      else {
        end = indexOfHeadEnd(data, start);
        if (end < 0 || end - start > MAX_HEAD_BYTES) {
          if (end - start > MAX_HEAD_BYTES || data.byteLength - start > MAX_HEAD_BYTES) this.failBeforeResponse(502);
          else this.headBytes = start ? data.subarray(start) : data;
          return;
        }
        try {
          head = parseResponseHead(data, start, end);
        } catch {
          this.failBeforeResponse(502);
          return;
        }
        upstream.lastResponseHead = data.buffer.byteLength <= SAME_HEAD_KEPT_BYTES ? head : null;
      }
      start = end + 4;
      if (head.status === 101) {
        if (!this.websocket) {
          this.failBeforeResponse(502);
          return;
        }
        this.upstreamMs = now() - this.sentAt;
        this.record(101);
        this.client.writeHead(writeClientResponseHead(outgoingHead.begin(), head, this.requestId, false));
        this.done = true;
        this.tunnel = true;
        const early = this.client.startTunnel();
        if (early?.byteLength) this.toUpstream(early);
        if (start < data.byteLength) this.toClient(data.subarray(start));
        return;
      }
      if (head.status < 200) {
        // 100 Continue, 103 Early Hints: passed on to an HTTP/1.1 client; the final head follows.
        if (this.request.minorVersion === 1) this.headToClient(writeInterimResponseHead(outgoingHead.begin(), head));
        continue;
      }
      this.upstreamMs = now() - this.sentAt;
      this.responseStatus = head.status;
      const framing = responseFraming(this.request.method, head);
      this.responseBody = new BodyTracker(framing);
      if (framing.kind === "close" || head.minorVersion === 0 || head.connection.includes("close")) this.reuseUpstream = false;
      // An answer before the whole request body: where the next request would start is unknown.
      if (framing.kind === "close" || !this.requestDone || this.client.context.stopping) this.closeClient = true;
      let bodyEnd: number;
      try {
        bodyEnd = this.responseBody.feed(data, start);
      } catch {
        this.brokenResponse();
        return;
      }
      const bodyStop = bodyEnd < 0 ? data.byteLength : bodyEnd;
      const answerHead = writeClientResponseHead(outgoingHead.begin(), head, this.requestId, this.closeClient, this.hsts);
      if (bodyStop > start && bodyStop - start < JOIN_BELOW_BYTES) this.headToClient(answerHead.bytes(data, start, bodyStop));
      else {
        this.headToClient(answerHead);
        if (bodyStop > start) this.toClient(data.subarray(start, bodyStop));
      }
      if (bodyEnd >= 0) {
        if (bodyEnd < data.byteLength) this.reuseUpstream = false;
        this.finish();
      }
      return;
    }
  }

  /** The app's body broke its framing after its head was accepted: both connections are closed. */
  private brokenResponse() {
    if (this.done) return;
    this.done = true;
    this.dropUpstream();
    this.record(this.responseStatus || 502);
    this.client.destroy();
  }

  private record(status: number) {
    this.client.context.traffic.record(this.subdomain, {
      status,
      bytesIn: this.requestBody.bytes,
      bytesOut: this.responseBody?.bytes ?? 0,
      upstreamMs: this.upstreamMs,
    }, wallNow());
  }

  /** The response is complete. */
  private finish() {
    if (this.done) return;
    this.done = true;
    this.record(this.responseStatus);
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
    if (this.tunnel) {
      this.client.end();
      return;
    }
    if (this.done) return;
    if (!this.responseStatus) {
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
    this.record(this.responseStatus);
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
    // A tunnel's app is told the client has gone as TCP tells it; anything else is cut.
    if (this.tunnel) upstream.socket.end();
    else upstream.destroy();
    this.done = true;
  }

  tick(at: number) {
    if (this.done || at - this.lastActivity < this.client.context.timeouts.upstreamMs) return;
    if (!this.responseStatus && !this.requestDone && !this.wroteToClient) {
      // The client stopped sending its body: its own doing, not the app's.
      this.done = true;
      this.dropUpstream();
      this.record(408);
      this.client.refuse(408, "REQUEST_TIMEOUT", "The request body stopped coming.", this.request, { "x-request-id": this.requestId }, true);
      this.client.exchangeDone(true);
    } else if (!this.responseStatus) this.failBeforeResponse(504);
    else {
      this.done = true;
      this.record(this.responseStatus);
      this.upstream?.destroy();
      this.client.destroy();
    }
  }
}
