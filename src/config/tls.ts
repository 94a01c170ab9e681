// HTTPS at the public proxy and apps' own domains: certificates, ACME, API domain, DNS checks.
import { resolve } from "node:path";
import { isIP } from "node:net";
import { baseUrlSetting, hostListSetting, integerSetting, textSetting } from "./parse";

/** HTTPS at the public proxy: its listener, the platform's own certificate, ACME (src/certificates). */
export interface TlsSettings {
  /** Port of the HTTPS listener; it opens once a certificate exists. */
  port: number;
  /** The platform's own certificate and key files (PLATFORM_TLS_CERT/KEY): first for the hosts it covers. */
  ownCertificate: { certFile: string; keyFile: string } | null;
  /** Automatic certificates by ACME HTTP-01; null unless PLATFORM_ACME_EMAIL is set. */
  acme: { email: string; directoryUrl: string; caFile: string | undefined } | null;
  /** Croner schedule of the check that orders missing certificates and renews old ones. */
  renewalSchedule: string;
  /** The host name the API and dashboard answer at through the proxy; null: not through the proxy. */
  apiDomain: string | null;
  /** This server's public addresses, which custom domains should resolve to; empty: detected. */
  publicIps: string[];
  /** DNS servers (host or host:port) for the check of custom domains; empty: the system's. */
  dnsServers: string[];
}

/** Apps' own domains (src/apps/domains): proof of ownership and limits. */
export interface CustomDomainSettings {
  /** A verified domain removed stays reserved to its workspace this long. */
  reservationMs: number;
  /** Domains (any state) the apps of one workspace may have together. */
  maxPerWorkspace: number;
  /** Croner schedule of the background TXT check of every domain claim. */
  checkSchedule: string;
}

export const LETS_ENCRYPT_DIRECTORY = "https://acme-v02.api.letsencrypt.org/directory";

export function tlsSettings(env: Record<string, string | undefined>): TlsSettings {
  const certFile = env.PLATFORM_TLS_CERT || undefined;
  const keyFile = env.PLATFORM_TLS_KEY || undefined;
  if (Boolean(certFile) !== Boolean(keyFile)) throw new Error("PLATFORM_TLS_CERT and PLATFORM_TLS_KEY go together: set both or neither");
  const email = env.PLATFORM_ACME_EMAIL || undefined;
  if (email !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) throw new Error(`PLATFORM_ACME_EMAIL must be an email address, got "${email}"`);
  const apiDomain = env.PLATFORM_API_DOMAIN ? hostListSetting(env, "PLATFORM_API_DOMAIN", [])[0]! : null;
  if (apiDomain === "*" || env.PLATFORM_API_DOMAIN?.includes(",")) throw new Error("PLATFORM_API_DOMAIN must be one host name");
  const publicIps = (env.PLATFORM_PUBLIC_IP ?? "").split(",").map((item) => item.trim()).filter(Boolean);
  const badIp = publicIps.find((item) => isIP(item) === 0);
  if (badIp !== undefined) throw new Error(`PLATFORM_PUBLIC_IP must be comma-separated IP addresses, got "${badIp}"`);
  const dnsServers = (env.PLATFORM_DNS_SERVERS ?? "").split(",").map((item) => item.trim()).filter(Boolean);
  const badServer = dnsServers.find((item) => isIP(item) === 0 && isIP(item.replace(/^\[(.*)\]:\d{1,5}$/, "$1").replace(/^([\d.]+):\d{1,5}$/, "$1")) === 0);
  if (badServer !== undefined) throw new Error(`PLATFORM_DNS_SERVERS must be comma-separated IP addresses, each with an optional :port, got "${badServer}"`);
  return {
    port: integerSetting(env, "PLATFORM_PROXY_TLS_PORT", 443),
    ownCertificate: certFile && keyFile ? { certFile: resolve(certFile), keyFile: resolve(keyFile) } : null,
    acme: email
      ? { email, directoryUrl: baseUrlSetting(env, "PLATFORM_ACME_DIRECTORY", LETS_ENCRYPT_DIRECTORY), caFile: env.PLATFORM_ACME_CA_FILE ? resolve(env.PLATFORM_ACME_CA_FILE) : undefined }
      : null,
    renewalSchedule: textSetting(env, "PLATFORM_CERTIFICATE_SCHEDULE", "0 */10 * * * *"),
    apiDomain,
    publicIps,
    dnsServers,
  };
}
