// Schemas of what the API shows of a host's certificate and DNS (custom domains, app subdomains).
import { t } from "elysia";
import { resource } from "../http/responses";
import { MAX_PEM_BYTES } from "./pem";

const isoTime = (description: string) => t.Nullable(t.String({ format: "date-time", description }));

export const CertificateStatusSchema = resource(
  "CertificateStatus",
  {
    status: t.Union([t.Literal("none"), t.Literal("waiting"), t.Literal("pending"), t.Literal("issued"), t.Literal("expired"), t.Literal("failed")], {
      description:
        "`issued`: a valid certificate serves the host over HTTPS. `pending`: one is being ordered (or waits its turn). " +
        "`waiting`: nothing is ordered yet: the domain is not verified, or its DNS does not point at this server (see `verification` and `dns`). " +
        "`failed`: the last order failed (see `lastError`; the next try is at `nextAttemptAt`). `expired`: the certificate in place has expired. " +
        "`none`: no certificate, and none is ordered (ACME is off: PLATFORM_ACME_EMAIL unset).",
    }),
    source: t.Nullable(
      t.Union([t.Literal("acme"), t.Literal("uploaded"), t.Literal("platform")], {
        description: "`acme`: ordered automatically; `uploaded`: the domain's own, uploaded; `platform`: the platform's PLATFORM_TLS_CERT covers it",
      }),
    ),
    issuer: t.Nullable(t.String({ description: "The certificate's issuer" })),
    notBefore: isoTime("Start of the certificate's validity"),
    expiresAt: isoTime("End of the certificate's validity"),
    renewsAt: isoTime("When an ACME certificate is renewed: two thirds into its lifetime"),
    lastError: t.Nullable(t.String({ description: "Why the last order failed, in the CA's words; null after a success" })),
    lastAttemptAt: isoTime("When the last order started"),
    nextAttemptAt: isoTime("After a failure: no new order before this time (the wait doubles with each failure, up to 6 hours)"),
  },
  "The HTTPS certificate of one host name.",
);

export const DnsCheckSchema = resource(
  "DnsCheck",
  {
    status: t.Union([t.Literal("ok"), t.Literal("mismatch"), t.Literal("unresolved"), t.Literal("unknown")], {
      description:
        "`ok`: the name resolves to this server only. `mismatch`: it resolves to other addresses too or instead. " +
        "`unresolved`: no A or AAAA record. `unknown`: this server's public address is unknown (set PLATFORM_PUBLIC_IP)",
    }),
    addresses: t.Array(t.String(), { description: "The A and AAAA addresses the name resolves to" }),
    expected: t.Array(t.String(), { description: "This server's public addresses (PLATFORM_PUBLIC_IP, or detected)" }),
    message: t.Nullable(t.String({ description: "What is wrong and what to do; null when ok" })),
    checkedAt: t.String({ format: "date-time" }),
  },
  "Whether a domain's DNS points at this server (checked at most once a minute).",
);

export const certificateUploadBody = t.Object({
  certificate: t.String({ minLength: 1, maxLength: MAX_PEM_BYTES, description: "PEM: the certificate, then its intermediates" }),
  privateKey: t.String({ minLength: 1, maxLength: MAX_PEM_BYTES, description: "PEM: the certificate's private key, unencrypted" }),
});

export const CERTIFICATE_RESOURCES = [CertificateStatusSchema, DnsCheckSchema];
