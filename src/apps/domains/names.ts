// What an app's own domain may be: a host name of two or more DNS labels, taken to lowercase ASCII
// (an internationalised name as punycode, as browsers send it), never an IP address, a wildcard,
// or a name of the platform itself (its domain, the subdomains it hands out, the dashboard's hosts).
import { domainToASCII } from "node:url";
import { isIP } from "node:net";
import { ApiError } from "../../http/errors";

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const MAX_DOMAIN_LENGTH = 253;

/** `input` as the domain the proxy will match, or 400 VALIDATION_FAILED / DOMAIN_RESERVED saying why. */
export function normalizedDomain(input: string, reserved: { platformDomain: string; apiHosts: readonly string[] }): string {
  const trimmed = input.trim().replace(/\.$/, "");
  if (trimmed.startsWith("*.")) throw new ApiError("VALIDATION_FAILED", "Invalid body field 'domain': wildcard domains are not supported; add each name");
  if (isIP(trimmed.replace(/^\[|\]$/g, ""))) throw new ApiError("VALIDATION_FAILED", "Invalid body field 'domain': an IP address is not a domain");
  const ascii = domainToASCII(trimmed);
  const platformDomain = reserved.platformDomain.toLowerCase().replace(/\.$/, "");
  if (ascii === platformDomain || ascii.endsWith(`.${platformDomain}`)) {
    throw new ApiError("DOMAIN_RESERVED", `${ascii} is the platform's own domain or one of the subdomains it gives apps (PLATFORM_DOMAIN): set the app's subdomain instead`);
  }
  if (reserved.apiHosts.some((host) => host.toLowerCase() === ascii)) {
    throw new ApiError("DOMAIN_RESERVED", `${ascii} is a host name of the platform's dashboard and API (PLATFORM_API_HOSTS)`);
  }
  const labels = ascii.split(".");
  if (!ascii || ascii.length > MAX_DOMAIN_LENGTH || labels.length < 2 || !labels.every((label) => LABEL.test(label)) || /^\d+$/.test(labels.at(-1)!)) {
    throw new ApiError("VALIDATION_FAILED", "Invalid body field 'domain': a host name such as www.example.com (letters, digits and dashes in each part, at most 253 characters)");
  }
  return ascii;
}
