// Schemas of /api/apps/{appId}/domains.
import { t } from "elysia";
import { ref, resource, timestamp } from "../../http/responses";
import { CertificateStatusSchema, DnsCheckSchema } from "../../certificates/model";

export const domainBody = t.Object({
  domain: t.String({ minLength: 1, maxLength: 300, description: "A host name such as www.example.com; an internationalised name is stored as punycode" }),
});
export const domainParams = t.Object({ appId: t.String({ minLength: 1, maxLength: 64 }), domainId: t.String({ minLength: 1, maxLength: 64 }) });

export const AppDomainSchema = resource(
  "AppDomain",
  {
    id: t.String(),
    appId: t.String(),
    domain: t.String({ description: "As the proxy matches it: lowercase ASCII, punycode for an internationalised name" }),
    unicodeDomain: t.String({ description: "The same name as people write it" }),
    url: t.String({ description: "Where the public proxy serves the app at this name, once its DNS points at the platform: https once a certificate serves it" }),
    certificate: ref(CertificateStatusSchema),
    dns: ref(DnsCheckSchema),
    createdAt: timestamp(),
  },
  "A host name an app answers at besides its subdomain (a custom domain).",
);

export const DOMAIN_RESOURCES = [AppDomainSchema];
