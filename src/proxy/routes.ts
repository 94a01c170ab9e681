// The public proxy's routing table: which upstream address serves each subdomain, under which
// rate limits. The apps service updates it whenever an app's serving container or its limits
// change. The proxy runs on a thread of its own (./thread.ts) with a copy of this table: every
// change is told to `onChange`, and `apply` makes the same change in the copy. The copy is told
// how to look up an app that has no serving container (stopped, crashed, never released), so that
// the proxy can say "not running" rather than "no such app" (src/proxy-worker.ts).
import type { ProxyRateLimits } from "./rate-limit";

export interface Upstream {
  host: string;
  port: number;
  /** The app's limits: the platform defaults with its own overrides; absent, the defaults. */
  rateLimits?: ProxyRateLimits;
  /** Plain HTTP is redirected to HTTPS once a certificate serves the host. */
  httpsRedirect?: boolean;
  /** HTTPS answers carry Strict-Transport-Security. */
  hsts?: boolean;
}

/** What an app's settings say about how the proxy treats its requests. */
export type RoutePolicy = Pick<Upstream, "rateLimits" | "httpsRedirect" | "hsts">;

/** What the proxy needs to know of an app that is published at a subdomain but has no route now. */
export interface UnroutedApp {
  status: string;
}

/**
 * The subdomain a Host header names under the platform domain: `Shop.Apps.Example.com.:8080`
 * with domain `apps.example.com` is `shop`. Case, port and a trailing dot do not matter; a host
 * outside the domain, the domain itself or a nested name (`a.b.<domain>`) is null.
 */
export function subdomainOf(hostHeader: string | null, domain: string): string | null {
  const host = hostNameOf(hostHeader); // an IP literal names no app
  if (host === null) return null;
  const suffix = `.${domain.toLowerCase().replace(/\.$/, "")}`;
  if (!host.endsWith(suffix)) return null;
  const subdomain = host.slice(0, -suffix.length);
  return subdomain && !subdomain.includes(".") ? subdomain : null;
}

/** A Host header as a host name: lowercase, without its port or a trailing dot; null for an IP literal. */
export function hostNameOf(hostHeader: string | null): string | null {
  if (!hostHeader) return null;
  const host = hostHeader.trim().toLowerCase();
  if (host.startsWith("[")) return null;
  return host.replace(/:\d*$/, "").replace(/\.$/, "");
}

/** The route of the platform's own API and dashboard at PLATFORM_API_DOMAIN: no app can have this subdomain. */
export const API_ROUTE = "\u0000api";

/** One change of the table, as made in a copy of it. */
export type RouteChange =
  | { kind: "set"; subdomain: string; upstream: Upstream }
  | { kind: "delete"; subdomain: string }
  /** The subdomain no longer names its app: deleted, or given another subdomain (see vacate). */
  | { kind: "vacate"; subdomain: string }
  | { kind: "api"; domain: string; upstream: Upstream }
  | { kind: "domain"; domain: string; subdomain: string | null };

export class ProxyRoutes {
  private readonly bySubdomain = new Map<string, Upstream>();
  /** PLATFORM_API_DOMAIN, routed to API_ROUTE ahead of any app. */
  private apiDomain: string | null = null;
  /** An app's own domains (custom domains), each to the subdomain its app is routed by. */
  private readonly domains = new Map<string, string>();
  private lookupUnrouted: (subdomain: string) => UnroutedApp | undefined = () => undefined;
  /** Told of every change, once made. */
  onChange: ((change: RouteChange) => void) | null = null;

  /** Makes a change told by another table's onChange. */
  apply(change: RouteChange) {
    switch (change.kind) {
      case "set":
        this.bySubdomain.set(change.subdomain, change.upstream);
        break;
      case "delete":
      case "vacate":
        this.bySubdomain.delete(change.subdomain);
        break;
      case "api":
        this.apiDomain = change.domain;
        this.bySubdomain.set(API_ROUTE, change.upstream);
        break;
      case "domain":
        if (change.subdomain === null) this.domains.delete(change.domain);
        else this.domains.set(change.domain, change.subdomain);
        break;
    }
    this.onChange?.(change);
  }

  /** The changes that make an empty table this one. */
  changes(): RouteChange[] {
    const changes: RouteChange[] = [];
    for (const [subdomain, upstream] of this.bySubdomain) {
      if (subdomain === API_ROUTE) changes.push({ kind: "api", domain: this.apiDomain!, upstream });
      else changes.push({ kind: "set", subdomain, upstream });
    }
    for (const [domain, subdomain] of this.domains) changes.push({ kind: "domain", domain, subdomain });
    return changes;
  }

  /** Requests for `domain` go to the platform's API at `upstream`. */
  setApi(domain: string, upstream: Upstream) {
    this.apply({ kind: "api", domain, upstream });
  }

  /**
   * The route a Host names that does not change while the platform runs: the API domain's, or an
   * app's subdomain (`subdomainOf`). Null for any other host (perhaps an app's own domain).
   */
  fixedRouteOf(hostHeader: string | null, domain: string): string | null {
    if (this.apiDomain !== null && hostNameOf(hostHeader) === this.apiDomain) return API_ROUTE;
    return subdomainOf(hostHeader, domain);
  }

  set(subdomain: string, upstream: Upstream) {
    this.apply({ kind: "set", subdomain, upstream });
  }

  delete(subdomain: string) {
    if (this.bySubdomain.has(subdomain)) this.apply({ kind: "delete", subdomain });
  }

  /**
   * The app published at the subdomain is deleted or moved to another one: its route goes, and the
   * proxy forgets what it counted there, so that the next app given this subdomain starts afresh.
   */
  vacate(subdomain: string) {
    this.apply({ kind: "vacate", subdomain });
  }

  /** New limits and HTTPS rules for the app routed at the subdomain, from its next request; nothing when it has no route. */
  setPolicy(subdomain: string, policy: RoutePolicy) {
    const upstream = this.bySubdomain.get(subdomain);
    if (upstream) this.set(subdomain, { ...upstream, ...policy });
  }

  get(subdomain: string): Upstream | undefined {
    return this.bySubdomain.get(subdomain);
  }

  /** `domain` reaches the app published at `subdomain`, whatever serves it now. */
  setDomain(domain: string, subdomain: string) {
    this.apply({ kind: "domain", domain, subdomain });
  }

  deleteDomain(domain: string) {
    if (this.domains.has(domain)) this.apply({ kind: "domain", domain, subdomain: null });
  }

  /** The subdomain of the app whose own domain the Host header names, or null. */
  subdomainOfDomain(hostHeader: string | null): string | null {
    if (!this.domains.size) return null;
    const host = hostNameOf(hostHeader);
    return host === null ? null : (this.domains.get(host) ?? null);
  }

  /** How to find an app by its subdomain when it has no route (the apps service sets it). */
  setUnroutedLookup(lookup: (subdomain: string) => UnroutedApp | undefined) {
    this.lookupUnrouted = lookup;
  }

  /** An app published at the subdomain that has no serving container now, or undefined for none. */
  unrouted(subdomain: string): UnroutedApp | undefined {
    return this.lookupUnrouted(subdomain);
  }
}
