// Schemas of /api/webhooks.
import { t } from "elysia";
import { oneOf, resource } from "../http/responses";

export const WebhookDeliverySchema = resource(
  "WebhookDelivery",
  {
    event: t.String({ description: "The delivery's X-GitHub-Event" }),
    outcome: oneOf(["deploying", "ignored"] as const, "`deploying`: deploys started (or coalesced into queued ones); `ignored`: nothing to do, `reason` says why"),
    reason: t.Nullable(t.String({ description: "Why it was ignored" })),
    started: t.Integer({ minimum: 0, description: "New deploys started" }),
    coalesced: t.Integer({ minimum: 0, description: "Apps whose queued deploy takes this push" }),
  },
  "What the platform did with a webhook delivery.",
);

export const WEBHOOK_RESOURCES = [WebhookDeliverySchema];
