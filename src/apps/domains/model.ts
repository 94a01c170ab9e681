// Schemas of /api/apps/{appId}/domains.
import { t } from "elysia";
import { oneOf, ref, resource, timestamp } from "../../http/responses";
import { CertificateStatusSchema, DnsCheckSchema } from "../../certificates/model";

export const domainBody = t.Object({
  domain: t.String({ minLength: 1, maxLength: 300, description: "A host name such as www.example.com; an internationalised name is stored as punycode" }),
});
export const domainParams = t.Object({ appId: t.String({ minLength: 1, maxLength: 64 }), domainId: t.String({ minLength: 1, maxLength: 64 }) });

export const DomainVerificationSchema = resource(
  "DomainVerification",
  {
    status: oneOf(
      ["pending", "verified", "lost"],
      "`verified`: the TXT record below was found: the domain routes to the app and gets certificates. `pending`: not yet found " +
        "(looked up again in the background, or at once by POST …/verify); the domain neither routes nor gets certificates. " +
        "`lost`: another workspace verified this name first, or removed it lately and holds it reserved: it stays unrouted.",
    ),
    record: t.Object(
      {
        type: t.Literal("TXT"),
        name: t.String({ description: "`_platform-challenge.<domain>`" }),
        value: t.String({ description: "The workspace's verification token: the same for every domain of the workspace" }),
      },
      { description: "The DNS record to create to prove the workspace controls the domain" },
    ),
    verifiedAt: t.Nullable(timestamp("When the record was found (domains from before verification existed: when they were added)")),
    checkedAt: t.Nullable(timestamp("The last lookup of the record")),
    message: t.Nullable(t.String({ description: "What the last lookup found wrong, or who holds the name; null once verified" })),
  },
  "Whether the workspace has proved it controls a domain, and how to prove it.",
);

export const AppDomainSchema = resource(
  "AppDomain",
  {
    id: t.String(),
    appId: t.String(),
    domain: t.String({ description: "As the proxy matches it: lowercase ASCII, punycode for an internationalised name" }),
    unicodeDomain: t.String({ description: "The same name as people write it" }),
    url: t.String({ description: "Where the public proxy serves the app at this name once it is verified and its DNS points at the platform: https once a certificate serves it" }),
    verification: ref(DomainVerificationSchema),
    certificate: ref(CertificateStatusSchema),
    dns: ref(DnsCheckSchema),
    createdAt: timestamp(),
  },
  "A host name an app answers at besides its subdomain (a custom domain), once verified.",
);

export const DOMAIN_RESOURCES = [AppDomainSchema, DomainVerificationSchema];
