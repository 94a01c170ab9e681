// An app's own limits at the public proxy over the platform's: what settings change, what the
// proxy applies, and what the App resource shows.
import { expect, test } from "bun:test";
import { loadConfig } from "../../../src/config";
import { PROXY_RATE_LIMIT_FIELDS } from "../../../src/apps/model";
import { effectiveRateLimits, rateLimitColumnsAfter, rateLimitOverridesOf, rateLimitsView } from "../../../src/apps/rate-limits";

const none = { proxyClientBurst: null, proxyClientRps: null, proxyHostBurst: null, proxyHostRps: null };
const defaults = { perClient: { burst: 200, refillPerSecond: 100 }, perHost: { burst: 2000, refillPerSecond: 1000 } };

test("settings: a field left out keeps its value, a null one goes back to the default, null clears all", () => {
  const some = rateLimitColumnsAfter(none, { clientBurst: 3, clientRps: 1 });
  expect(some).toEqual({ proxyClientBurst: 3, proxyClientRps: 1, proxyHostBurst: null, proxyHostRps: null });
  expect(rateLimitColumnsAfter(some, undefined)).toEqual(some);
  expect(rateLimitColumnsAfter(some, {})).toEqual(some);
  expect(rateLimitColumnsAfter(some, { hostRps: 50, clientRps: null })).toEqual({ proxyClientBurst: 3, proxyClientRps: null, proxyHostBurst: null, proxyHostRps: 50 });
  expect(rateLimitColumnsAfter(some, null)).toEqual(none);
});

test("the App shows its own limits (null when none) and the ones the proxy applies", () => {
  expect(rateLimitOverridesOf(none)).toBeNull();
  const own = { ...none, proxyClientBurst: 3 };
  expect(rateLimitOverridesOf(own)).toEqual({ clientBurst: 3, clientRps: null, hostBurst: null, hostRps: null });
  expect(rateLimitsView(effectiveRateLimits(own, defaults))).toEqual({ clientBurst: 3, clientRps: 100, hostBurst: 2000, hostRps: 1000 });
});

test("an app without limits of its own shares the defaults themselves", () => {
  expect(effectiveRateLimits(none, defaults)).toBe(defaults);
  const own = effectiveRateLimits({ ...none, proxyHostRps: 5 }, defaults);
  expect(own).toEqual({ perClient: defaults.perClient, perHost: { burst: 2000, refillPerSecond: 5 } });
});

test("the defaults the document names are the platform's", () => {
  const { perClient, perHost } = loadConfig({}).proxyRateLimits;
  const documented: Record<string, number> = Object.fromEntries(Object.entries(PROXY_RATE_LIMIT_FIELDS).map(([field, { platformDefault }]) => [field, platformDefault]));
  expect(documented).toEqual(rateLimitsView({ perClient, perHost }));
});
