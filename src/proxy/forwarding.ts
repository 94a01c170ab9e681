// The heads the proxy sends on, both ways. Hop-by-hop headers (RFC 9110 7.6.1), and any header a
// `Connection` field names, concern one connection only and are dropped; the body's own framing
// (Content-Length or chunked Transfer-Encoding) is kept, as the body is relayed byte for byte.
// The app learns who the client is from X-Forwarded-* and X-Real-IP, which the proxy writes
// itself: whatever a client sent under those names is replaced, unless the peer is a trusted
// proxy (PLATFORM_TRUSTED_PROXIES), whose chain is kept and extended.
import type { CidrRange } from "../http/trusted-proxies";
import { clientBehindProxies, inAnyRange, lastHeaderValue } from "../http/trusted-proxies";
import { fieldCount, fieldKind, FieldKind, fieldLineStart, fieldNameIs, fieldValue, headerValue, type MessageHead, type RequestHead, type ResponseHead } from "./http1";
import type { OutgoingHead } from "./socket-writer";

/** What an app with the `hsts` setting answers over HTTPS (in place of its own): browsers then use HTTPS only, for a year. */
const HSTS_LINE = "strict-transport-security: max-age=31536000\r\n";
/** A client's own request id is kept when it is this tame (it ends up in the app's logs). */
const REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** Who sent a request, as far as it can be believed. */
export interface ClientIdentity {
  /** The socket peer: the client, or a trusted proxy in front of it. */
  peerAddress: string;
  /** The client: the peer, or behind trusted proxies the address the first of them was reached from. */
  clientAddress: string;
  trustedPeer: boolean;
  /** What the client asked for: the Host, or a trusted proxy's X-Forwarded-Host. */
  host: string;
  https: boolean;
  /** The port the client reached: from the Host, a trusted proxy's X-Forwarded-Port, or the proxy's own. */
  port: string;
}

export function requestIdOf(head: RequestHead): string {
  const count = fieldCount(head);
  for (let index = 0; index < count; index++) {
    if (fieldKind(head, index) !== FieldKind.requestId) continue;
    const sent = fieldValue(head, index);
    return REQUEST_ID.test(sent) ? sent : crypto.randomUUID();
  }
  return crypto.randomUUID();
}

export function clientIdentityOf(head: RequestHead, peerAddress: string, trustedProxies: readonly CidrRange[], proxyPort: number, https: boolean): ClientIdentity {
  const host = head.host ?? "";
  const ownPort = portOf(host) ?? String(proxyPort);
  if (!trustedProxies.length || !inAnyRange(trustedProxies, peerAddress)) {
    return { peerAddress, clientAddress: peerAddress, trustedPeer: false, host, https, port: ownPort };
  }
  const forwardedProto = lastHeaderValue(headerValue(head, "x-forwarded-proto"))?.toLowerCase();
  const forwardedPort = headerValue(head, "x-forwarded-port");
  return {
    peerAddress,
    clientAddress: clientBehindProxies(trustedProxies, peerAddress, headerValue(head, "x-forwarded-for")) ?? peerAddress,
    trustedPeer: true,
    host: lastHeaderValue(headerValue(head, "x-forwarded-host")) ?? host,
    https: forwardedProto === undefined ? https : forwardedProto === "https",
    port: forwardedPort && /^\d{1,5}$/.test(forwardedPort) ? forwardedPort : ownPort,
  };
}

/** The FieldKinds in `kinds` as a set of bits, for copyKeptLines. */
const kindBits = (...kinds: FieldKind[]): number => kinds.reduce<number>((bits, kind) => bits | (1 << kind), 0);
const OWN_LINES_OF_REQUEST = kindBits(FieldKind.clientIdentity, FieldKind.requestId);
const OWN_LINES_OF_REQUEST_AND_HOST = kindBits(FieldKind.clientIdentity, FieldKind.requestId, FieldKind.host);
const OWN_LINES_OF_RESPONSE = kindBits(FieldKind.requestId);
const OWN_LINES_OF_RESPONSE_AND_HSTS = kindBits(FieldKind.requestId, FieldKind.strictTransportSecurity);

/**
 * Copies the header lines of a head that are passed on, each with its CRLF, as they came: runs of
 * kept lines are copied whole from the bytes the head was read from. `withStartLine`: the head's
 * own start line goes first (else the caller wrote one). Left out: the hop-by-hop lines (see
 * dropped()), and those of the kinds in `ownKinds` (kindBits), which the proxy writes itself. A
 * set of kinds rather than a function that decides: a closure made for each head costs more.
 */
function copyKeptLines(out: OutgoingHead, head: MessageHead, withStartLine: boolean, ownKinds: number, upgrading: boolean) {
  const { source, sourceStart } = head;
  let runStart = withStartLine ? 0 : -1;
  const count = fieldCount(head);
  for (let i = 0; i < count; i++) {
    const kind = fieldKind(head, i);
    if (ownKinds & (1 << kind) || dropped(head, i, kind, upgrading)) {
      if (runStart >= 0) out.bytes(source, sourceStart + runStart, sourceStart + fieldLineStart(head, i));
      runStart = -1;
    } else if (runStart < 0) runStart = fieldLineStart(head, i);
  }
  if (runStart >= 0) out.bytes(source, sourceStart + runStart, head.sourceEnd).crlf();
}

/**
 * X-Forwarded-For, X-Real-IP and X-Forwarded-Host, -Proto and -Port of a client's own identity,
 * which a connection keeps for one Host: made once, as bytes. Behind a trusted proxy each request
 * has its own identity, and its X-Forwarded-For extends the chain it came with.
 */
const clientLines = new WeakMap<ClientIdentity, Uint8Array>();

