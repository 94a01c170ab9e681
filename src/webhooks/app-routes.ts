// Routes of an app's own GitHub webhook: GET /api/apps/{appId}/webhook gives its payload URL and
// secret (made on first read), POST replaces the secret. Deliveries arrive at ./routes.ts.
import { Elysia } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { json, ref, responses } from "../http/responses";
import { apiPublicOrigin } from "../http/public-origin";
import { appIdParams } from "../apps/model";
import { AppWebhookSchema } from "./model";
import { Webhooks } from "./service";

export function appWebhookRoutes(ctx: ServerContext) {
  const webhooks = new Webhooks(ctx);
  /** The answer of both routes: the webhook's URL (the API's public origin) and its secret. */
  const answer = (request: Request, server: Parameters<typeof apiPublicOrigin>[1], appId: string, secret: string) =>
    ok({ webhook: { url: `${apiPublicOrigin(ctx.config, server, request)}/api/webhooks/github/${appId}`, secret, contentType: "application/json" as const, events: ["push"] } });
  const documented = (operationId: string, description: string, summary: string, details: string) => ({
    auth: true as const,
    params: appIdParams,
    detail: { operationId, responses: responses({ 200: json(description, { webhook: ref(AppWebhookSchema) }) }, "NOT_FOUND"), summary, description: details },
  });
  return new Elysia({ prefix: "/api/apps", tags: ["Apps"] })
    .use(authPlugin(ctx))
    .get(
      "/:appId/webhook",
      ({ principal, params, request, server }) => answer(request, server, params.appId, webhooks.appSecret(principal.workspaceId, params.appId)),
      documented(
        "getAppWebhook",
        "The app's webhook",
        "The app's GitHub webhook",
        "Payload URL and secret of a GitHub repository webhook (push events) that deploys this app, and only this app, " +
          "when `autoDeploy` is on. The secret is made on the first read, stored encrypted and the same until POST replaces " +
          "it; each read is in the audit log. Owners, admins and members only.",
      ),
    )
    .post(
      "/:appId/webhook",
      ({ principal, params, request, server }) => answer(request, server, params.appId, webhooks.rotateAppSecret(principal.workspaceId, params.appId)),
      documented(
        "rotateAppWebhookSecret",
        "The app's webhook with its new secret",
        "Replace the app's webhook secret",
        "Makes a new secret: deliveries signed with the previous one get 401 `INVALID_SIGNATURE` from now on.",
      ),
    );
}
