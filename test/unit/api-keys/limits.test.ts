// What a limited key may do to another key: never lift its limits (the sibling recipe of issue 9).
import { describe, expect, test } from "bun:test";
import { siblingUpdateRefusal } from "../../../src/api-keys/limits";

const unlimited = { remaining: null, refillAmount: null, refillIntervalSeconds: null, expiresAt: null };
const quota = { ...unlimited, remaining: 3 };
const expiring = { ...unlimited, expiresAt: Date.now() + 60_000 };
const target = { enabled: true, remaining: 1, refillAmount: null, refillIntervalSeconds: null };

describe("siblingUpdateRefusal", () => {
  test("the recipe: a key with a quota may not make another key unlimited", () => {
    expect(siblingUpdateRefusal(quota, target, { remaining: null })).toContain("raise its remaining");
  });

  test("a key with a quota or an expiry may not raise remaining, set or speed up a refill, or enable", () => {
    for (const issuer of [quota, expiring]) {
      expect(siblingUpdateRefusal(issuer, target, { remaining: 2 })).toContain("raise its remaining");
      expect(siblingUpdateRefusal(issuer, target, { refillAmount: 1, refillInterval: 60 })).toContain("refill");
      const refilling = { ...target, refillAmount: 5, refillIntervalSeconds: 60 };
      expect(siblingUpdateRefusal(issuer, refilling, { refillAmount: 6 })).toContain("refill");
      expect(siblingUpdateRefusal(issuer, refilling, { refillInterval: 30 })).toContain("refill");
      expect(siblingUpdateRefusal(issuer, { ...target, enabled: false }, { enabled: true })).toContain("enable it");
    }
  });

  test("lowering limits, renaming and disabling stay allowed", () => {
    const refilling = { ...target, remaining: 10, refillAmount: 5, refillIntervalSeconds: 60 };
    for (const input of [
      { remaining: 0 },
      { remaining: 10 },
      { refillAmount: 4, refillInterval: 120 },
      { refillAmount: null, refillInterval: null },
      { enabled: false },
      { name: "renamed", metadata: { team: "a" } },
    ]) {
      expect(siblingUpdateRefusal(quota, refilling, input)).toBeNull();
    }
    // An unlimited target given a quota is limited, not lifted.
    expect(siblingUpdateRefusal(quota, { ...target, remaining: null }, { remaining: 5 })).toBeNull();
  });

  test("an unlimited key (or a session) is not restricted", () => {
    expect(siblingUpdateRefusal(unlimited, { ...target, enabled: false }, { remaining: null, enabled: true, refillAmount: 9, refillInterval: 1 })).toBeNull();
  });
});
