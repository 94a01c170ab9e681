// Settings > Developer: the caller's API keys: create (shown once), enable or disable, revoke; for
// owners and admins, every key that acts in the workspace, whoever holds it, which they may revoke here.
import { useState } from "preact/hooks";
import { api, segment } from "../../api";
import { ActionButton, Field, Form } from "../../components/form";
import { Table } from "../../components/table";
import { CopyButton, ErrorText, When } from "../../components/text";
import { may, useLoad, useSession } from "../../session";

interface ApiKey {
  id: string;
  name: string;
  start: string | null;
  prefix: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  enabled: boolean;
}

function EnabledSwitch({ apiKey, onError }: { apiKey: ApiKey; onError: (message: string) => void }) {
  const [enabled, setEnabled] = useState(apiKey.enabled);
  const [busy, setBusy] = useState(false);
  const toggle = async (event: Event) => {
    const wanted = (event.currentTarget as HTMLInputElement).checked;
    // Shown switched at once (the box is the person's); switched back when the API refuses.
    setEnabled(wanted);
    setBusy(true);
    onError("");
    try {
      await api("PUT", `/api/api-keys/${segment(apiKey.id)}`, { enabled: wanted });
    } catch (failure) {
      setEnabled(!wanted);
      onError((failure as Error).message);
    }
    setBusy(false);
  };
  return <input type="checkbox" role="switch" checked={enabled} disabled={busy} aria-label={`Enable ${apiKey.name}`} onChange={toggle} />;
}

/** The start of a key, all that is ever shown again of it. */
const KeyStart = ({ apiKey }: { apiKey: ApiKey }) => <code>{`${apiKey.start ?? apiKey.prefix}…`}</code>;

interface WorkspaceKey extends ApiKey {
  email: string;
}

/**
 * Every key acting in the workspace, with its holder: a leaked one is revoked here without its
 * holder. Read again at each `revision`; `onRevoked` tells the tab (the key may be the person's own).
 */
function WorkspaceKeys({ revision, onRevoked }: { revision: number; onRevoked: () => Promise<void> }) {
  const keys = useLoad(() => api<{ keys: WorkspaceKey[] }>("GET", "/api/organization/api-keys").then(({ keys }) => keys), [revision]);
  const [error, setError] = useState("");
  const revoke = async (key: WorkspaceKey) => {
    if (!confirm(`Revoke ${key.email}'s key "${key.name}" in this workspace? Anything using it here stops working at once.`)) return;
    await api("DELETE", `/api/organization/api-keys/${segment(key.id)}`);
    await onRevoked();
  };
  return (
    <>
      <h3>All keys in this workspace</h3>
      <p class="muted">Every member's keys that act here. Revoking one made elsewhere only takes this workspace from it.</p>
      <ErrorText message={error || keys.error} />
      {keys.data && (
        <Table
          caption="All keys in this workspace"
          headings={["Holder", "Name", "Key", "Last used", "Expires", ""]}
          empty="No API keys act in this workspace."
          rows={keys.data.map((key) => [
            key.email,
            key.name,
            <KeyStart apiKey={key} />,
            <When iso={key.lastUsedAt} empty="Never" />,
            <When iso={key.expiresAt} empty="Never" />,
            <ActionButton class="danger" label={`Revoke ${key.email}'s ${key.name}`} run={() => revoke(key)} onError={setError}>
              Revoke
            </ActionButton>,
          ])}
        />
      )}
    </>
  );
}

export function DeveloperTab() {
  const { session } = useSession();
  const seesWorkspaceKeys = may(session, "GET /api/organization/api-keys");
  const keys = useLoad(() => api<{ keys: ApiKey[] }>("GET", "/api/api-keys/").then(({ keys }) => keys));
  const [listError, setListError] = useState("");
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  // Bumped whenever a key changes here, so both lists are read again.
  const [revision, setRevision] = useState(0);
  const keysChanged = async () => {
    await keys.reload();
    setRevision((count) => count + 1);
  };

  const create = async (values: Record<string, string>, form: HTMLFormElement) => {
    const body: { name: string; expiresIn?: number } = { name: values.name!.trim() };
    if (values.expiresInDays) body.expiresIn = Number(values.expiresInDays) * 86400;
    const made = await api<{ key: string }>("POST", "/api/api-keys/", body);
    form.reset();
    setCreated({ name: body.name, key: made.key });
    await keysChanged();
  };
  const revoke = async (key: ApiKey) => {
    if (!confirm(`Revoke the key "${key.name}"? Anything using it stops working at once.`)) return;
    await api("DELETE", `/api/api-keys/${segment(key.id)}`);
    await keysChanged();
  };

  return (
    <>
      <h2>API keys</h2>
      <p class="muted">
        Keys authenticate calls to the API: send <code>Authorization: Bearer svc_…</code>. A key acts as you in this workspace.
      </p>
      <h3>New key</h3>
      <Form class="inline" label="New key" submitText="Create key" onSubmit={create}>
        <Field label="Name" name="name" required maxLength={100} placeholder="ci-deploy" />
        <Field label="Expires in (days)" name="expiresInDays" type="number" min={1} max={3650} step={1} placeholder="Never" />
      </Form>
      <div role="status">
        {created && (
          <div class="callout">
            <p>
              <strong>{`Your new key "${created.name}". `}</strong>Copy it now: it won't be shown again.
            </p>
            <div class="secret">
              <code data-testid="new-key">{created.key}</code>
              <CopyButton text={created.key} />
            </div>
            <button type="button" class="quiet" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        )}
      </div>
      <h3>Your keys</h3>
      <ErrorText message={listError || keys.error} />
      {keys.data && (
        <Table
          caption="API keys"
          headings={["Name", "Key", "Created", "Last used", "Expires", "Enabled", ""]}
          empty="No API keys yet."
          rows={keys.data.map((key) => [
            key.name,
            <KeyStart apiKey={key} />,
            <When iso={key.createdAt} />,
            <When iso={key.lastUsedAt} empty="Never" />,
            <When iso={key.expiresAt} empty="Never" />,
            <EnabledSwitch key={key.id} apiKey={key} onError={setListError} />,
            <ActionButton class="danger" label={`Revoke ${key.name}`} run={() => revoke(key)} onError={setListError}>
              Revoke
            </ActionButton>,
          ])}
        />
      )}
      {seesWorkspaceKeys && <WorkspaceKeys revision={revision} onRevoked={keysChanged} />}
    </>
  );
}
