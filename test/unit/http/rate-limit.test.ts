// The in-memory token buckets under many callers: a request costs the same with 10 or 100,000
// buckets around, the map stays bounded when none is full, and what is forgotten is what no
// longer limits anyone. Pure: no server (the limits as the server applies them are in test/integration/rate-limits.test.ts).
import { describe, expect, test } from "bun:test";
import { TokenBuckets } from "../../../src/http/rate-limit";

// One request at once, one more a minute: like the failed-authentication limit.
const STRICT = { burst: 1, refillPerSecond: 1 / 60 };

describe("token buckets", () => {
  test("a bucket refuses past its burst with Retry-After, and refills", () => {
    const buckets = new TokenBuckets({ burst: 2, refillPerSecond: 1 });
    expect(buckets.take("a", 0)).toEqual({ allowed: true });
    expect(buckets.take("a", 0)).toEqual({ allowed: true });
    expect(buckets.take("a", 0)).toEqual({ allowed: false, retryAfterSeconds: 1 });
    expect(buckets.check("a", 1000)).toEqual({ allowed: true });
    expect(buckets.take("b", 0)).toEqual({ allowed: true });
  });

  test("with 20,000 buckets that are not full, a take() stays cheap", () => {
    const buckets = new TokenBuckets(STRICT);
    for (let i = 0; i < 20_000; i++) buckets.take(`warm ${i}`, 0);
    const started = performance.now();
    for (let i = 0; i < 20_000; i++) buckets.take(`address ${i}`, i);
    const perTakeMicroseconds = ((performance.now() - started) * 1000) / 20_000;
    expect(perTakeMicroseconds).toBeLessThan(20);
  });

  test("full buckets are forgotten once there are many", () => {
    const buckets = new TokenBuckets(STRICT);
    for (let i = 0; i < 15_000; i++) buckets.take(`old ${i}`, 0);
    // Two minutes on, every one of them is full again: the next take() forgets them.
    buckets.take("new", 120_000);
    expect(buckets.size).toBe(1);
  });

  test("when none is full the map is still bounded, and the least recently used is what goes", () => {
    const buckets = new TokenBuckets(STRICT, 1000);
    expect(buckets.take("busy", 0).allowed).toBe(true);
    for (let i = 0; i < 5000; i++) {
      buckets.take(`address ${i}`, 0);
      // "busy" keeps asking, so it stays among the most recent and keeps its empty bucket.
      if (i % 100 === 0) expect(buckets.take("busy", 0).allowed).toBe(false);
    }
    expect(buckets.size).toBe(1000);
    expect(buckets.take("address 0", 0).allowed).toBe(true);
  });
});
