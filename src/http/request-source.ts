// Where a request comes from, as far as it can be believed: the client's address, the host it
// asked for and whether it used HTTPS. Behind a front proxy these are the proxy's X-Forwarded-*
// headers, believed only when the socket peer is in PLATFORM_TRUSTED_PROXIES (anyone else could
// write them). Also the two checks built on them for browser requests: the Host allow-list
// (against DNS rebinding) and the Origin check (against CSRF).
import type { Config } from "../config";
import { ApiError } from "./errors";
import { clientBehindProxies, inAnyRange, isIpLiteral, lastHeaderValue } from "./trusted-proxies";

export interface RequestSource {
  /** The socket peer: the client, or the proxy in front of it. */
  peerAddress: string | null;
  /** The client: the peer, or behind trusted proxies the address the first of them was reached from. */
  clientAddress: string | null;
  /** `Host`, or a trusted proxy's `X-Forwarded-Host`: what the browser has in its address bar. */
  host: string;
  /** The client reached us over HTTPS, directly or through a trusted proxy. */
  https: boolean;
}

type PeerLookup = { requestIP(request: Request): { address: string } | null } | null;

export function requestSourceOf(config: Pick<Config, "apiTrustedProxies">, server: PeerLookup, request: Request): RequestSource {
  const peerAddress = server?.requestIP(request)?.address ?? null;
  const host = request.headers.get("host") ?? new URL(request.url).host;
  const https = request.url.startsWith("https:");
  if (!inAnyRange(config.apiTrustedProxies, peerAddress)) return { peerAddress, clientAddress: peerAddress, host, https };
  const forwardedProto = lastHeaderValue(request.headers.get("x-forwarded-proto"))?.toLowerCase();
  return {
    peerAddress,
    clientAddress: clientBehindProxies(config.apiTrustedProxies, peerAddress, request.headers.get("x-forwarded-for")),
    host: lastHeaderValue(request.headers.get("x-forwarded-host")) ?? host,
    https: forwardedProto === undefined ? https : forwardedProto === "https",
  };
}

/** "Example.COM:3000" -> "example.com", "[::1]:3000" -> "::1". */
function hostnameOf(host: string): string {
  const lowered = host.trim().toLowerCase();
  if (lowered.startsWith("[")) return lowered.slice(1, lowered.indexOf("]") >>> 0);
  return lowered.replace(/:\d*$/, "").replace(/\.$/, "");
}

/**
 * DNS rebinding: a web page of any name can make that name resolve to this server's address and
 * then talk to it as its own origin. What gives it away is the `Host` the browser sends: only IP
 * literals, localhost and the names the operator set (PLATFORM_API_HOSTS) are answered on the
 * browser's requests (session cookie, setup, login, invitation acceptance). API keys are not at
 * risk: a page cannot make the browser attach one.
 */
export function assertAllowedHost(config: Pick<Config, "apiHosts">, source: RequestSource) {
  const hostname = hostnameOf(source.host);
  if (isIpLiteral(hostname) || hostname === "localhost" || hostname.endsWith(".localhost")) return;
  if (config.apiHosts.includes(hostname) || config.apiHosts.includes("*")) return;
  throw new ApiError(
    "HOST_NOT_ALLOWED",
    `This server is not reached as "${hostname}" by browsers: add the name to PLATFORM_API_HOSTS if it is really this server's`,
  );
}

/** Cookie requests that change state must come from a page of this same host (no CSRF). */
export function assertSameOrigin(request: Request, source: RequestSource, required: boolean) {
  const origin = request.headers.get("origin");
  if (!origin) {
    if (required) throw new ApiError("CSRF_REJECTED", "Missing Origin header on a cookie-authenticated request");
    return;
  }
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    throw new ApiError("CSRF_REJECTED", "Malformed Origin header");
  }
  if (originHost !== source.host.toLowerCase()) throw new ApiError("CSRF_REJECTED", "Cross-origin request refused");
}

/**
 * The source of a password form (setup, login, invitation acceptance): a browser's request like a
 * cookie one, so the Host must be allowed and a cross-site Origin is refused (it may have none).
 */
export function passwordFormSource(config: Pick<Config, "apiTrustedProxies" | "apiHosts">, server: PeerLookup, request: Request): RequestSource {
  const source = requestSourceOf(config, server, request);
  assertAllowedHost(config, source);
  assertSameOrigin(request, source, false);
  return source;
}
