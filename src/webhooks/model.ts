// Schemas of /api/webhooks and of an app's webhook (GET/POST /api/apps/{appId}/webhook).
import { t } from "elysia";
import { oneOf, resource } from "../http/responses";

export const WebhookDeliverySchema = resource(
  "WebhookDelivery",
  {
    id: t.String({ description: "The delivery's X-GitHub-Delivery" }),
    status: oneOf(["received"] as const, "Always `received`: the answer is the same whatever the delivery leads to"),
  },
  "A signed webhook delivery, received. What it started shows in the app's builds (trigger `push`) and the audit log.",
);

export const AppWebhookSchema = resource(
  "AppWebhook",
  {
    url: t.String({ description: "Payload URL of the repository's GitHub webhook" }),
    secret: t.String({ description: "The webhook's secret: it signs every delivery (X-Hub-Signature-256)" }),
    contentType: oneOf(["application/json"] as const, "Content type to choose (a form works too)"),
    events: t.Array(t.String(), { description: "Events to send: pushes" }),
  },
  "The app's own GitHub webhook: a secret, as an API key is.",
);

export const WEBHOOK_RESOURCES = [WebhookDeliverySchema, AppWebhookSchema];
