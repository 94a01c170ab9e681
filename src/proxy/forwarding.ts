// The heads the proxy sends on, both ways. Hop-by-hop headers (RFC 9110 7.6.1), and any header a
// `Connection` field names, concern one connection only and are dropped; the body's own framing
// (Content-Length or chunked Transfer-Encoding) is kept, as the body is relayed byte for byte.
// The app learns who the client is from X-Forwarded-* and X-Real-IP, which the proxy writes
// itself: whatever a client sent under those names is replaced, unless the peer is a trusted
// proxy (PLATFORM_TRUSTED_PROXIES), whose chain is kept and extended.
import type { CidrRange } from "../http/trusted-proxies";
import { clientBehindProxies, inAnyRange, lastHeaderValue } from "../http/trusted-proxies";
import type { MessageHead, RequestHead, ResponseHead } from "./http1";

/** Dropped from every message passed on; `upgrade` is kept on a WebSocket handshake only. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "upgrade", "te", "trailer", "proxy-authenticate", "proxy-authorization"]);
/** A message's framing and target: kept whatever its Connection field names. */
const NEVER_NAMED = new Set(["content-length", "transfer-encoding", "host"]);
const CLIENT_IDENTITY = new Set(["x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-real-ip", "forwarded", "x-request-id"]);
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

export function headerValue(head: { headers: [string, string][] }, lowerName: string): string | null {
  for (const [name, value] of head.headers) if (name.length === lowerName.length && name.toLowerCase() === lowerName) return value;
  return null;
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
 * The header lines of `text` (a head up to its final CRLF CRLF, not included) that are passed on,
 * each with its CRLF, as they came: runs of kept lines are sliced out whole rather than written
 * again field by field. `drops(index, lowerName)` names the lines to leave out.
 */
function keptLines(text: string, head: MessageHead, drops: (index: number, lowerName: string) => boolean): string {
  let kept = "";
  let runStart = -1;
  for (let i = 0; i < head.headers.length; i++) {
    if (drops(i, head.headers[i]![0].toLowerCase())) {
      if (runStart >= 0) kept += text.slice(runStart, head.lineStarts[i]);
      runStart = -1;
    } else if (runStart < 0) runStart = head.lineStarts[i]!;
  }
  return runStart >= 0 ? `${kept}${text.slice(runStart)}\r\n` : kept;
}

/** The request head as the app receives it, CRLF CRLF included; `text` is the head as the client sent it, without them. */
export function upstreamRequestHead(text: string, head: RequestHead, identity: ClientIdentity, requestId: string, websocket: boolean): string {
  let sentFor: string | null = null;
  // An absolute-form target's authority is the Host (RFC 9112 3.2.2): the client's Host line goes.
  const hostReplaced = head.absoluteForm || head.host === null;
  const lines = keptLines(text, head, (index, lower) => {
    if (CLIENT_IDENTITY.has(lower)) {
      if (lower === "x-forwarded-for") sentFor = sentFor === null ? head.headers[index]![1] : `${sentFor}, ${head.headers[index]![1]}`;
      return true;
    }
    return (hostReplaced && lower === "host") || dropped(lower, head.connection, websocket);
  });
  // An HTTP/1.1 client's own request line, unless its target was in absolute form.
  const requestLine = head.minorVersion === 1 && !head.absoluteForm ? text.slice(0, head.lineStarts[0]) : `${head.method} ${head.target} HTTP/1.1\r\n`;
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
function statusLine(text: string, head: ResponseHead): string {
  if (head.minorVersion !== 1) return `HTTP/1.1 ${head.status} ${head.reason}\r\n`;
  return head.lineStarts.length ? text.slice(0, head.lineStarts[0]) : `${text}\r\n`;
}

/**
 * The response head as the client receives it, CRLF CRLF included; `text` is the app's head without
 * them. `close`: the proxy closes the client's connection after this response. A 101 keeps its
 * Upgrade and says `Connection: upgrade`. `hsts`: the answer carries the proxy's Strict-Transport-Security.
 */
export function clientResponseHead(text: string, head: ResponseHead, requestId: string, close: boolean, hsts = false): string {
  const switching = head.status === 101;
  const lines = keptLines(
    text,
    head,
    (_index, lower) => lower === "x-request-id" || (hsts && lower === "strict-transport-security") || dropped(lower, head.connection, switching),
  );
  const connection = switching ? "connection: upgrade\r\n" : close ? "connection: close\r\n" : "";
  return `${statusLine(text, head)}${lines}${connection}${hsts ? HSTS_LINE : ""}x-request-id: ${requestId}\r\n\r\n`;
}

/** An informational (1xx) answer as the client receives it: its fields, without hop-by-hop ones. */
export function interimResponseHead(text: string, head: ResponseHead): string {
  return `${statusLine(text, head)}${keptLines(text, head, (_index, lower) => dropped(lower, head.connection, false))}\r\n`;
}

/** A hop-by-hop field, or one the Connection field names (never the framing or Host); `upgrade` kept when switching. */
function dropped(lowerName: string, connection: string[], upgrading: boolean): boolean {
  if (HOP_BY_HOP.has(lowerName)) return !(upgrading && lowerName === "upgrade");
  return connection.length > 0 && connection.includes(lowerName) && !NEVER_NAMED.has(lowerName);
}

function portOf(host: string): string | null {
  const match = /:(\d{1,5})$/.exec(host);
  return match ? match[1]! : null;
}
