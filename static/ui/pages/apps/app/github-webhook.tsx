// A repository app's own GitHub webhook, under its settings: the payload URL and the secret to add
// to the repository's webhooks on GitHub, so that a push to the app's branch deploys it.
import { segment } from "../../../api";
import { SecretSection } from "./secret-section";
import type { App } from "./types";

export function GitHubWebhook({ app, canReplace }: { app: App; canReplace: boolean }) {
  return (
    <SecretSection
      id="github-webhook"
      heading="GitHub webhook"
      path={`/api/apps/${segment(app.id)}/webhook`}
      fieldsOf={(answer: { webhook: { url: string; secret: string } }) => [
        { label: "Payload URL", value: answer.webhook.url },
        { label: "Webhook secret", value: answer.webhook.secret },
      ]}
      canReplace={canReplace}
      labels={{
        show: "Show the webhook",
        replace: "Replace the secret",
        confirm: `Replace the webhook secret of ${app.name}? Pushes signed with the current one stop deploying at once.`,
        replaced: "Replaced: set the new secret in the repository's webhook on GitHub.",
      }}
    >
      Add a webhook to the repository on GitHub with this payload URL and secret (content type application/json, push events): with auto-deploy on, a
      push to the app's branch deploys it. Keep the secret secret; replace it if it leaks.
    </SecretSection>
  );
}
