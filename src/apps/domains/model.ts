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
      "`verified`: the TXT record below was found: the domain routes to the app and gets certificates. It stays verified while " +
        "no other workspace proves the name, even if the record goes (`recordPresent` says whether it is still there). " +
        "`pending`: not proved yet (looked up again in the background, or at once by POST …/verify); the domain neither routes " +
        "nor gets certificates. When another workspace holds the name (`message` says so), this claim takes it over only when " +
        "its record is found and the holder's is no longer published; a name another workspace removed lately stays reserved to it. " +
        "`lost`: this claim was verified, and another workspace proved the name while this workspace's record was not published: " +
        "it no longer routes nor gets certificates; publishing the record again takes it back once the other workspace's is gone.",
    ),
    record: t.Object(
      {
        type: t.Literal("TXT"),
        name: t.String({ description: "`_platform-challenge.<domain>`" }),
        value: t.String({ description: "The workspace's verification token: the same for every domain of the workspace" }),
      },
      { description: "The DNS record to create to prove the workspace controls the domain" },
    ),
    recordPresent: t.Nullable(
      t.Boolean({
        description:
          "Whether the last lookup found the workspace's value at the record (every claim, verified ones too, is looked up again on " +
          "PLATFORM_DOMAIN_CHECK_SCHEDULE); null: not looked up yet (domains from before verification existed) or no answer. " +
          "Keep the record published: a verified domain whose record is gone is taken over by another workspace that proves it.",
      }),
    ),
    verifiedAt: t.Nullable(timestamp("When the record was found (domains from before verification existed: when they were added)")),
    checkedAt: t.Nullable(timestamp("The last lookup of the record")),
    message: t.Nullable(t.String({ description: "Who else holds or took the name, and what the last lookup found wrong (a verified domain: that its record is gone); null when all is well" })),
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
