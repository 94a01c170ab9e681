// Token buckets kept in memory, one per key (client address, API key...). A bucket holds up to
// `burst` tokens and gains `refillPerSecond` back over time; a request takes one. The limit is the
// set's own, or one given per call (the public proxy's per-app limits). And a bound on how much
// expensive work (password hashing) runs at once, with a bounded queue behind it.
import type { RateLimit } from "../config";

interface Bucket {
  tokens: number;
  updatedAt: number;
  /** The limit it was last taken under: what "full" means when pruning, and how much it has spent. */
  limit: RateLimit;
  /** When it last moved to the recently used end of the order. */
  movedAt: number;
}

export type TakeResult = { allowed: true } | { allowed: false; retryAfterSeconds: number };
const ALLOWED: TakeResult = Object.freeze({ allowed: true });

/** Past this many buckets, full ones are forgotten: a missing bucket is a full one. */
const PRUNE_ABOVE = 10_000;
/** ...at most this often, so that many busy buckets do not make every request scan them all. */
const PRUNE_INTERVAL_MS = 10_000;
/**
 * The most buckets kept even when none is full (many addresses failing at once): past it the
 * least recently used are forgotten, which gives them a full bucket again. Bounds the memory.
 */
const MAX_BUCKETS = 100_000;
/**
 * ...a hundredth of the capacity at a time. Each iterator of Bun's Map walks past the entries
 * deleted ahead of it until the map is rehashed, so forgetting one per take() made a flood of new
 * addresses quadratic: a million took 76 s where this takes about 1.
 */
const FORGET_FRACTION = 100;
/**
 * A bucket moves to the recently used end at most this often: moving it on every take (a delete
 * and a set) was most of the public proxy's limiter cost, and "recent" to the second is enough.
 */
const REORDER_AFTER_MS = 1_000;

/**
 * The tokens of `bucket` at `now` under `limit`, refilled at that limit's rate. What it has spent
 * lately carries over when the limit changes: a bucket 3 tokens short of its old burst is 3 short
 * of the new one (none left when that is more than the new burst), and a full one is full, as a
 * forgotten bucket would be. Under an unchanged limit that is the plain refill.
 */
function tokensAt(bucket: Bucket, now: number, limit: RateLimit): number {
  const spent = bucket.limit.burst - bucket.tokens - ((now - bucket.updatedAt) / 1000) * limit.refillPerSecond;
  return Math.max(0, limit.burst - Math.max(0, spent));
}

function retryAfter(tokens: number, limit: RateLimit): number {
  if (limit.refillPerSecond <= 0) return 3600;
  return Math.max(1, Math.ceil((1 - tokens) / limit.refillPerSecond));
}

export class TokenBuckets {
  /** In least recently used order (to the second): take() moves a bucket to the end. */
  private readonly buckets = new Map<string, Bucket>();
  private prunedAt = 0;

  constructor(
    private readonly limit: RateLimit,
    private readonly capacity = MAX_BUCKETS,
  ) {}

  get size(): number {
    return this.buckets.size;
  }

  /** Would a request be let through now? Takes nothing. */
  check(id: string, now = Date.now(), limit = this.limit): TakeResult {
    const bucket = this.buckets.get(id);
    const tokens = bucket ? tokensAt(bucket, now, limit) : limit.burst;
    return tokens >= 1 ? ALLOWED : { allowed: false, retryAfterSeconds: retryAfter(tokens, limit) };
  }

  /** Takes a token from the bucket of `id`, under `limit` (the set's own unless given). */
  take(id: string, now = Date.now(), limit = this.limit): TakeResult {
    let bucket = this.buckets.get(id);
    if (bucket) {
      bucket.tokens = tokensAt(bucket, now, limit);
      bucket.updatedAt = now;
      bucket.limit = limit;
      if (now - bucket.movedAt >= REORDER_AFTER_MS) {
        bucket.movedAt = now;
        this.buckets.delete(id);
        this.buckets.set(id, bucket);
      }
    } else {
      if (this.buckets.size >= PRUNE_ABOVE && now - this.prunedAt >= PRUNE_INTERVAL_MS) this.pruneFull(now);
      if (this.buckets.size >= this.capacity) this.forgetLeastRecentlyUsed();
      bucket = { tokens: limit.burst, updatedAt: now, limit, movedAt: now };
      this.buckets.set(id, bucket);
    }
    if (bucket.tokens < 1) return { allowed: false, retryAfterSeconds: retryAfter(bucket.tokens, limit) };
    bucket.tokens -= 1;
    return ALLOWED;
  }

  /**
   * Returns a token taken for an attempt that turned out not to count (a right password): taking
   * before the attempt and giving back after is what keeps parallel attempts from all passing.
   */
  giveBack(id: string, now = Date.now()) {
    const bucket = this.buckets.get(id);
    if (!bucket) return;
    bucket.tokens = Math.min(bucket.limit.burst, tokensAt(bucket, now, bucket.limit) + 1);
    bucket.updatedAt = now;
  }

  private forgetLeastRecentlyUsed() {
    let count = Math.ceil(this.capacity / FORGET_FRACTION);
    for (const id of this.buckets.keys()) {
      this.buckets.delete(id);
      if (--count <= 0) break;
    }
  }

  private pruneFull(now: number) {
    this.prunedAt = now;
    for (const [id, bucket] of this.buckets) {
      if (tokensAt(bucket, now, bucket.limit) >= bucket.limit.burst) this.buckets.delete(id);
    }
  }
}

export type AcquireResult = { acquired: true; release: () => void } | { acquired: false };

/**
 * At most `concurrency` holders at once; up to `queueLimit` more wait in line (first come, first
 * served), and past that acquire() answers at once that there is no room, so a flood is refused
 * rather than held in memory.
 */
export class ConcurrencyLimit {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly concurrency: number,
    readonly queueLimit: number,
  ) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  async acquire(): Promise<AcquireResult> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.queueLimit) return { acquired: false };
      // The releasing holder hands its place over, so `running` stays as it is.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    let released = false;
    return {
      acquired: true,
      release: () => {
        if (released) return;
        released = true;
        const next = this.waiting.shift();
        if (next) next();
        else this.running--;
      },
    };
  }
}
