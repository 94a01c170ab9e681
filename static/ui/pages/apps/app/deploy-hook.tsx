// The app's deploy-hook URL, under its settings: POST to it from any CI, no key, to deploy the app
// (the branch head of a repository app, the kept source of a ZIP app). The URL is a secret, made
// on its first read: the page asks for it only when the person does, and can replace it.
import { useState } from "preact/hooks";
import { api, segment } from "../../../api";
import { ActionButton } from "../../../components/form";
import { ErrorText } from "../../../components/text";
import { Secret } from "../../../components/widgets";
import type { App } from "./types";

export function DeployHook({ app, canReplace }: { app: App; canReplace: boolean }) {
  const [url, setUrl] = useState<string | null>(null);
  const [replaced, setReplaced] = useState(false);
  const [error, setError] = useState("");
  const path = `/api/apps/${segment(app.id)}/deploy-hook`;
  const show = async () => setUrl((await api<{ deployHook: { url: string } }>("GET", path)).deployHook.url);
  const replace = async () => {
    if (!confirm(`Replace the deploy-hook URL of ${app.name}? The current one stops working at once.`)) return;
    setUrl((await api<{ deployHook: { url: string } }>("POST", path)).deployHook.url);
    setReplaced(true);
  };
  return (
    <section aria-labelledby="deploy-hook-heading">
      <h3 id="deploy-hook-heading">Deploy hook</h3>
      <p class="muted">
        A POST to this URL, from any CI and without a key, deploys the app as a push does: {app.repository ? "the head of its branch" : "the source it was last deployed from"}. Keep it
        secret; replace it if it leaks.
      </p>
      {url && <Secret value={url} label="Deploy-hook URL" />}
      <div class="form-actions">
        {!url && (
          <ActionButton run={show} onError={setError}>
            Show the URL
          </ActionButton>
        )}
        {canReplace && (
          <ActionButton run={replace} onError={setError}>
            Replace the URL
          </ActionButton>
        )}
      </div>
      <p role="status" class="notice">
        {replaced && "Replaced: the previous URL no longer deploys."}
      </p>
      <ErrorText message={error} />
    </section>
  );
}
