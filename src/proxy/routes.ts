// The public proxy's routing table: which upstream address serves each subdomain. The apps
// service updates it whenever an app's serving container changes.

export interface Upstream {
  host: string;
  port: number;
}

export class ProxyRoutes {
  private readonly bySubdomain = new Map<string, Upstream>();

  set(subdomain: string, upstream: Upstream) {
    this.bySubdomain.set(subdomain, upstream);
  }

  delete(subdomain: string) {
    this.bySubdomain.delete(subdomain);
  }

  /** The upstream for a Host header such as `shop.apps.example.com:8080`, given the platform domain. */
  resolve(hostHeader: string | null, domain: string): Upstream | undefined {
    if (!hostHeader) return undefined;
    const host = hostHeader.replace(/:\d+$/, "").toLowerCase();
    const suffix = `.${domain.toLowerCase()}`;
    if (!host.endsWith(suffix)) return undefined;
    return this.bySubdomain.get(host.slice(0, -suffix.length));
  }
}
