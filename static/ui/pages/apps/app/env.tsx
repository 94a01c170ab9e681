// Environment tab: the app's variables with values hidden until revealed, edited in place, added
// one by one or merged from pasted `.env` text, then saved at once (PUT merges; a change restarts
// a running app, and the page says whether it did); a saved one is removed with DELETE.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, segment } from "../../../api";
import { ErrorText, ReadOnlyNote } from "../../../components/text";
import { Spinner } from "../../../components/widgets";
import { may, useLoad, useSession } from "../../../session";
import { parseDotEnv } from "./env-file";
import type { TabProps } from "./types";

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

function ValueInput({ name, value, onChange }: { name: string; value: string; onChange(value: string): void }) {
  const [shown, setShown] = useState(false);
  return (
    <span class="env-value">
      <input
        type={shown ? "text" : "password"}
        value={value}
        aria-label={`Value of ${name}`}
        autocomplete="off"
        spellcheck={false}
        onInput={(event) => onChange((event.currentTarget as HTMLInputElement).value)}
      />
      <button type="button" aria-pressed={shown} aria-label={`${shown ? "Hide" : "Reveal"} ${name}`} onClick={() => setShown(!shown)}>
        {shown ? "Hide" : "Reveal"}
      </button>
    </span>
  );
}

export function EnvTab({ app, reloadApp }: TabProps) {
  const { session } = useSession();
  const canEdit = may(session, "PUT /api/apps/{appId}/env");
  const canUnset = may(session, "DELETE /api/apps/{appId}/env/{name}");
  const saved = useLoad(() => api<{ envVars: Record<string, string> }>("GET", `/api/apps/${segment(app.id)}/env`).then(({ envVars }) => envVars), [app.id]);
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [newName, setNewName] = useState("");
  const [newValue, setNewValue] = useState("");
  const [pasted, setPasted] = useState("");
  const [notice, setNotice] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  // A new read of the saved variables becomes the list, keeping the edits not saved yet (one
  // variable removed while another is being edited keeps that edit).
  const lastStored = useRef<Record<string, string> | null>(null);
  useEffect(() => {
    if (!saved.data) return;
    const before = lastStored.current ?? {};
    lastStored.current = saved.data;
    setDraft((current) => {
      const next = { ...saved.data! };
      for (const [name, value] of Object.entries(current)) if (before[name] !== value) next[name] = value;
      return next;
    });
  }, [saved.data]);

  if (!saved.data) return saved.error ? <ErrorText message={saved.error} /> : <Spinner />;
  const stored = saved.data;
  if (!canEdit) return <EnvNames names={Object.keys(stored).sort()} role={session.role} />;
  const changed = Object.entries(draft).filter(([name, value]) => stored[name] !== value);
  const set = (name: string, value: string) => setDraft({ ...draft, [name]: value });

  const add = (event: Event) => {
    event.preventDefault();
    const name = newName.trim();
    if (!NAME.test(name)) return setError(`"${name}" is not a variable name: letters, digits and _ only, not starting with a digit.`);
    setError("");
    set(name, newValue);
    setNewName("");
    setNewValue("");
  };
  const merge = () => {
    const { envVars, skipped } = parseDotEnv(pasted);
    const count = Object.keys(envVars).length;
    setDraft({ ...draft, ...envVars });
    setError(skipped.length ? `Skipped ${skipped.map(({ line }) => `line ${line}`).join(", ")}: not KEY=VALUE.` : "");
    setNotice(`${count} variable${count === 1 ? "" : "s"} merged from the pasted text; save to apply.`);
    if (!skipped.length) setPasted("");
  };
  const save = async () => {
    setBusy(true);
    setError("");
    setNotice("");
    try {
      const answer = await api<{ envVars: Record<string, string>; restarted: boolean }>("PUT", `/api/apps/${segment(app.id)}/env`, { envVars: Object.fromEntries(changed) });
      await saved.reload();
      setNotice(answer.restarted ? "Saved. The app restarted to use them." : "Saved. No restart was needed.");
      await reloadApp();
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };

  /** A saved variable is unset at once (DELETE), after a confirmation: the app restarts without it. */
  const unset = async (name: string) => {
    if (!confirm(`Remove ${name}? A running app restarts without it.`)) return;
    setBusy(true);
    setError("");
    setNotice("");
    try {
      const answer = await api<{ restarted: boolean }>("DELETE", `/api/apps/${segment(app.id)}/env/${segment(name)}`);
      setDraft(Object.fromEntries(Object.entries(draft).filter(([other]) => other !== name)));
      await saved.reload();
      setNotice(answer.restarted ? `Removed ${name}. The app restarted without it.` : `Removed ${name}.`);
      await reloadApp();
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const names = Object.keys(draft).sort();
  return (
    <>
      <h2>Environment variables</h2>
      <p class="muted">Values are stored encrypted and given to the app when it starts. Changing one restarts a running app.</p>
      {names.length === 0 ? (
        <p class="empty">No variables yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Environment variables</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Value</th>
                <th scope="col">
                  <span class="visually-hidden">Change</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {names.map((name) => (
                <tr key={name}>
                  <td>
                    <code>{name}</code>
                  </td>
                  <td>
                    <ValueInput name={name} value={draft[name]!} onChange={(value) => set(name, value)} />
                  </td>
                  <td>
                    {!(name in stored) ? (
                      <button type="button" class="quiet" aria-label={`Remove ${name}`} onClick={() => setDraft(Object.fromEntries(Object.entries(draft).filter(([other]) => other !== name)))}>
                        Remove (not saved)
                      </button>
                    ) : stored[name] !== draft[name] ? (
                      <button type="button" class="quiet" aria-label={`Undo the change of ${name}`} onClick={() => set(name, stored[name]!)}>
                        Undo
                      </button>
                    ) : canUnset ? (
                      <button type="button" class="quiet danger" aria-label={`Remove ${name}`} disabled={busy} onClick={() => unset(name)}>
                        Remove
                      </button>
                    ) : (
                      ""
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h3>Add a variable</h3>
      <form class="inline" aria-label="Add a variable" onSubmit={add}>
        <label class="field">
          <span class="field-label">Name</span>
          <input value={newName} required autocomplete="off" spellcheck={false} placeholder="DATABASE_URL" onInput={(event) => setNewName((event.currentTarget as HTMLInputElement).value)} />
        </label>
        <label class="field">
          <span class="field-label">Value</span>
          <input value={newValue} autocomplete="off" spellcheck={false} onInput={(event) => setNewValue((event.currentTarget as HTMLInputElement).value)} />
        </label>
        <button type="submit">Add</button>
      </form>
      <h3>Paste a .env file</h3>
      <label class="field">
        <span class="field-label">.env text</span>
        <textarea class="env-paste" rows={5} value={pasted} spellcheck={false} placeholder={"# KEY=VALUE lines\nexport API_URL=\"https://example.com\""} onInput={(event) => setPasted((event.currentTarget as HTMLTextAreaElement).value)} />
      </label>
      <button type="button" disabled={!pasted.trim()} onClick={merge}>
        Merge into the list
      </button>
      <div class="env-save">
        <button type="button" class="primary" disabled={busy || changed.length === 0} onClick={save}>
          {changed.length ? `Save ${changed.length} change${changed.length === 1 ? "" : "s"}` : "Save"}
        </button>
        {busy && <Spinner label="Saving…" />}
      </div>
      <p role="status" class="notice">
        {notice}
      </p>
      <ErrorText message={error} />
    </>
  );
}

/** What a role that may not change the variables sees: their names (the API masks their values for a viewer). */
function EnvNames({ names, role }: { names: string[]; role: string }) {
  return (
    <>
      <h2>Environment variables</h2>
      <ReadOnlyNote role={role}>can read the variables' names, not their values, and cannot change them.</ReadOnlyNote>
      {names.length === 0 ? (
        <p class="empty">No variables yet.</p>
      ) : (
        <ul class="env-names" aria-label="Environment variables">
          {names.map((name) => (
            <li key={name}>
              <code>{name}</code>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
