// Whether tenant apps can toss cookies at the dashboard. A page of `<app>.<PLATFORM_DOMAIN>` may set
// a cookie with `Domain=` any parent of its name short of a public suffix, and browsers send it to
// every host under that parent, whatever the port. When the dashboard is reached by a name under
// the same registrable domain as the apps, an app can plant or shadow its session cookie over
// plain HTTP (over HTTPS the `__Host-` prefix stops it: ./service.ts). The start warns then.
//
// The registrable domain is judged by a small rule, not the Public Suffix List: the last two
// labels, or the last three under a few well-known two-label suffixes (co.uk, com.au...). It errs
// toward warning: two names under a public suffix it does not know (a.example.co.za and
// b.other.co.za, say) are taken to share one.
import type { Config } from "../config";
import { isIpLiteral } from "../http/trusted-proxies";

const TWO_LABEL_SUFFIXES = new Set([
  "co.uk", "org.uk", "ac.uk", "gov.uk", "com.au", "net.au", "org.au", "co.nz", "co.jp", "com.br", "com.cn", "co.in", "co.za",
]);

/** "a.b.example.co.uk" -> "example.co.uk"; null for IP literals, single labels and localhost names. */
export function registrableDomainOf(host: string): string | null {
  const name = host.toLowerCase().replace(/\.$/, "");
  if (isIpLiteral(name) || name === "localhost" || name.endsWith(".localhost")) return null;
  const labels = name.split(".");
  if (labels.length < 2) return null;
  const kept = TWO_LABEL_SUFFIXES.has(labels.slice(-2).join(".")) ? 3 : 2;
  return labels.length < kept ? null : labels.slice(-kept).join(".");
}

/** The names the dashboard answers browsers at that share a registrable domain with the apps. */
export function dashboardNamesSharingAppsDomain(config: Pick<Config, "domain" | "apiHosts" | "tls">): string[] {
  const appsDomain = registrableDomainOf(config.domain);
  if (appsDomain === null) return [];
  const dashboardNames = new Set([...(config.tls.apiDomain ? [config.tls.apiDomain] : []), ...config.apiHosts.filter((name) => name !== "*")]);
  return [...dashboardNames].filter((name) => registrableDomainOf(name) === appsDomain);
}

/** The start's warning line, or null when no dashboard name shares the apps' registrable domain. */
export function sharedCookieDomainWarning(config: Pick<Config, "domain" | "apiHosts" | "tls">): string | null {
  const shared = dashboardNamesSharingAppsDomain(config);
  if (shared.length === 0) return null;
  return (
    `[auth] WARNING: apps (*.${config.domain}) and the dashboard (${shared.join(", ")}) share the registrable domain ` +
    `${registrableDomainOf(config.domain)}: an app can set cookies the dashboard receives. Over HTTPS the session cookie is ` +
    "__Host- prefixed and safe from them; over plain HTTP it is not. Reach the dashboard by a name under another domain " +
    "(PLATFORM_API_DOMAIN, PLATFORM_API_HOSTS)."
  );
}
