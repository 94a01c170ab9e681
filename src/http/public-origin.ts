// The origin the platform's API is reached at from outside, for URLs it hands out (deploy hooks,
// webhooks) that other systems call with a secret in them. With PLATFORM_API_DOMAIN that is the
// API domain over HTTPS (the proxy redirects plain HTTP there), whatever the request came in by;
// otherwise the address the caller used, as a trusted front proxy reports it.
import type { Config } from "../config";
import { requestSourceOf } from "./request-source";

const HTTPS_DEFAULT_PORT = 443;

export function apiPublicOrigin(config: Pick<Config, "tls" | "apiTrustedProxies">, server: Parameters<typeof requestSourceOf>[1], request: Request): string {
  const { apiDomain, port } = config.tls;
  if (apiDomain) return `https://${apiDomain}${port === HTTPS_DEFAULT_PORT ? "" : `:${port}`}`;
  const source = requestSourceOf(config, server, request);
  return `${source.https ? "https" : "http"}://${source.host}`;
}
