// The in-memory token buckets under many callers: a request costs the same with 10 or 100,000
// buckets around, the map stays bounded when none is full, and what is forgotten is what no
// longer limits anyone; a token taken ahead can be given back. And the bound on concurrent work
// (password hashing) with its queue. Pure: no server (the limits as the server applies them are in test/integration/rate-limits.test.ts).
import { describe, expect, test } from "bun:test";
import { ConcurrencyLimit, TokenBuckets } from "../../../src/http/rate-limit";

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

  test("a bucket taken under a limit of its own is pruned when full by that limit, not the set's", () => {
    const buckets = new TokenBuckets({ burst: 5, refillPerSecond: 0 });
    const large = { burst: 500, refillPerSecond: 0 };
    const small = { burst: 1, refillPerSecond: 1 };
    for (let i = 0; i < 100; i++) buckets.take("large", 0, large); // 400 of 500 left: not full
    buckets.take("small", 0, small); // full again a second later
    for (let i = 0; i < 15_000; i++) buckets.take(`address ${i}`, 0); // 4 of 5 left, never refilled
    buckets.take("new", 20_000);
    expect(buckets.size).toBe(15_002); // "small" went; "large" stayed
    // Forgetting "large" would have given it 100 tokens it had spent.
    for (let i = 0; i < 400; i++) expect(buckets.take("large", 20_000, large).allowed).toBe(true);
    expect(buckets.take("large", 20_000, large).allowed).toBe(false);
  });

  test("when none is full the map is still bounded, and the least recently used (to the second) is what goes", () => {
    const buckets = new TokenBuckets(STRICT, 1000);
    expect(buckets.take("busy", 0).allowed).toBe(true);
    // 5,000 new addresses over 50 s, while "busy" asks every second.
    for (let i = 0; i < 5000; i++) {
      buckets.take(`address ${i}`, i * 10);
      // "busy" keeps asking, so it stays among the most recent and keeps its empty bucket.
      if (i % 100 === 0) expect(buckets.take("busy", i * 10).allowed).toBe(false);
    }
    // Forgotten a hundredth at a time once past the capacity.
    expect(buckets.size).toBeGreaterThan(990);
    expect(buckets.size).toBeLessThanOrEqual(1000);
    expect(buckets.take("address 0", 50_000).allowed).toBe(true);
  });
});

describe("giving a token back", () => {
  test("a token taken ahead and given back leaves the bucket as it was, never above its burst", () => {
    const buckets = new TokenBuckets({ burst: 2, refillPerSecond: 0 });
    expect(buckets.take("a", 0).allowed).toBe(true);
    expect(buckets.take("a", 0).allowed).toBe(true);
    expect(buckets.take("a", 0).allowed).toBe(false);
    buckets.giveBack("a", 0);
    expect(buckets.take("a", 0).allowed).toBe(true);
    for (let i = 0; i < 5; i++) buckets.giveBack("a", 0);
    expect(buckets.take("a", 0).allowed).toBe(true);
    expect(buckets.take("a", 0).allowed).toBe(true);
    expect(buckets.take("a", 0).allowed).toBe(false);
  });

  test("giving back to a bucket that was never taken from (or was forgotten) keeps nothing", () => {
    const buckets = new TokenBuckets(STRICT);
    buckets.giveBack("never", 0);
    expect(buckets.size).toBe(0);
  });

  test("parallel attempts that take first cannot all pass: the burst is all there is", () => {
    const buckets = new TokenBuckets({ burst: 5, refillPerSecond: 0 });
    const allowed = Array.from({ length: 60 }, () => buckets.take("address", 0).allowed).filter(Boolean);
    expect(allowed).toHaveLength(5);
  });
});

describe("concurrency limit", () => {
  const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

  test("at most `concurrency` hold a turn; the queue is served in order; past the queue, no turn at once", async () => {
    const limit = new ConcurrencyLimit(2, 2);
    const first = await limit.acquire();
    const second = await limit.acquire();
    expect(first.acquired && second.acquired).toBe(true);
    const order: string[] = [];
    const third = limit.acquire().then((turn) => (order.push("third"), turn));
    const fourth = limit.acquire().then((turn) => (order.push("fourth"), turn));
    expect(await limit.acquire()).toEqual({ acquired: false });
    await tick();
    expect(order).toEqual([]);
    expect([limit.active, limit.queued]).toEqual([2, 2]);
    if (first.acquired) first.release();
    await tick();
    expect(order).toEqual(["third"]);
    if (second.acquired) second.release();
    await tick();
    expect(order).toEqual(["third", "fourth"]);
    expect([limit.active, limit.queued]).toEqual([2, 0]);
    for (const turn of [await third, await fourth]) if (turn.acquired) turn.release();
    expect(limit.active).toBe(0);
  });

  test("releasing twice frees one turn only", async () => {
    const limit = new ConcurrencyLimit(1, 0);
    const turn = await limit.acquire();
    if (turn.acquired) {
      turn.release();
      turn.release();
    }
    expect(limit.active).toBe(0);
    const again = await limit.acquire();
    expect(again.acquired).toBe(true);
    expect(await limit.acquire()).toEqual({ acquired: false });
  });

  test("work run through it never overlaps more than the limit", async () => {
    const limit = new ConcurrencyLimit(3, 100);
    let running = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 40 }, async () => {
        const turn = await limit.acquire();
        if (!turn.acquired) throw new Error("the queue was long enough");
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 2));
        running--;
        turn.release();
      }),
    );
    expect(most).toBe(3);
  });
});
