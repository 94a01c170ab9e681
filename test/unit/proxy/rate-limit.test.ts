// The public proxy's limiter: per client address of an app and per app, bounded in memory.
import { expect, test } from "bun:test";
import { ProxyRateLimiter, clientBucketOf, clientKey, refusalHeaders } from "../../../src/proxy/rate-limit";
import { ProxyRoutes } from "../../../src/proxy/routes";

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
  for (let i = 0; i < 3; i++) expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), undefined, now)).toBeNull();
  const refusal = limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), undefined, now);
  expect(refusal).toEqual({ policy: "client", limit: limits.perClient, retryAfterSeconds: 1 });
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), undefined, now + 999)).not.toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), undefined, now + 1000 + 999)).toBeNull();
});

test("another client, or the same client on another app, has its own bucket", () => {
  const limiter = new ProxyRateLimiter(limits);
  for (let i = 0; i < 3; i++) limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), undefined, 0);
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), undefined, 0)?.policy).toBe("client");
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.2"), undefined, 0)).toBeNull();
  expect(limiter.admit("blog", clientBucketOf("blog", "192.0.2.1"), undefined, 0)).toBeNull();
});

test("the host limit applies across clients, and a refused client does not spend the host's tokens", () => {
  const limiter = new ProxyRateLimiter(limits);
  for (let i = 0; i < 10; i++) limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), undefined, 0); // 3 let in, 7 refused by the client limit
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.2"), undefined, 0)).toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.3"), undefined, 0)).toBeNull(); // the host's 5th token
  const refusal = limiter.admit("shop", clientBucketOf("shop", "192.0.2.4"), undefined, 0);
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
    limiter.admit("shop", clientBucketOf("shop", address), undefined, 0);
    if ((i & 0xffff) === 0) largest = Math.max(largest, limiter.size);
  }
  largest = Math.max(largest, limiter.size);
  expect(largest).toBeLessThanOrEqual(capacity + 1);
  expect(largest).toBeGreaterThanOrEqual(capacity * 0.99); // forgotten a hundredth at a time
});

// An app's own limits (its settings' `rateLimits`) come with each request, from its route.
const defaults = { perClient: { burst: 3, refillPerSecond: 1 }, perHost: { burst: 100, refillPerSecond: 10 } };

test("an app's lower limits refuse earlier, and the refusal shows the app's numbers", () => {
  const limiter = new ProxyRateLimiter(defaults);
  const strict = { perClient: { burst: 2, refillPerSecond: 1 }, perHost: { burst: 4, refillPerSecond: 1 } };
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), strict, 0)).toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), strict, 0)).toBeNull();
  const refusal = limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), strict, 0);
  expect(refusal).toEqual({ policy: "client", limit: strict.perClient, retryAfterSeconds: 1 });
  expect(refusalHeaders(refusal!)["ratelimit-policy"]).toBe('"client";q=2;w=2');
  // Two tokens of the app's four are spent: two more clients, then the app's own limit refuses.
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.2"), strict, 0)).toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.3"), strict, 0)).toBeNull();
  const hostRefusal = limiter.admit("shop", clientBucketOf("shop", "192.0.2.4"), strict, 0);
  expect(hostRefusal).toEqual({ policy: "host", limit: strict.perHost, retryAfterSeconds: 1 });
  expect(refusalHeaders(hostRefusal!)["ratelimit-policy"]).toBe('"host";q=4;w=4');
  // Another app keeps the defaults.
  for (let i = 0; i < 3; i++) expect(limiter.admit("blog", clientBucketOf("blog", "192.0.2.1"), undefined, 0)).toBeNull();
  expect(limiter.admit("blog", clientBucketOf("blog", "192.0.2.1"), undefined, 0)?.limit).toEqual(defaults.perClient);
});

test("an app's higher limits let more through than the defaults", () => {
  const limiter = new ProxyRateLimiter(defaults);
  const generous = { perClient: { burst: 10, refillPerSecond: 5 }, perHost: defaults.perHost };
  for (let i = 0; i < 10; i++) expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), generous, 0)).toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), generous, 0)?.policy).toBe("client");
  // Its refill too: 5 tokens a second, where the default gives one.
  for (let i = 0; i < 5; i++) expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), generous, 1000)).toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), generous, 1000)).not.toBeNull();
});

test("changed limits apply to the app's existing buckets from the next request; what a client spent lately carries over", () => {
  const limiter = new ProxyRateLimiter(defaults);
  const before = { perClient: { burst: 5, refillPerSecond: 1 }, perHost: defaults.perHost };
  for (let i = 0; i < 3; i++) expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), before, 0)).toBeNull();
  // Lowered to a burst of 1: the 3 spent lately are more than it allows, so the client waits for a token.
  const lowered = { perClient: { burst: 1, refillPerSecond: 1 }, perHost: defaults.perHost };
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), lowered, 0)).toEqual({ policy: "client", limit: lowered.perClient, retryAfterSeconds: 1 });
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), lowered, 1000)).toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), lowered, 1000)).not.toBeNull();
  // Raised: a bucket that had filled up under the old limit is full under the new one.
  const raised = { perClient: { burst: 8, refillPerSecond: 1 }, perHost: defaults.perHost };
  for (let i = 0; i < 8; i++) expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), raised, 10_000)).toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), raised, 10_000)?.limit).toEqual(raised.perClient);
  // Back to the defaults (the override cleared), and refused under them.
  for (let i = 0; i < 3; i++) expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), undefined, 20_000)).toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), undefined, 20_000)?.limit).toEqual(defaults.perClient);
  // Raised at once, the 3 spent count against the new burst of 10: 7 more.
  const wider = { perClient: { burst: 10, refillPerSecond: 1 }, perHost: defaults.perHost };
  for (let i = 0; i < 7; i++) expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), wider, 20_000)).toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), wider, 20_000)).not.toBeNull();
  // A new rate refills from the next request: 10 ms at 100 a second is a token, at 1 a second it is not.
  const faster = { perClient: { burst: 10, refillPerSecond: 100 }, perHost: defaults.perHost };
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), faster, 20_010)).toBeNull();
  expect(limiter.admit("shop", clientBucketOf("shop", "192.0.2.1"), faster, 20_010)).not.toBeNull();
});

test("an app's route carries its limits; new ones replace them in place, and an app with no route gets none", () => {
  const routes = new ProxyRoutes();
  routes.set("shop", { host: "10.0.0.2", port: 3000 });
  const strict = { perClient: { burst: 2, refillPerSecond: 1 }, perHost: defaults.perHost };
  routes.setPolicy("shop", { rateLimits: strict });
  routes.setPolicy("stopped", { rateLimits: strict });
  expect(routes.get("shop")).toEqual({ host: "10.0.0.2", port: 3000, rateLimits: strict });
  expect(routes.get("stopped")).toBeUndefined();
});
