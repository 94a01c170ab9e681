// Decides whether one more request may be counted against a key's usage quota. Pure: the
// caller writes the outcome to the database in the same transaction it read the key in.

export interface QuotaState {
  remaining: number | null;
  refillAmount: number | null;
  refillIntervalSeconds: number | null;
  lastRefillAt: number | null;
  createdAt: number;
}

export type UsageDecision =
  | { allowed: true; remaining: number | null; lastRefillAt: number | null }
  | { allowed: false; retryAfterSeconds: number | null };

export function decideUsage(key: QuotaState, now: number): UsageDecision {
  if (key.remaining === null) return { allowed: true, remaining: null, lastRefillAt: key.lastRefillAt };
  let remaining = key.remaining;
  let lastRefillAt = key.lastRefillAt;
  const refills = key.refillAmount !== null && key.refillIntervalSeconds !== null;
  const nextRefillAt = refills ? (lastRefillAt ?? key.createdAt) + key.refillIntervalSeconds! * 1000 : null;
  if (refills && remaining <= 0 && now >= nextRefillAt!) {
    remaining = key.refillAmount!;
    lastRefillAt = now;
  }
  if (remaining > 0) return { allowed: true, remaining: remaining - 1, lastRefillAt };
  return {
    allowed: false,
    retryAfterSeconds: nextRefillAt === null ? null : Math.max(1, Math.ceil((nextRefillAt - now) / 1000)),
  };
}
