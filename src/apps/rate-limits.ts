// An app's rate limits at the public proxy, and what its route carries: its own (settings `rateLimits`, four nullable columns
// of `apps`) over the platform's defaults (PLATFORM_PROXY_IP_*, PLATFORM_PROXY_HOST_*). The apps
// service puts the result on the app's route, which is where the proxy reads it per request.
import type { Static } from "@sinclair/typebox";
import type { ProxyRateLimits } from "../proxy/rate-limit";
import type { RoutePolicy } from "../proxy/routes";
import type { AppRow } from "./deployer";
import type { AppRateLimitOverridesSchema, AppRateLimitsSchema } from "./model";

export type RateLimitOverrides = Static<typeof AppRateLimitOverridesSchema>;
/** What settings may send: some fields (null clears one), or null to clear all. */
export type RateLimitsInput = Partial<RateLimitOverrides> | null;
export type RateLimitColumns = Pick<AppRow, "proxyClientBurst" | "proxyClientRps" | "proxyHostBurst" | "proxyHostRps">;

/** The app's own limits as set, or null when it has none. */
export function rateLimitOverridesOf(app: RateLimitColumns): RateLimitOverrides | null {
  const overrides = { clientBurst: app.proxyClientBurst, clientRps: app.proxyClientRps, hostBurst: app.proxyHostBurst, hostRps: app.proxyHostRps };
  return Object.values(overrides).some((value) => value !== null) ? overrides : null;
}

/** The columns after a settings change: a field left out keeps its value, a null one is cleared, and null clears them all. */
export function rateLimitColumnsAfter(app: RateLimitColumns, input: RateLimitsInput | undefined): RateLimitColumns {
  const kept = <Value>(given: Value | undefined, current: Value) => (given === undefined ? current : given);
  if (input === null) return { proxyClientBurst: null, proxyClientRps: null, proxyHostBurst: null, proxyHostRps: null };
  return {
    proxyClientBurst: kept(input?.clientBurst, app.proxyClientBurst),
    proxyClientRps: kept(input?.clientRps, app.proxyClientRps),
    proxyHostBurst: kept(input?.hostBurst, app.proxyHostBurst),
    proxyHostRps: kept(input?.hostRps, app.proxyHostRps),
  };
}

export function sameRateLimits(a: RateLimitColumns, b: RateLimitColumns): boolean {
  return a.proxyClientBurst === b.proxyClientBurst && a.proxyClientRps === b.proxyClientRps && a.proxyHostBurst === b.proxyHostBurst && a.proxyHostRps === b.proxyHostRps;
}

/** The limits the proxy applies to the app: the defaults themselves when it has none of its own. */
export function effectiveRateLimits(app: RateLimitColumns, defaults: ProxyRateLimits): ProxyRateLimits {
  if (!rateLimitOverridesOf(app)) return defaults;
  return {
    perClient: { burst: app.proxyClientBurst ?? defaults.perClient.burst, refillPerSecond: app.proxyClientRps ?? defaults.perClient.refillPerSecond },
    perHost: { burst: app.proxyHostBurst ?? defaults.perHost.burst, refillPerSecond: app.proxyHostRps ?? defaults.perHost.refillPerSecond },
  };
}

/** What the app's route carries: its limits and HTTPS rules (settings `rateLimits`, `httpsRedirect`, `hsts`). */
export function routePolicyOf(app: RateLimitColumns & Pick<AppRow, "httpsRedirect" | "hsts">, defaults: ProxyRateLimits): RoutePolicy {
  return { rateLimits: effectiveRateLimits(app, defaults), httpsRedirect: app.httpsRedirect, hsts: app.hsts };
}

/** The limits as the App resource shows them (`effectiveRateLimits`). */
export function rateLimitsView(limits: ProxyRateLimits): Static<typeof AppRateLimitsSchema> {
  return { clientBurst: limits.perClient.burst, clientRps: limits.perClient.refillPerSecond, hostBurst: limits.perHost.burst, hostRps: limits.perHost.refillPerSecond };
}
