// Routes of /api/webhooks: deliveries from outside, authenticated by what they carry instead of
// an API key: GitHub's pushes by their signature, deploy-hook calls by the secret in their URL.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { ApiError } from "../http/errors";
import { ok } from "../http/envelope";
import { json, ref, responses } from "../http/responses";
import { DeployHookRunSchema } from "../apps/repository/model";
import { deliveryPayload, pushDelivery, validSignature } from "./github";
import { WebhookDeliverySchema } from "./model";

const NO_KEY = [] as Record<string, string[]>[];

export function webhooksRoutes(ctx: ServerContext) {
  const deploys = ctx.apps.repository;
  return new Elysia({ prefix: "/api/webhooks", tags: ["Webhooks"] })
    .post(
      "/github",
      async ({ request, set }) => {
        const secret = ctx.config.git.webhookSecret;
        if (!secret) throw new ApiError("WEBHOOKS_DISABLED", "PLATFORM_GITHUB_WEBHOOK_SECRET is not set on this platform: webhook deliveries are refused");
        const body = new Uint8Array(await request.arrayBuffer());
        if (!validSignature(secret, body, request.headers.get("x-hub-signature-256"))) {
          throw new ApiError("INVALID_SIGNATURE", "X-Hub-Signature-256 is missing or does not match the body signed with the platform's webhook secret");
        }
        const event = request.headers.get("x-github-event") ?? "";
        const ignored = (reason: string) => ok({ delivery: { event, outcome: "ignored" as const, reason, started: 0, coalesced: 0 } });
        if (event !== "push") return ignored(event === "ping" ? "ping: the webhook is set up" : `only push events deploy (got '${event || "none"}')`);
        const push = pushDelivery(deliveryPayload(body, request.headers.get("content-type")));
        if (push.branch === null) return ignored("the push is not to a branch");
        if (push.deleted) return ignored(`branch ${push.branch} was deleted`);
        const { started, coalesced } = deploys.onPush(push);
        if (started + coalesced === 0) return ignored(`no app follows ${push.owner}/${push.name} branch ${push.branch} with autoDeploy on`);
        set.status = 202;
        return ok({ delivery: { event, outcome: "deploying" as const, reason: null, started, coalesced } });
      },
      {
        parse: "none",
        detail: {
          operationId: "receiveGitHubWebhook",
          security: NO_KEY,
          requestBody: { required: true, content: { "application/json": { schema: t.Object({}, { additionalProperties: true, description: "GitHub's delivery payload" }) } } },
          responses: responses(
            {
              200: json("Acknowledged and ignored (`delivery.reason` says why)", { delivery: ref(WebhookDeliverySchema) }),
              202: json("Deploys started or coalesced", { delivery: ref(WebhookDeliverySchema) }),
            },
            "INVALID_SIGNATURE", "WEBHOOKS_DISABLED", "INVALID_JSON", "VALIDATION_FAILED", "PAYLOAD_TOO_LARGE",
          ),
          summary: "Receive a GitHub webhook delivery",
          description:
            "Point a GitHub webhook (content type application/json or form, secret = PLATFORM_GITHUB_WEBHOOK_SECRET) or the " +
            "GitHub App's webhook here. No API key: the delivery is authenticated by `X-Hub-Signature-256` (HMAC-SHA256 of " +
            "the raw body, compared in constant time); a missing or wrong one gets 401 `INVALID_SIGNATURE`, and every delivery " +
            "gets 403 `WEBHOOKS_DISABLED` while the secret is not set. A `push` to a branch starts a deploy of every app that " +
            "follows that repository (owner and name, any case) and branch with `autoDeploy` on (202); a push that arrives " +
            "while such an app's deploy is queued is coalesced into it, since a build fetches the branch head when it starts. " +
            "An app whose repository `id` was given is matched on GitHub's repository id too, so a repository renamed or " +
            "re-created under the same name deploys nothing. Other events (`ping`...), tags, deleted branches and other " +
            "branches are acknowledged with 200 and ignored. Deliveries up to 25 MB are read (GitHub's maximum).",
        },
      },
    )
    .post(
      "/deploy/:appId/:secret",
      ({ params, set }) => {
        set.status = 202;
        return ok({ deployHookRun: deploys.triggerDeployHook(params.appId, params.secret) });
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
            "(the kept source tree of a ZIP app) as a push would, coalesced into a deploy already queued. A wrong, replaced or " +
            "unknown URL gets 401 `INVALID_DEPLOY_HOOK`.",
        },
      },
    );
}
