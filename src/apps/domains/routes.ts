// Routes of /api/apps/{appId}/domains: an app's own domains (./service.ts).
import { Elysia, t } from "elysia";
import type { ServerContext } from "../../http/context";
import { authPlugin } from "../../http/auth";
import { ok } from "../../http/envelope";
import { json, ref, responses } from "../../http/responses";
import { appIdParams } from "../model";
import { AppDomainSchema, domainBody, domainParams } from "./model";
import { MAX_DOMAINS_PER_APP } from "./service";

export function appDomainsRoutes(ctx: ServerContext) {
  const domains = ctx.apps.domains;
  return new Elysia({ prefix: "/api/apps", tags: ["Apps"] })
    .use(authPlugin(ctx))
    .get("/:appId/domains", ({ principal, params }) => ok({ domains: domains.list(principal.workspaceId, params.appId) }), {
      auth: true,
      params: appIdParams,
      detail: {
        operationId: "listAppDomains",
        responses: responses({ 200: json("The app's own domains", { domains: t.Array(ref(AppDomainSchema)) }) }, "NOT_FOUND"),
        summary: "List an app's domains",
        description: "The host names the app answers at through the public proxy besides its subdomain, oldest first.",
      },
    })
    .post(
      "/:appId/domains",
      ({ principal, params, body, set }) => {
        set.status = 201;
        return ok({ domain: domains.add(principal.workspaceId, params.appId, body.domain) });
      },
      {
        auth: true,
        params: appIdParams,
        body: domainBody,
        detail: {
          operationId: "addAppDomain",
          responses: responses({ 201: json("The domain, routed at once", { domain: ref(AppDomainSchema) }) }, "NOT_FOUND", "VALIDATION_FAILED", "DOMAIN_RESERVED", "DOMAIN_TAKEN", "QUOTA_EXCEEDED"),
          summary: "Add a domain to an app",
          description:
            "From now on a request whose Host is `domain` (any case, with or without port or trailing dot) reaches the app " +
            "through the public proxy, with its rate limits and traffic counted as the app's; point the domain's DNS at the " +
            "platform. An internationalised name is stored as punycode (`unicodeDomain` shows it as written). 400 " +
            "`VALIDATION_FAILED` for what is not a host name of two or more parts, an IP address or a wildcard; 400 " +
            "`DOMAIN_RESERVED` for PLATFORM_DOMAIN and the names under it (use the app's `subdomain`) or a host of the " +
            `dashboard (PLATFORM_API_HOSTS); 409 \`DOMAIN_TAKEN\` when any app of the platform has it; 409 \`QUOTA_EXCEEDED\` past ${MAX_DOMAINS_PER_APP} per app.`,
        },
      },
    )
    .delete("/:appId/domains/:domainId", ({ principal, params }) => ok({ domain: domains.remove(principal.workspaceId, params.appId, params.domainId) }), {
      auth: true,
      params: domainParams,
      detail: {
        operationId: "removeAppDomain",
        responses: responses({ 200: json("The domain removed", { domain: ref(AppDomainSchema) }) }, "NOT_FOUND"),
        summary: "Remove a domain from an app",
        description: "The proxy stops routing it at once (404 for a request with that Host); any app may add it again.",
      },
    });
}
