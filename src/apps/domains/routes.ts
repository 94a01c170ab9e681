// Routes of /api/apps/{appId}/domains: an app's own domains and their certificates (./service.ts).
import { Elysia, t } from "elysia";
import type { ServerContext } from "../../http/context";
import { authPlugin } from "../../http/auth";
import { ok } from "../../http/envelope";
import { json, ref, responses } from "../../http/responses";
import { appIdParams } from "../model";
import { AppDomainSchema, domainBody, domainParams } from "./model";
import { MAX_DOMAINS_PER_APP } from "./service";
import { certificateUploadBody } from "../../certificates/model";

export function appDomainsRoutes(ctx: ServerContext) {
  const domains = ctx.apps.domains;
  return new Elysia({ prefix: "/api/apps", tags: ["Apps"] })
    .use(authPlugin(ctx))
    .get("/:appId/domains", async ({ principal, params }) => ok({ domains: await domains.list(principal.workspaceId, params.appId) }), {
      auth: true,
      params: appIdParams,
      detail: {
        operationId: "listAppDomains",
        responses: responses({ 200: json("The app's own domains", { domains: t.Array(ref(AppDomainSchema)) }) }, "NOT_FOUND"),
        summary: "List an app's domains",
        description:
          "The host names the app claims besides its subdomain, oldest first, each with its `verification` (the TXT record " +
          "that proves the workspace controls it, and whether it was found), its certificate (status, expiry, the last " +
          "order's error) and whether its DNS points at this server. Only verified domains are answered at through the public proxy.",
      },
    })
    .get("/:appId/domains/:domainId", async ({ principal, params }) => ok({ domain: await domains.get(principal.workspaceId, params.appId, params.domainId) }), {
      auth: true,
      params: domainParams,
      detail: {
        operationId: "getAppDomain",
        responses: responses({ 200: json("The domain", { domain: ref(AppDomainSchema) }) }, "NOT_FOUND"),
        summary: "Get one of an app's domains",
        description: "With its verification, certificate status and DNS check (the DNS is looked up again when the last check is over a minute old).",
      },
    })
    .post("/:appId/domains/:domainId/verify", async ({ principal, params }) => ok({ domain: await domains.verify(principal.workspaceId, params.appId, params.domainId) }), {
      auth: true,
      params: domainParams,
      detail: {
        operationId: "verifyAppDomain",
        responses: responses({ 200: json("The domain after the lookup: `verification.status` says whether it is verified now", { domain: ref(AppDomainSchema) }) }, "NOT_FOUND"),
        summary: "Look up a domain's TXT record now",
        description:
          "Looks up `verification.record` (`_platform-challenge.<domain>`, TXT, the workspace's token) at once instead of " +
          "waiting for the background check (PLATFORM_DOMAIN_CHECK_SCHEDULE, every 5 minutes). When found, the domain is " +
          "verified (it routes to the app from now on and its certificate is ordered) unless another workspace removed the " +
          "name lately or holds it with its own record still published; a holder whose record is gone loses the name to this " +
          "claim (its claim shows `lost`). Otherwise `verification.message` says what was found. A verified domain stays " +
          "verified: the lookup updates `verification.recordPresent`.",
      },
    })
    .post(
      "/:appId/domains",
      async ({ principal, params, body, set }) => {
        const domain = await domains.add(principal.workspaceId, params.appId, body.domain);
        set.status = 201;
        return ok({ domain });
      },
      {
        auth: true,
        params: appIdParams,
        body: domainBody,
        detail: {
          operationId: "addAppDomain",
          responses: responses({ 201: json("The domain, verified or pending", { domain: ref(AppDomainSchema) }) }, "NOT_FOUND", "VALIDATION_FAILED", "DOMAIN_RESERVED", "DOMAIN_TAKEN", "QUOTA_EXCEEDED"),
          summary: "Add a domain to an app",
          description:
            "Claims `domain` for the app. It is `pending` (`verification.status`) until the TXT record in " +
            "`verification.record` is found: `_platform-challenge.<domain>` with the workspace's token, looked up at once, in " +
            "the background and on POST …/verify. Once verified, a request whose Host is `domain` (any case, with or without " +
            "port or trailing dot) reaches the app through the public proxy, with its rate limits and traffic counted as the " +
            "app's, and a certificate is ordered once the name's DNS points at the platform. An internationalised name is stored " +
            "as punycode (`unicodeDomain` shows it as written). 400 `VALIDATION_FAILED` for what is not a host name of two or " +
            "more parts, an IP address or a wildcard; 400 `DOMAIN_RESERVED` for PLATFORM_DOMAIN and the names under it (use " +
            "the app's `subdomain`) or a host of the dashboard (PLATFORM_API_HOSTS); 409 `DOMAIN_TAKEN` when an app of this " +
            "workspace has it, or another workspace removed it less than PLATFORM_DOMAIN_RESERVATION_HOURS ago. Claims of other " +
            "workspaces do not stop a claim: of pending ones the first to verify wins, and a name another workspace holds " +
            "verified is taken over only when this workspace's record is found while the holder's is no longer published (at " +
            "once, or later: until then it is `pending` and `verification.message` says who holds it); 409 `QUOTA_EXCEEDED` past " +
            `${MAX_DOMAINS_PER_APP} per app or PLATFORM_MAX_DOMAINS_PER_WORKSPACE (default 100) per workspace.`,
        },
      },
    )
    .put(
      "/:appId/domains/:domainId/certificate",
      async ({ principal, params, body }) => ok({ domain: await domains.uploadCertificate(principal.workspaceId, params.appId, params.domainId, body.certificate, body.privateKey) }),
      {
        auth: true,
        params: domainParams,
        body: certificateUploadBody,
        detail: {
          operationId: "uploadAppDomainCertificate",
          responses: responses({ 200: json("The domain, served with this certificate", { domain: ref(AppDomainSchema) }) }, "NOT_FOUND", "VALIDATION_FAILED", "INVALID_CERTIFICATE", "DOMAIN_NOT_VERIFIED"),
          summary: "Upload a domain's own certificate",
          description:
            "The domain is served over HTTPS with this certificate from the next TLS handshake on, in place of an ACME one or " +
            "the platform's PLATFORM_TLS_CERT, and ACME orders nothing for it; its expiry shows in `certificate`. PEM text: " +
            "`certificate` is the certificate then its intermediates, `privateKey` its unencrypted key. 400 " +
            "`INVALID_CERTIFICATE` when either cannot be read, the key is not the certificate's, the certificate does not name " +
            "the domain or has expired; 409 `DOMAIN_NOT_VERIFIED` while the domain is not verified. Stored under the data dir, " +
            "readable by the platform only.",
        },
      },
    )
    .delete(
      "/:appId/domains/:domainId/certificate",
      async ({ principal, params }) => ok({ domain: await domains.removeCertificate(principal.workspaceId, params.appId, params.domainId) }),
      {
        auth: true,
        params: domainParams,
        detail: {
          operationId: "removeAppDomainCertificate",
          responses: responses({ 200: json("The domain, back to automatic certificates", { domain: ref(AppDomainSchema) }) }, "NOT_FOUND"),
          summary: "Remove a domain's uploaded certificate",
          description: "ACME orders one for it from now on (when PLATFORM_ACME_EMAIL is set). 404 when the domain has no uploaded certificate.",
        },
      },
    )
    .delete("/:appId/domains/:domainId", async ({ principal, params }) => ok({ domain: await domains.remove(principal.workspaceId, params.appId, params.domainId) }), {
      auth: true,
      params: domainParams,
      detail: {
        operationId: "removeAppDomain",
        responses: responses({ 200: json("The domain removed", { domain: ref(AppDomainSchema) }) }, "NOT_FOUND"),
        summary: "Remove a domain from an app",
        description:
          "The proxy stops routing it at once (404 for a request with that Host) and its certificate is deleted. A verified " +
          "domain stays reserved to the workspace for PLATFORM_DOMAIN_RESERVATION_HOURS (default 7 days): until then only " +
          "the workspace's apps may claim it again (and must verify it again); a pending one is free at once.",
      },
    });
}
