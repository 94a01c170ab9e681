// The heads the proxy sends on, both ways. Hop-by-hop headers (RFC 9110 7.6.1), and any header a
// `Connection` field names, concern one connection only and are dropped; the body's own framing
// (Content-Length or chunked Transfer-Encoding) is kept, as the body is relayed byte for byte.
// The app learns who the client is from X-Forwarded-* and X-Real-IP, which the proxy writes
// itself: whatever a client sent under those names is replaced, unless the peer is a trusted
// proxy (PLATFORM_TRUSTED_PROXIES), whose chain is kept and extended.
import type { CidrRange } from "../http/trusted-proxies";
import { clientBehindProxies, inAnyRange, lastHeaderValue } from "../http/trusted-proxies";
import { fieldCount, fieldKind, FieldKind, fieldLineStart, fieldNameIs, fieldValue, headerValue, type MessageHead, type RequestHead, type ResponseHead } from "./http1";

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
  const sent = headerValue(head, "x-request-id");
  return sent && REQUEST_ID.test(sent) ? sent : crypto.randomUUID();
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

/**
 * The header lines of a head that are passed on, each with its CRLF, as they came: runs of kept
 * lines are sliced out whole rather than written again field by field. `drops(index, kind)` names
 * the lines to leave out.
 */
function keptLines(head: MessageHead, drops: (index: number, kind: FieldKind) => boolean): string {
  const { text } = head;
  let kept = "";
  let runStart = -1;
  const count = fieldCount(head);
  for (let i = 0; i < count; i++) {
    if (drops(i, fieldKind(head, i))) {
      if (runStart >= 0) kept += text.slice(runStart, fieldLineStart(head, i));
      runStart = -1;
    } else if (runStart < 0) runStart = fieldLineStart(head, i);
  }
  return runStart >= 0 ? `${kept}${text.slice(runStart)}\r\n` : kept;
}

/** The request head as the app receives it, CRLF CRLF included. */
export function upstreamRequestHead(head: RequestHead, identity: ClientIdentity, requestId: string, websocket: boolean): string {
  let sentFor: string | null = null;
  // An absolute-form target's authority is the Host (RFC 9112 3.2.2): the client's Host line goes.
  const hostReplaced = head.absoluteForm || head.host === null;
  const lines = keptLines(head, (index, kind) => {
    if (kind === FieldKind.clientIdentity || kind === FieldKind.requestId) {
      if (fieldNameIs(head, index, "x-forwarded-for")) sentFor = sentFor === null ? fieldValue(head, index) : `${sentFor}, ${fieldValue(head, index)}`;
      return true;
    }
    return (hostReplaced && kind === FieldKind.host) || dropped(head, index, kind, websocket);
  });
  // An HTTP/1.1 client's own request line, unless its target was in absolute form.
  const requestLine = head.minorVersion === 1 && !head.absoluteForm ? head.text.slice(0, fieldLineStart(head, 0)) : `${head.method} ${head.target} HTTP/1.1\r\n`;
  const forwardedFor = identity.trustedPeer && sentFor ? `${sentFor}, ${identity.peerAddress}` : identity.peerAddress;
  return (
    requestLine +
    lines +
    (hostReplaced ? `host: ${head.host ?? identity.host}\r\n` : "") +
    (websocket ? "connection: upgrade\r\n" : "") +
    `x-forwarded-for: ${forwardedFor}\r\nx-real-ip: ${identity.clientAddress}\r\nx-forwarded-host: ${identity.host}\r\n` +
    `x-forwarded-proto: ${identity.https ? "https" : "http"}\r\nx-forwarded-port: ${identity.port}\r\nx-request-id: ${requestId}\r\n\r\n`
  );
}

/** An HTTP/1.1 status line: the app's own when it answered in HTTP/1.1. */
function statusLine(head: ResponseHead): string {
  if (head.minorVersion !== 1) return `HTTP/1.1 ${head.status} ${head.reason}\r\n`;
  return fieldCount(head) ? head.text.slice(0, fieldLineStart(head, 0)) : `${head.text}\r\n`;
}

/**
 * The response head as the client receives it, CRLF CRLF included. `close`: the proxy closes the
 * client's connection after this response. A 101 keeps its Upgrade and says `Connection: upgrade`.
 * `hsts`: the answer carries the proxy's Strict-Transport-Security.
 */
export function clientResponseHead(head: ResponseHead, requestId: string, close: boolean, hsts = false): string {
  const switching = head.status === 101;
  const lines = keptLines(
    head,
    (index, kind) => kind === FieldKind.requestId || (hsts && kind === FieldKind.strictTransportSecurity) || dropped(head, index, kind, switching),
  );
  const connection = switching ? "connection: upgrade\r\n" : close ? "connection: close\r\n" : "";
  return `${statusLine(head)}${lines}${connection}${hsts ? HSTS_LINE : ""}x-request-id: ${requestId}\r\n\r\n`;
}

/** An informational (1xx) answer as the client receives it: its fields, without hop-by-hop ones. */
export function interimResponseHead(head: ResponseHead): string {
  return `${statusLine(head)}${keptLines(head, (index, kind) => dropped(head, index, kind, false))}\r\n`;
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
