// Which webhook deliveries are believed and what they deploy. Each app has a webhook of its own
// (POST /api/webhooks/github/{appId}) signed with a secret of its own, made on first read,
// stored encrypted (the signature check needs it back) and replaceable; the GitHub App's own
// webhook (POST /api/webhooks/github), signed with a secret only the administrator holds,
// deploys the apps that use the delivery's installation in the workspace it is bound to. Either
// way an accepted delivery is remembered for a day and its replays are ignored, and a push deploys
// an app only when it names the app's repository (GitHub's repository id too, where the app has
// one) and branch.
import { and, eq } from "drizzle-orm";
import type { PlatformDb } from "../db";
import type { Config } from "../config";
import type { SecretBox } from "../crypto/secrets";
import { apps } from "../db/schema";
import { ApiError } from "../http/errors";
import { recordAuditEvent } from "../audit/service";
import type { AppRow } from "../apps/deployer";
import type { AppsService } from "../apps/service";
import { appSecret, rotateAppSecret, storedAppSecret } from "../apps/repository/app-secrets";
import { installationWorkspace } from "../git/installations";
import { firstDelivery } from "./deliveries";
import { deliveryPayload, pushDelivery, spendSignatureCheck, validSignature, type DeliveryHeaders, type PushDelivery } from "./github";

/** The replay memory's scope of the GitHub App's webhook (an app's is the app's id). */
export const GITHUB_APP_SCOPE = "github-app";

/** A delivery whose headers passed deliveryHeaders(), with its body read. */
export interface Delivery {
  headers: DeliveryHeaders;
  body: Uint8Array;
  contentType: string | null;
  clientAddress: string | null;
}

export interface WebhooksContext {
  db: PlatformDb;
  config: Pick<Config, "git">;
  secrets: SecretBox;
  apps: AppsService;
}

export class Webhooks {
  constructor(private readonly ctx: WebhooksContext) {}

  /** The secret of the app's webhook, made on first read. */
  appSecret(workspaceId: string, appId: string): string {
    return appSecret(this.ctx, this.ctx.apps.get(workspaceId, appId), "webhook");
  }

  /** A new secret: deliveries signed with the old one are refused from now on. */
  rotateAppSecret(workspaceId: string, appId: string): string {
    return rotateAppSecret(this.ctx, this.ctx.apps.get(workspaceId, appId), "webhook");
  }

  /**
   * A delivery to the app's own webhook. An unknown app and a wrong signature are the same 401;
   * past the signature nothing the delivery leads to changes the answer.
   */
  receiveForApp(appId: string, delivery: Delivery): void {
    const app = this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
    const secret = app && app.status !== "deleting" ? storedAppSecret(this.ctx.secrets, app, "webhook") : null;
    const signed = secret === null ? spendSignatureCheck(delivery.body, delivery.headers.signature) : validSignature(secret, delivery.body, delivery.headers.signature);
    if (!app || !signed) throw new ApiError("INVALID_SIGNATURE", "X-Hub-Signature-256 does not match the body signed with this webhook's secret");
    const push = this.newPush(app.id, delivery);
    if (push) this.deployEach([app], push, delivery);
  }

  /** A delivery to the GitHub App's webhook: deploys the apps that use its installation, in the workspace it is bound to. */
  receiveForGitHubApp(delivery: Delivery): void {
    const secret = this.ctx.config.git.githubAppWebhookSecret;
    if (!secret) throw webhooksDisabled();
    if (!validSignature(secret, delivery.body, delivery.headers.signature)) {
      throw new ApiError("INVALID_SIGNATURE", "X-Hub-Signature-256 does not match the body signed with the GitHub App's webhook secret");
    }
    const push = this.newPush(GITHUB_APP_SCOPE, delivery);
    if (!push?.installationId) return;
    const boundTo = installationWorkspace(this.ctx.db, push.installationId);
    if (boundTo === null) return;
    const using = this.ctx.db
      .select()
      .from(apps)
      .where(and(eq(apps.repoInstallationId, push.installationId), eq(apps.workspaceId, boundTo)))
      .all();
    this.deployEach(using, push, delivery);
  }

  /** A call of the app's deploy-hook URL started (or joined) a deploy: the audit log says so. */
  hookCalled(appId: string, clientAddress: string | null) {
    const app = this.ctx.db.select({ workspaceId: apps.workspaceId, name: apps.name }).from(apps).where(eq(apps.id, appId)).get();
    if (!app) return;
    recordAuditEvent(this.ctx.db, { workspaceId: app.workspaceId, action: "app.deployed_by_hook", actor: { type: "anonymous", id: null, clientAddress }, target: `${app.name} (${appId})` });
  }

  /** The push a signed delivery carries; null for a replay or another event. */
  private newPush(scope: string, delivery: Delivery): PushDelivery | null {
    if (!firstDelivery(this.ctx.db, scope, delivery.headers.deliveryId, delivery.body)) return null;
    if (delivery.headers.event !== "push") return null;
    return pushDelivery(deliveryPayload(delivery.body, delivery.contentType));
  }

  /**
   * Deploys each app that follows the push on its own. The delivery is already remembered (GitHub's
   * retry would be a replay), so a deploy that fails to start is logged and keeps neither the other
   * apps nor the answer, which tells nothing of what the delivery led to, from theirs.
   */
  private deployEach(candidates: AppRow[], push: PushDelivery, delivery: Delivery) {
    for (const app of candidates) {
      if (!follows(app, push)) continue;
      try {
        this.deploy(app, push, delivery);
      } catch (error) {
        console.error(`[webhooks] delivery ${delivery.headers.deliveryId}: the deploy of app ${app.id} did not start:`, error);
      }
    }
  }

  private deploy(app: AppRow, push: PushDelivery, delivery: Delivery) {
    this.ctx.apps.repository.deployHead(app, "push", `Push to ${push.owner}/${push.name} branch ${push.branch} (delivery ${delivery.headers.deliveryId})`);
    recordAuditEvent(this.ctx.db, {
      workspaceId: app.workspaceId,
      action: "app.deployed_by_push",
      actor: { type: "anonymous", id: null, clientAddress: delivery.clientAddress },
      target: `${app.name} (${app.id})`,
    });
  }
}

export function webhooksDisabled() {
  return new ApiError("WEBHOOKS_DISABLED", "PLATFORM_GITHUB_APP_WEBHOOK_SECRET is not set on this platform: the GitHub App's webhook is off (apps have webhooks of their own)");
}

/** The push is to the app's repository and branch, and the app deploys on pushes. */
function follows(app: AppRow, push: PushDelivery): boolean {
  return (
    app.autoDeploy &&
    app.status !== "deleting" &&
    push.branch !== null &&
    !push.deleted &&
    app.repoBranch === push.branch &&
    app.repoOwner?.toLowerCase() === push.owner.toLowerCase() &&
    app.repoName?.toLowerCase() === push.name.toLowerCase() &&
    // A repository renamed or re-created under the same name is another repository.
    (!app.repoId || app.repoId === push.repositoryId)
  );
}
