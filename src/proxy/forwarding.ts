// The headers the proxy sends on, both ways. Hop-by-hop headers (RFC 9110 7.6.1), and any header
// a `Connection` field names, concern one connection only and are dropped. The app learns who
// the client is from X-Forwarded-* and X-Real-IP, which the proxy writes itself: whatever a
// client sent under those names is replaced, unless the peer is a trusted proxy
// (PLATFORM_TRUSTED_PROXIES), whose chain is kept and extended.
import type { RequestSource } from "../http/request-source";

export const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer", "proxy-authenticate", "proxy-authorization"];
const CLIENT_IDENTITY = ["x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-real-ip", "forwarded"];
/** A client's own request id is kept when it is this tame (it ends up in the app's logs). */
const REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

export function withoutHopByHop(headers: Headers): Headers {
  const copy = new Headers(headers);
  const named = headers.get("connection");
  if (named) for (const name of named.split(",")) copy.delete(name.trim());
  for (const name of HOP_BY_HOP) copy.delete(name);
  return copy;
}

export function requestIdOf(request: Request): string {
  const sent = request.headers.get("x-request-id");
  return sent && REQUEST_ID.test(sent) ? sent : crypto.randomUUID();
}

/** The request's headers as the app receives them. */
export function upstreamRequestHeaders(request: Request, source: RequestSource, trustedPeer: boolean, proxyPort: number, requestId: string): Headers {
  const headers = withoutHopByHop(request.headers);
  const sentFor = request.headers.get("x-forwarded-for");
  const sentPort = request.headers.get("x-forwarded-port");
  for (const name of CLIENT_IDENTITY) headers.delete(name);
  const peer = source.peerAddress ?? "unknown";
  headers.set("x-forwarded-for", trustedPeer && sentFor ? `${sentFor}, ${peer}` : peer);
  headers.set("x-real-ip", source.clientAddress ?? peer);
  headers.set("x-forwarded-host", source.host);
  headers.set("x-forwarded-proto", source.https ? "https" : "http");
  headers.set("x-forwarded-port", trustedPeer && sentPort && /^\d{1,5}$/.test(sentPort) ? sentPort : String(portOf(source.host) ?? proxyPort));
  headers.set("x-request-id", requestId);
  return headers;
}

function portOf(host: string): number | null {
  const match = /:(\d{1,5})$/.exec(host);
  return match ? Number(match[1]) : null;
}
