// What a key may do to keys, so that holding a limited key never gives more than its limits:
// it may not lift its own quota or enabled flag, a key with a quota or an expiry may not create
// a key with more quota or a later expiry than it has itself, nor lift another key's limits (or
// one key could free the key that made it). Pure: the service reads the rows and turns a refusal
// into 403 FORBIDDEN.
import type { CreateKeyInput, UpdateKeyInput } from "./service";

export interface IssuerLimits {
  remaining: number | null;
  refillAmount: number | null;
  refillIntervalSeconds: number | null;
  expiresAt: number | null;
}

/** Why a key may not make this change to itself, or null when it may. */
export function selfUpdateRefusal(input: UpdateKeyInput): string | null {
  const locked = (["remaining", "refillAmount", "refillInterval", "enabled"] as const).filter((field) => input[field] !== undefined);
  if (locked.length === 0) return null;
  return (
    `An API key cannot change its own ${locked.join(", ")}: ` +
    "change remaining, refill settings or enabled with another key or from the dashboard"
  );
}

/** Why a key with these limits may not create a key with this input, or null when it may. */
export function issueRefusal(issuer: IssuerLimits, input: CreateKeyInput, now: number): string | null {
  const reasons: string[] = [];
  if (issuer.expiresAt !== null) {
    const expiresAt = input.expiresIn == null ? null : now + input.expiresIn * 1000;
    if (expiresAt === null || expiresAt > issuer.expiresAt) {
      reasons.push(`expire by ${new Date(issuer.expiresAt).toISOString()} (expiresIn at most ${Math.max(0, Math.floor((issuer.expiresAt - now) / 1000))})`);
    }
  }
  if (issuer.remaining !== null) {
    if (input.remaining == null || input.remaining > issuer.remaining) reasons.push(`have remaining of at most ${issuer.remaining}`);
    if (input.refillAmount != null) {
      const refills = issuer.refillAmount !== null && issuer.refillIntervalSeconds !== null;
      if (!refills || input.refillAmount > issuer.refillAmount! || (input.refillInterval ?? 0) < issuer.refillIntervalSeconds!) {
        reasons.push(
          refills
            ? `refill at most ${issuer.refillAmount} every ${issuer.refillIntervalSeconds} seconds or more`
            : "have no refill",
        );
      }
    }
  }
  if (reasons.length === 0) return null;
  return `This key is limited, so the keys it creates may not exceed its limits: a new key must ${reasons.join(" and ")}`;
}

export interface TargetLimits {
  enabled: boolean;
  remaining: number | null;
  refillAmount: number | null;
  refillIntervalSeconds: number | null;
}

/** Why a key with these limits may not make this change to another key, or null when it may. */
export function siblingUpdateRefusal(issuer: IssuerLimits, target: TargetLimits, input: UpdateKeyInput): string | null {
  if (issuer.remaining === null && issuer.expiresAt === null) return null;
  const reasons: string[] = [];
  if (input.remaining !== undefined && (input.remaining === null || (target.remaining !== null && input.remaining > target.remaining))) {
    reasons.push("raise its remaining");
  }
  const refillAmount = input.refillAmount !== undefined ? input.refillAmount : target.refillAmount;
  const refillInterval = input.refillInterval !== undefined ? input.refillInterval : target.refillIntervalSeconds;
  const refillChanged = input.refillAmount !== undefined || input.refillInterval !== undefined;
  if (refillChanged && refillAmount != null) {
    const hadRefill = target.refillAmount !== null && target.refillIntervalSeconds !== null;
    if (!hadRefill || refillAmount > target.refillAmount! || (refillInterval ?? 0) < target.refillIntervalSeconds!) {
      reasons.push("set or speed up its refill");
    }
  }
  if (input.enabled === true && !target.enabled) reasons.push("enable it");
  if (reasons.length === 0) return null;
  return `This key has a quota or an expiry, so it may not lift another key's limits: it may not ${reasons.join(", ")}`;
}
