// Settings > Registries: the workspace's image registry credentials (GET/POST /api/registries/):
// listed by host and user (the password is never shown), added, checked with a real login (the
// outcome shown in the row), deleted. Image deploys from that host use them on their own. Every
// role reads the list; those who deploy add, check and delete.
import { useState } from "preact/hooks";
import { api, segment } from "../../api";
import { ActionButton, Field, Form } from "../../components/form";
import { Table } from "../../components/table";
import { ErrorText, ReadOnlyNote, When } from "../../components/text";
import { Spinner } from "../../components/widgets";
import { may, useLoad, useSession } from "../../session";
import "./registries.css";

interface RegistryCredential {
  id: string;
  registry: string;
  username: string;
  createdAt: string;
}

interface LoginCheck {
  ok: boolean;
  message: string;
}

function CheckOutcome({ check }: { check: LoginCheck | "checking" | undefined }) {
  if (check === undefined) return <span class="muted">Not checked</span>;
  if (check === "checking") return <Spinner label="Logging in…" />;
  return (
    <>
      <span class={`badge ${check.ok ? "status-ok" : "status-failed"}`}>{check.ok ? "accepted" : "refused"}</span> {check.message}
    </>
  );
}

export function RegistriesTab() {
  const { session } = useSession();
  const canAdd = may(session, "POST /api/registries/");
  const canCheck = may(session, "POST /api/registries/{registryId}/test");
  const canDelete = may(session, "DELETE /api/registries/{registryId}");
  const credentials = useLoad(() => api<{ registries: RegistryCredential[] }>("GET", "/api/registries/").then(({ registries }) => registries));
  const [checks, setChecks] = useState<Record<string, LoginCheck | "checking">>({});
  const [listError, setListError] = useState("");

  const add = async (values: Record<string, string>, form: HTMLFormElement) => {
    await api("POST", "/api/registries/", { registry: values.registry!.trim(), username: values.username!.trim(), password: values.password });
    form.reset();
    await credentials.reload();
  };
  const check = async (credential: RegistryCredential) => {
    setChecks((shown) => ({ ...shown, [credential.id]: "checking" }));
    try {
      const { login } = await api<{ login: LoginCheck }>("POST", `/api/registries/${segment(credential.id)}/test`);
      setChecks((shown) => ({ ...shown, [credential.id]: login }));
    } catch (failure) {
      setChecks(({ [credential.id]: _dropped, ...others }) => others);
      throw failure;
    }
  };
  const remove = async (credential: RegistryCredential) => {
    if (!confirm(`Delete the credentials for ${credential.registry}? Later pulls from it go without them.`)) return;
    await api("DELETE", `/api/registries/${segment(credential.id)}`);
    await credentials.reload();
  };

  const actions = canCheck || canDelete;
  return (
    <>
      <h2>Registries</h2>
      <p class="muted">
        Logins to image registries for this workspace's deploys from an image: a pull from a host listed here sends its credentials, and only this workspace's. The password
        or token is stored encrypted and never shown again.
      </p>
      {canAdd ? (
        <>
          <h3>Add credentials</h3>
          <Form class="inline registry-form" label="Add registry credentials" submitText="Add" onSubmit={add} fieldOfCode={{ IMAGE_NOT_ALLOWED: "registry", REGISTRY_TAKEN: "registry" }}>
            <Field label="Registry host" name="registry" required maxLength={255} autocomplete="off" spellcheck={false} placeholder="ghcr.io" />
            <Field label="Username" name="username" required maxLength={255} autocomplete="off" spellcheck={false} />
            <Field label="Password or token" name="password" type="password" required maxLength={4096} autocomplete="new-password" />
          </Form>
        </>
      ) : (
        <ReadOnlyNote role={session.role}>can see which registries have credentials, not add, check or delete them.</ReadOnlyNote>
      )}
      <h3>Credentials</h3>
      <ErrorText message={listError || credentials.error} />
      {!credentials.data && !credentials.error && <Spinner />}
      {credentials.data && (
        <Table
          caption="Registry credentials"
          headings={["Registry", "Username", "Added", ...(canCheck ? ["Login check"] : []), ...(actions ? ["Actions"] : [])]}
          empty="No registry credentials yet: images are pulled without a login."
          rowKeys={credentials.data.map((credential) => credential.id)}
          rows={credentials.data.map((credential) => [
            <code>{credential.registry}</code>,
            credential.username,
            <When iso={credential.createdAt} />,
            ...(canCheck
              ? [
                  <span aria-live="polite">
                    <CheckOutcome check={checks[credential.id]} />
                  </span>,
                ]
              : []),
            ...(actions
              ? [
                  <div class="registry-actions">
                    {canCheck && (
                      <ActionButton label={`Check the login to ${credential.registry}`} run={() => check(credential)} onError={setListError}>
                        Check
                      </ActionButton>
                    )}
                    {canDelete && (
                      <ActionButton class="danger" label={`Delete the credentials for ${credential.registry}`} run={() => remove(credential)} onError={setListError}>
                        Delete
                      </ActionButton>
                    )}
                  </div>,
                ]
              : []),
          ])}
        />
      )}
    </>
  );
}
