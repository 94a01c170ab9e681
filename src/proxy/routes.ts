// The public proxy's routing table: which upstream address serves each subdomain, under which
// rate limits. The apps service updates it whenever an app's serving container or its limits
// change, and tells it how to look up an app that has no serving container (stopped, crashed,
// never released), so that the proxy can say "not running" rather than "no such app".
import type { ProxyRateLimits } from "./rate-limit";

export interface Upstream {
  host: string;
  port: number;
  /** The app's limits: the platform defaults with its own overrides; absent, the defaults. */
  rateLimits?: ProxyRateLimits;
}

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

export class ProxyRoutes {
  private readonly bySubdomain = new Map<string, Upstream>();
  /** An app's own domains (custom domains), each to the subdomain its app is routed by. */
  private readonly domains = new Map<string, string>();
  private lookupUnrouted: (subdomain: string) => UnroutedApp | undefined = () => undefined;

  set(subdomain: string, upstream: Upstream) {
    this.bySubdomain.set(subdomain, upstream);
  }

  delete(subdomain: string) {
    this.bySubdomain.delete(subdomain);
  }

  /** New limits for the app routed at the subdomain, from its next request; nothing when it has no route. */
  setRateLimits(subdomain: string, rateLimits: ProxyRateLimits) {
    const upstream = this.bySubdomain.get(subdomain);
    if (upstream) this.bySubdomain.set(subdomain, { ...upstream, rateLimits });
  }

  get(subdomain: string): Upstream | undefined {
    return this.bySubdomain.get(subdomain);
  }

  /** `domain` reaches the app published at `subdomain`, whatever serves it now. */
  setDomain(domain: string, subdomain: string) {
    this.domains.set(domain, subdomain);
  }

  deleteDomain(domain: string) {
    this.domains.delete(domain);
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
