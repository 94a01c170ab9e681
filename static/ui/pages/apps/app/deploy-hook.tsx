// The app's deploy-hook URL, under its settings: POST to it from any CI, no key, to deploy the app
// (the branch head of a repository app, the kept source of a ZIP app). The URL is a secret, made
// on its first read: the page asks for it only when the person does, and can replace it.
import { segment } from "../../../api";
import { SecretSection } from "./secret-section";
import type { App } from "./types";

export function DeployHook({ app, canReplace }: { app: App; canReplace: boolean }) {
  return (
    <SecretSection
      id="deploy-hook"
      heading="Deploy hook"
      path={`/api/apps/${segment(app.id)}/deploy-hook`}
      fieldsOf={(answer: { deployHook: { url: string } }) => [{ label: "Deploy-hook URL", value: answer.deployHook.url }]}
      canReplace={canReplace}
      labels={{
        show: "Show the URL",
        replace: "Replace the URL",
        confirm: `Replace the deploy-hook URL of ${app.name}? The current one stops working at once.`,
        replaced: "Replaced: the previous URL no longer deploys.",
      }}
    >
      A POST to this URL, from any CI and without a key, deploys the app as a push does: {app.repository ? "the head of its branch" : "the source it was last deployed from"}. Keep it
      secret; replace it if it leaks.
    </SecretSection>
  );
}
