// Certificates and keys as PEM text: what a chain is valid for, and whether a key belongs to it.
// Everything here reads text a person may have uploaded: any failure is a CertificateProblem
// with a sentence for them, never a crash.
import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";

/** Bigger is not a certificate chain anyone uploads (Let's Encrypt's is about 4 KB). */
export const MAX_PEM_BYTES = 64 * 1024;

export class CertificateProblem extends Error {}

export interface CertificateInfo {
  /** The leaf certificate (the first of the chain). */
  leaf: X509Certificate;
  notBefore: number;
  notAfter: number;
  /** The host names it names (DNS subject alternative names; wildcards as `*.example.com`). */
  names: string[];
  issuer: string;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----/g;

/** The chain's certificates in order, leaf first. */
export function certificatesOf(chainPem: string): X509Certificate[] {
  if (chainPem.length > MAX_PEM_BYTES) throw new CertificateProblem(`The certificate is over ${MAX_PEM_BYTES / 1024} KB.`);
  const blocks = chainPem.match(PEM_CERTIFICATE) ?? [];
  if (!blocks.length) throw new CertificateProblem("No PEM certificate (-----BEGIN CERTIFICATE-----) was found.");
  return blocks.map((block, index) => {
    try {
      return new X509Certificate(block);
    } catch {
      throw new CertificateProblem(`Certificate ${index + 1} of the chain is not a valid X.509 certificate.`);
    }
  });
}

export function certificateInfo(chainPem: string): CertificateInfo {
  const leaf = certificatesOf(chainPem)[0]!;
  const names = (leaf.subjectAltName ?? "")
    .split(", ")
    .filter((entry) => entry.startsWith("DNS:"))
    .map((entry) => entry.slice(4).toLowerCase());
  return { leaf, notBefore: Date.parse(leaf.validFrom), notAfter: Date.parse(leaf.validTo), names, issuer: leaf.issuer.replace(/\n/g, ", ") };
}

export function privateKeyOf(keyPem: string): KeyObject {
  if (keyPem.length > MAX_PEM_BYTES) throw new CertificateProblem(`The private key is over ${MAX_PEM_BYTES / 1024} KB.`);
  if (!/-----BEGIN ([A-Z]+ )?PRIVATE KEY-----/.test(keyPem)) throw new CertificateProblem("No unencrypted PEM private key (-----BEGIN PRIVATE KEY-----) was found.");
  try {
    return createPrivateKey(keyPem);
  } catch {
    throw new CertificateProblem("The private key cannot be read (an encrypted key must be decrypted first).");
  }
}

/** Whether the certificate is valid for `host`, wildcards included (one label deep, as TLS clients check). */
export const covers = (leaf: X509Certificate, host: string): boolean => leaf.checkHost(host, { subject: "never" }) !== undefined;

/**
 * A certificate and key fit to serve `host` now: the key is the certificate's, the certificate
 * names the host and is valid now. Returns what the chain says.
 */
export function checkedPair(chainPem: string, keyPem: string, host: string | null, now = Date.now()): CertificateInfo {
  const info = certificateInfo(chainPem);
  if (!info.leaf.checkPrivateKey(privateKeyOf(keyPem))) throw new CertificateProblem("The private key does not belong to the certificate (the first one of the chain).");
  if (host !== null && !covers(info.leaf, host)) throw new CertificateProblem(`The certificate is not valid for ${host}: it names ${info.names.join(", ") || "no host names"}.`);
  if (info.notAfter <= now) throw new CertificateProblem(`The certificate expired on ${new Date(info.notAfter).toISOString()}.`);
  if (info.notBefore > now) throw new CertificateProblem(`The certificate is not valid before ${new Date(info.notBefore).toISOString()}.`);
  return info;
}
