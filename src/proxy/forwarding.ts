// The heads the proxy sends on, both ways. Hop-by-hop headers (RFC 9110 7.6.1), and any header a
// `Connection` field names, concern one connection only and are dropped; the body's own framing
// (Content-Length or chunked Transfer-Encoding) is kept, as the body is relayed byte for byte.
// The app learns who the client is from X-Forwarded-* and X-Real-IP, which the proxy writes
// itself: whatever a client sent under those names is replaced, unless the peer is a trusted
// proxy (PLATFORM_TRUSTED_PROXIES), whose chain is kept and extended.
import type { CidrRange } from "../http/trusted-proxies";
import { clientBehindProxies, inAnyRange, lastHeaderValue } from "../http/trusted-proxies";
import type { RequestHead, ResponseHead } from "./http1";

/** Dropped from every message passed on; `upgrade` is kept on a WebSocket handshake only. */
export const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "upgrade", "te", "trailer", "proxy-authenticate", "proxy-authorization"]);
/** A message's framing and target: kept whatever its Connection field names. */
const NEVER_NAMED = new Set(["content-length", "transfer-encoding", "host"]);
const CLIENT_IDENTITY = new Set(["x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-real-ip", "forwarded", "x-request-id"]);
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

/** The request head as the app receives it, CRLF CRLF included. */
export function upstreamRequestHead(head: RequestHead, identity: ClientIdentity, requestId: string, websocket: boolean): string {
  let text = `${head.method} ${head.target} HTTP/1.1\r\n`;
  let sentFor: string | null = null;
  for (const [name, value] of head.headers) {
    const lower = name.toLowerCase();
    if (CLIENT_IDENTITY.has(lower)) {
      if (lower === "x-forwarded-for") sentFor = sentFor === null ? value : `${sentFor}, ${value}`;
      continue;
    }
    if (dropped(lower, head.connection, websocket)) continue;
    // An absolute-form target's authority is the Host (RFC 9112 3.2.2).
    text += lower === "host" ? `${name}: ${head.host}\r\n` : `${name}: ${value}\r\n`;
  }
  if (headerValue(head, "host") === null) text += `host: ${head.host ?? identity.host}\r\n`;
  if (websocket) text += "connection: upgrade\r\n";
  const forwardedFor = identity.trustedPeer && sentFor ? `${sentFor}, ${identity.peerAddress}` : identity.peerAddress;
  return (
    text +
    `x-forwarded-for: ${forwardedFor}\r\nx-real-ip: ${identity.clientAddress}\r\nx-forwarded-host: ${identity.host}\r\n` +
    `x-forwarded-proto: ${identity.https ? "https" : "http"}\r\nx-forwarded-port: ${identity.port}\r\nx-request-id: ${requestId}\r\n\r\n`
  );
}

/**
 * The response head as the client receives it, CRLF CRLF included. `close`: the proxy closes the
 * client's connection after this response. A 101 keeps its Upgrade and says `Connection: upgrade`.
 */
export function clientResponseHead(head: ResponseHead, requestId: string, close: boolean): string {
  let text = `HTTP/1.1 ${head.status} ${head.reason}\r\n`;
  const switching = head.status === 101;
  for (const [name, value] of head.headers) {
    const lower = name.toLowerCase();
    if (dropped(lower, head.connection, switching) || lower === "x-request-id") continue;
    text += `${name}: ${value}\r\n`;
  }
  if (switching) text += "connection: upgrade\r\n";
  else if (close) text += "connection: close\r\n";
  return `${text}x-request-id: ${requestId}\r\n\r\n`;
}

/** An informational (1xx) answer as the client receives it: its fields, without hop-by-hop ones. */
export function interimResponseHead(head: ResponseHead): string {
  let text = `HTTP/1.1 ${head.status} ${head.reason}\r\n`;
  for (const [name, value] of head.headers) if (!dropped(name.toLowerCase(), head.connection, false)) text += `${name}: ${value}\r\n`;
  return `${text}\r\n`;
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
