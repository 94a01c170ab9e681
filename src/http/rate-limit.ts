// Token buckets kept in memory, one per key (client address, API key...). A bucket holds up to
// `burst` tokens and gains `refillPerSecond` back over time; a request takes one.
import type { RateLimit } from "../config";

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export type TakeResult = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Buckets idle this long are full again and can be forgotten. */
const PRUNE_AFTER_SIZE = 10_000;

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly limit: RateLimit) {}

  private refilled(id: string, now: number): Bucket {
    const bucket = this.buckets.get(id);
    if (!bucket) return { tokens: this.limit.burst, updatedAt: now };
    const gained = ((now - bucket.updatedAt) / 1000) * this.limit.refillPerSecond;
    return { tokens: Math.min(this.limit.burst, bucket.tokens + gained), updatedAt: now };
  }

  private retryAfter(bucket: Bucket): number {
    if (this.limit.refillPerSecond <= 0) return 3600;
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.limit.refillPerSecond));
  }

  /** Would a request be let through now? Takes nothing. */
  check(id: string, now = Date.now()): TakeResult {
    const bucket = this.refilled(id, now);
    return bucket.tokens >= 1 ? { allowed: true } : { allowed: false, retryAfterSeconds: this.retryAfter(bucket) };
  }

  take(id: string, now = Date.now()): TakeResult {
    const bucket = this.refilled(id, now);
    if (bucket.tokens < 1) {
      this.buckets.set(id, bucket);
      return { allowed: false, retryAfterSeconds: this.retryAfter(bucket) };
    }
    bucket.tokens -= 1;
    if (this.buckets.size >= PRUNE_AFTER_SIZE) this.pruneFull(now);
    this.buckets.set(id, bucket);
    return { allowed: true };
  }

  private pruneFull(now: number) {
    for (const [id] of this.buckets) {
      if (this.refilled(id, now).tokens >= this.limit.burst) this.buckets.delete(id);
    }
  }
}
