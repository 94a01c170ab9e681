// What a key may do to keys, so that holding a limited key never gives more than its limits:
// it may not lift its own quota or enabled flag, and a key with a quota or an expiry may not
// create a key with more quota or a later expiry than it has itself. Pure: the service reads
// the rows and turns a refusal into 403 FORBIDDEN.
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
