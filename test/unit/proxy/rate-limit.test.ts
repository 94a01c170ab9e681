// The public proxy's limiter: per client address of an app and per app, bounded in memory.
import { expect, test } from "bun:test";
import { ProxyRateLimiter, clientKey, refusalHeaders } from "../../../src/proxy/rate-limit";

const limits = { perClient: { burst: 3, refillPerSecond: 1 }, perHost: { burst: 5, refillPerSecond: 0.5 } };

test("a client address is its own key; an IPv6 client is keyed by its /64, an IPv4-mapped one as IPv4", () => {
  expect(clientKey("192.0.2.7")).toBe("192.0.2.7");
  expect(clientKey("::ffff:192.0.2.7")).toBe(clientKey("::ffff:c000:207"));
  expect(clientKey("2001:db8:1:2::1")).toBe(clientKey("2001:db8:1:2:ffff:ffff:ffff:ffff"));
  expect(clientKey("2001:db8:1:2::1")).not.toBe(clientKey("2001:db8:1:3::1"));
});

test("a client over its burst is refused until a token is back, and Retry-After says when", () => {
  const limiter = new ProxyRateLimiter(limits);
  const now = 1_000_000;
  for (let i = 0; i < 3; i++) expect(limiter.admit("shop", "192.0.2.1", now)).toBeNull();
  const refusal = limiter.admit("shop", "192.0.2.1", now);
  expect(refusal).toEqual({ policy: "client", limit: limits.perClient, retryAfterSeconds: 1 });
  expect(limiter.admit("shop", "192.0.2.1", now + 999)).not.toBeNull();
  expect(limiter.admit("shop", "192.0.2.1", now + 1000 + 999)).toBeNull();
});

test("another client, or the same client on another app, has its own bucket", () => {
  const limiter = new ProxyRateLimiter(limits);
  for (let i = 0; i < 3; i++) limiter.admit("shop", "192.0.2.1", 0);
  expect(limiter.admit("shop", "192.0.2.1", 0)?.policy).toBe("client");
  expect(limiter.admit("shop", "192.0.2.2", 0)).toBeNull();
  expect(limiter.admit("blog", "192.0.2.1", 0)).toBeNull();
});

test("the host limit applies across clients, and a refused client does not spend the host's tokens", () => {
  const limiter = new ProxyRateLimiter(limits);
  for (let i = 0; i < 10; i++) limiter.admit("shop", "192.0.2.1", 0); // 3 let in, 7 refused by the client limit
  expect(limiter.admit("shop", "192.0.2.2", 0)).toBeNull();
  expect(limiter.admit("shop", "192.0.2.3", 0)).toBeNull(); // the host's 5th token
  const refusal = limiter.admit("shop", "192.0.2.4", 0);
  expect(refusal).toEqual({ policy: "host", limit: limits.perHost, retryAfterSeconds: 2 });
});

test("a refusal's fields follow draft-ietf-httpapi-ratelimit-headers-10", () => {
  expect(refusalHeaders({ policy: "client", limit: { burst: 200, refillPerSecond: 100 }, retryAfterSeconds: 1 })).toEqual({
    "retry-after": "1",
    "ratelimit-policy": '"client";q=200;w=2',
    ratelimit: '"client";r=0;t=1',
  });
});

test("a million addresses at once (no bucket refilled, so none can be pruned) keep the limiter's memory bounded", () => {
  const capacity = 50_000;
  const limiter = new ProxyRateLimiter(limits, capacity);
  let largest = 0;
  for (let i = 0; i < 1_000_000; i++) {
    const address = `${(i * 2654435761) >>> 24}.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
    limiter.admit("shop", address, 0);
    if ((i & 0xffff) === 0) largest = Math.max(largest, limiter.size);
  }
  largest = Math.max(largest, limiter.size);
  expect(largest).toBeLessThanOrEqual(capacity + 1);
  expect(largest).toBeGreaterThanOrEqual(capacity * 0.99); // forgotten a hundredth at a time
});
