// The public proxy's rate limits: a token bucket per client address and one per host (app), each
// with the platform's defaults (PLATFORM_PROXY_IP_*, PLATFORM_PROXY_HOST_*) or the app's own
// (its settings' `rateLimits`, carried by its route: ./routes.ts). Separate from the API's
// limits. Memory stays bounded however many addresses appear: the buckets forget the least
// recently used past their capacity (src/http/rate-limit.ts), and a forgotten bucket is a full one.
// A refusal carries Retry-After and the RateLimit-Policy / RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-10.
import type { RateLimit } from "../config";
import { TokenBuckets } from "../http/rate-limit";
import { parseAddress } from "../http/trusted-proxies";

export interface ProxyRateLimits {
  /** Each client address's bucket for the app. */
  perClient: RateLimit;
  /** The app's bucket, shared by all its clients. */
  perHost: RateLimit;
}

/** Which limit refused a request, and for how long. */
export interface Refusal {
  policy: "client" | "host";
  limit: RateLimit;
  retryAfterSeconds: number;
}

const IPV6_SUBNET_BITS = 64n;
const DOTTED_IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/**
 * The key a client's bucket is kept under: its IPv4 address, or its IPv6 /64 (one subscriber
 * usually holds a whole /64, so keying single IPv6 addresses would let one client have 2^64 buckets).
 */
export function clientKey(address: string | null): string {
  if (!address) return "unknown";
  // The common case without parsing (which is a tenth of a proxied request's cost): a plain IPv4 address is its own key.
  if (DOTTED_IPV4.test(address)) return address;
  const parsed = parseAddress(address);
  if (!parsed) return address;
  if (parsed.family === 4) return address.includes(":") ? `v4:${parsed.value}` : address;
  return `v6:${(parsed.value >> IPV6_SUBNET_BITS).toString(16)}/64`;
}

/**
 * The key of a client's bucket for a host. The caller makes it once for each keep-alive connection
 * and host rather than for each request: made anew it cost as much as the rest of admit().
 */
export const clientBucketOf = (host: string, clientAddress: string | null): string => `${host} ${clientKey(clientAddress)}`;

export class ProxyRateLimiter {
  private readonly clients: TokenBuckets;
  private readonly hosts: TokenBuckets;

  constructor(
    readonly limits: ProxyRateLimits,
    capacity?: number,
  ) {
    this.clients = new TokenBuckets(limits.perClient, capacity);
    this.hosts = new TokenBuckets(limits.perHost, capacity);
  }

  /** Buckets held, for the memory bound. */
  get size(): number {
    return this.clients.size + this.hosts.size;
  }

  /**
   * Counts one request of a client (its bucket's key, from clientBucketOf) to a host under `limits`
   * (the host's own, else the defaults); a refusal says which limit refused it. The host's bucket
   * is only charged when the client's let the request through, so one client over its own limit
   * cannot spend the host's tokens for everyone else. New limits apply to a host's existing
   * buckets from the next request. `now` (ms) is required: every call must use the same clock
   * (the proxy's, src/proxy/clock.ts), or a bucket would see time jump.
   */
  admit(host: string, clientBucket: string, limits: ProxyRateLimits = this.limits, now: number): Refusal | null {
    const client = this.clients.take(clientBucket, now, limits.perClient);
    if (!client.allowed) return { policy: "client", limit: limits.perClient, retryAfterSeconds: client.retryAfterSeconds };
    const hostResult = this.hosts.take(host, now, limits.perHost);
    if (!hostResult.allowed) return { policy: "host", limit: limits.perHost, retryAfterSeconds: hostResult.retryAfterSeconds };
    return null;
  }
}

/**
 * The fields of a refusal (draft-ietf-httpapi-ratelimit-headers-10): the policy as a quota `q`
 * over a window `w` (seconds for an empty bucket to fill again), and the current state: `r`
 * requests remaining (none), `t` seconds until one is.
 */
export function refusalHeaders(refusal: Refusal): Record<string, string> {
  const { burst, refillPerSecond } = refusal.limit;
  const window = refillPerSecond > 0 ? Math.max(1, Math.ceil(burst / refillPerSecond)) : 3600;
  return {
    "retry-after": String(refusal.retryAfterSeconds),
    "ratelimit-policy": `"${refusal.policy}";q=${burst};w=${window}`,
    ratelimit: `"${refusal.policy}";r=0;t=${refusal.retryAfterSeconds}`,
  };
}