function writeIdentityLines(out: OutgoingHead, identity: ClientIdentity, sentFor: string | null): OutgoingHead {
  if (identity.trustedPeer) return out.text(identityLines(identity, sentFor ? `${sentFor}, ${identity.peerAddress}` : identity.peerAddress));
  let lines = clientLines.get(identity);
  // The Host in them was read as latin1: written back the same, byte for byte.
  if (lines === undefined) clientLines.set(identity, (lines = Buffer.from(identityLines(identity, identity.peerAddress), "latin1")));
  return out.bytes(lines, 0, lines.byteLength);
}

const REQUEST_ID_NAME = Buffer.from("x-request-id: ", "latin1");

/**
 * The X-Request-Id line and the empty line that ends a head, written in parts. One string joined
 * with the id (new for each request) had to be flattened before Buffer.write could copy it: that
 * write was 14% of the proxy's JavaScript time per request, and 0.4-0.7 µs of CPU.
 */
const writeRequestIdAndEnd = (out: OutgoingHead, requestId: string): OutgoingHead =>
  out.bytes(REQUEST_ID_NAME, 0, REQUEST_ID_NAME.byteLength).text(requestId).crlf().crlf();

const identityLines = (identity: ClientIdentity, forwardedFor: string): string =>
  `x-forwarded-for: ${forwardedFor}\r\nx-real-ip: ${identity.clientAddress}\r\nx-forwarded-host: ${identity.host}\r\nx-forwarded-proto: ${identity.https ? "https" : "http"}\r\nx-forwarded-port: ${identity.port}\r\n`;

/** Writes the request head as the app receives it, CRLF CRLF included. */
export function writeUpstreamRequestHead(out: OutgoingHead, head: RequestHead, identity: ClientIdentity, requestId: string, websocket: boolean): OutgoingHead {
  // An absolute-form target's authority is the Host (RFC 9112 3.2.2): the client's Host line goes.
  const hostReplaced = head.absoluteForm || head.host === null;
  // An HTTP/1.1 client's own request line, unless its target was in absolute form.
  const ownRequestLine = head.minorVersion === 1 && !head.absoluteForm;
  if (!ownRequestLine) out.text(`${head.method} ${head.target} HTTP/1.1\r\n`);
  copyKeptLines(out, head, ownRequestLine, hostReplaced ? OWN_LINES_OF_REQUEST_AND_HOST : OWN_LINES_OF_REQUEST, websocket);
  if (hostReplaced) out.text(`host: ${head.host ?? identity.host}\r\n`);
  if (websocket) out.text("connection: upgrade\r\n");
  return writeRequestIdAndEnd(writeIdentityLines(out, identity, identity.trustedPeer ? forwardedForSent(head) : null), requestId);
}

/** The X-Forwarded-For chain a request came with (its fields joined), or null. */
function forwardedForSent(head: RequestHead): string | null {
  let sentFor: string | null = null;
  const count = fieldCount(head);
  for (let index = 0; index < count; index++) {
    if (fieldKind(head, index) === FieldKind.clientIdentity && fieldNameIs(head, index, "x-forwarded-for")) {
      sentFor = sentFor === null ? fieldValue(head, index) : `${sentFor}, ${fieldValue(head, index)}`;
    }
  }
  return sentFor;
}

/** The start line of a response head as sent on (HTTP/1.1), and its kept lines (see copyKeptLines). */
function copyStatusLineAndKept(out: OutgoingHead, head: ResponseHead, ownKinds: number, upgrading: boolean) {
  // The app's own status line when it answered in HTTP/1.1.
  const ownStatusLine = head.minorVersion === 1;
  if (!ownStatusLine) out.text(`HTTP/1.1 ${head.status} ${head.reason}\r\n`);
  copyKeptLines(out, head, ownStatusLine, ownKinds, upgrading);
}

/**
 * Writes the response head as the client receives it, CRLF CRLF included. `close`: the proxy
 * closes the client's connection after this response. A 101 keeps its Upgrade and says
 * `Connection: upgrade`. `hsts`: the answer carries the proxy's Strict-Transport-Security.
 */
export function writeClientResponseHead(out: OutgoingHead, head: ResponseHead, requestId: string, close: boolean, hsts = false): OutgoingHead {
  const switching = head.status === 101;
  copyStatusLineAndKept(out, head, hsts ? OWN_LINES_OF_RESPONSE_AND_HSTS : OWN_LINES_OF_RESPONSE, switching);
  if (switching) out.text("connection: upgrade\r\n");
  else if (close) out.text("connection: close\r\n");
  if (hsts) out.text(HSTS_LINE);
  return writeRequestIdAndEnd(out, requestId);
}

/** Writes an informational (1xx) answer as the client receives it: its fields, without hop-by-hop ones. */
export function writeInterimResponseHead(out: OutgoingHead, head: ResponseHead): OutgoingHead {
  copyStatusLineAndKept(out, head, 0, false);
  return out.crlf();
}

/**
 * A hop-by-hop field (RFC 9110 7.6.1), or one the Connection field names (never the framing or
 * Host: they are the message's own); `upgrade` kept when switching.
 */
function dropped(head: MessageHead, index: number, kind: FieldKind, upgrading: boolean): boolean {
  if (kind === FieldKind.connection || kind === FieldKind.hopByHop) return true;
  if (kind === FieldKind.upgrade) return !upgrading;
  if (kind === FieldKind.contentLength || kind === FieldKind.transferEncoding || kind === FieldKind.host) return false;
  for (const token of head.connection) if (fieldNameIs(head, index, token)) return true;
  return false;
}

function portOf(host: string): string | null {
  const match = /:(\d{1,5})$/.exec(host);
  return match ? match[1]! : null;
}
