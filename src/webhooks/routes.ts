// Routes of /api/webhooks: deliveries from outside, authenticated by what they carry instead of
// an API key: GitHub's pushes by their signature (an app's own webhook, or the GitHub App's),
// deploy-hook calls by the secret in their URL.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { ok } from "../http/envelope";
import { json, ref, responses } from "../http/responses";
import { requestSourceOf } from "../http/request-source";
import { DeployHookRunSchema } from "../apps/repository/model";
import { deliveryHeaders, MAX_DELIVERY_BYTES, readBoundedBody } from "./github";
import { WebhookDeliverySchema } from "./model";
import { Webhooks, webhooksDisabled, type Delivery } from "./service";

const NO_KEY = [] as Record<string, string[]>[];
type PeerLookup = Parameters<typeof requestSourceOf>[1];

const DELIVERY_DOCS = {
  security: NO_KEY,
  requestBody: { required: true, content: { "application/json": { schema: t.Object({}, { additionalProperties: true, description: "GitHub's delivery payload" }) } } },
} as const;

const DELIVERY_RULES =
  `A delivery needs a Content-Length of at most ${MAX_DELIVERY_BYTES} bytes (413 \`PAYLOAD_TOO_LARGE\`; GitHub's push payloads are ` +
  "a few KB), `X-Hub-Signature-256: sha256=<hex>` (401 `INVALID_SIGNATURE` when missing) and `X-GitHub-Delivery`: all three are " +
  "checked before the body is read, which must then arrive within 30 s (408 `REQUEST_TIMEOUT`). A signed delivery gets 202 " +
  "`received` whatever it leads to; one whose delivery id or body came within the last day is a replay and does nothing. A " +
  "`push` to a branch deploys an app that follows that repository (owner and name, any case; GitHub's repository id must " +
  "match the app's `repository.id`) and branch with `autoDeploy` on; a push that arrives while the app's deploy is queued is " +
  "coalesced into it. Other events, tags and deleted branches do nothing.";

export function webhooksRoutes(ctx: ServerContext) {
  const webhooks = new Webhooks(ctx);
  const deploys = ctx.apps.repository;
  /** The delivery's headers checked (then `beforeReading`), then its body read, bounded. */
  const delivery = async (request: Request, server: PeerLookup, beforeReading = () => {}): Promise<Delivery> => {
    const headers = deliveryHeaders(request);
    beforeReading();
    return {
      headers,
      body: await readBoundedBody(request),
      contentType: request.headers.get("content-type"),
      clientAddress: requestSourceOf(ctx.config, server, request).clientAddress,
    };
  };
  const received = (set: { status?: number | string }, { headers }: Delivery) => {
    set.status = 202;
    return ok({ delivery: { id: headers.deliveryId, status: "received" as const } });
  };
  return new Elysia({ prefix: "/api/webhooks", tags: ["Webhooks"] })
    .post(
      "/github",
      async ({ request, server, set }) => {
        const signed = await delivery(request, server, () => {
          if (!ctx.config.git.githubAppWebhookSecret) throw webhooksDisabled();
        });
        webhooks.receiveForGitHubApp(signed);
        return received(set, signed);
      },
      {
        parse: "none",
        detail: {
          operationId: "receiveGitHubAppWebhook",
          ...DELIVERY_DOCS,
          responses: responses(
            { 202: json("Received", { delivery: ref(WebhookDeliverySchema) }) },
            "INVALID_SIGNATURE", "WEBHOOKS_DISABLED", "INVALID_JSON", "VALIDATION_FAILED", "PAYLOAD_TOO_LARGE", "LENGTH_REQUIRED", "REQUEST_TIMEOUT",
          ),
          summary: "Receive a delivery of the GitHub App's webhook",
          description:
            "The webhook of the platform's GitHub App (its settings on GitHub: this URL, secret = PLATFORM_GITHUB_APP_WEBHOOK_SECRET, " +
            "which only the administrator holds; 403 `WEBHOOKS_DISABLED` while it is not set). A push deploys the apps that use the " +
            "delivery's installation (`installation.id`), in the workspace that installation is bound to. " + DELIVERY_RULES,
        },
      },
    )
    .post(
      "/github/:appId",
      async ({ params, request, server, set }) => {
        const signed = await delivery(request, server);
        webhooks.receiveForApp(params.appId, signed);
        return received(set, signed);
      },
      {
        parse: "none",
        params: t.Object({ appId: t.String({ minLength: 1, maxLength: 64 }) }),
        detail: {
          operationId: "receiveAppWebhook",
          ...DELIVERY_DOCS,
          responses: responses(
            { 202: json("Received", { delivery: ref(WebhookDeliverySchema) }) },
            "INVALID_SIGNATURE", "INVALID_JSON", "VALIDATION_FAILED", "PAYLOAD_TOO_LARGE", "LENGTH_REQUIRED", "REQUEST_TIMEOUT",
          ),
          summary: "Receive a delivery of an app's GitHub webhook",
          description:
            "The app's own webhook (GET /api/apps/{appId}/webhook gives this URL and its secret): point a GitHub repository " +
            "webhook here (push events, content type JSON or form). No API key: the delivery is authenticated by its " +
            "signature with the app's webhook secret; a wrong signature and an unknown app get the same 401 " +
            "`INVALID_SIGNATURE`. Only this app is ever deployed by it. " + DELIVERY_RULES,
        },
      },
    )
    .post(
      "/deploy/:appId/:secret",
      ({ params, request, server, set }) => {
        const run = deploys.triggerDeployHook(params.appId, params.secret);
        webhooks.hookCalled(params.appId, requestSourceOf(ctx.config, server, request).clientAddress);
        set.status = 202;
        return ok({ deployHookRun: run });
      },
      {
        params: t.Object({ appId: t.String({ minLength: 1, maxLength: 64 }), secret: t.String({ minLength: 1, maxLength: 128 }) }),
        detail: {
          operationId: "callDeployHook",
          security: NO_KEY,
          responses: responses({ 202: json("A deploy started or coalesced", { deployHookRun: ref(DeployHookRunSchema) }) }, "INVALID_DEPLOY_HOOK"),
          summary: "Call an app's deploy-hook URL",
          description:
            "The URL of GET /api/apps/{appId}/deploy-hook; no API key, no body. Deploys the branch head of a repository app " +
            "(the kept source tree of a ZIP app) as a push would, coalesced into a deploy already queued, and records " +
            "`app.deployed_by_hook` in the audit log. A wrong, replaced or unknown URL gets 401 `INVALID_DEPLOY_HOOK`.",
        },
      },
    );
}
