// Settings tab: PUT /api/apps/{id}/settings with only the fields the person changed. A refusal that
// names a field ("Invalid body field 'memoryMB': ...") is shown beside that field, else under the form.
// A repository app's GitHub webhook (./github-webhook.tsx) and the deploy-hook URL
// (./deploy-hook.tsx) follow. A role that may not change them reads them in
// disabled fields. An image app has no runtime or builder to choose. The health check has a tab
// of its own (./health.tsx).
import type { ComponentChildren } from "preact";
import { useMemo, useState } from "preact/hooks";
import { api, segment } from "../../../api";
import { ErrorText, ReadOnlyNote } from "../../../components/text";
import { Spinner } from "../../../components/widgets";
import { may, useSession } from "../../../session";
import { DeployHook } from "./deploy-hook";
import { GitHubWebhook } from "./github-webhook";
import { isImageApp } from "./image-source";
import type { App, RateLimits, TabProps } from "./types";

const RATE_LIMIT_FIELDS: [keyof RateLimits, string][] = [
  ["clientBurst", "Burst per client"],
  ["clientRps", "Requests per second per client"],
  ["hostBurst", "Burst for the whole app"],
  ["hostRps", "Requests per second for the whole app"],
];
const FIELDS = ["name", "runtime", "memoryMB", "cpus", "startupCommand", "exposePort", "subdomain", "autoRestart", "autoDeploy", "builder", "httpsRedirect", "hsts", ...RATE_LIMIT_FIELDS.map(([field]) => `rateLimits.${field}`)];

/** Which field an API message is about: the path it names, else the first field name it mentions. */
function fieldOfMessage(message: string): string | null {
  const named = /field '([A-Za-z.]+)'/.exec(message)?.[1];
  if (named && FIELDS.includes(named)) return named;
  if (named === "rateLimits") return "rateLimits.clientBurst";
  return FIELDS.find((field) => new RegExp(`\\b${field.replace(".", "\\.")}\\b`).test(message)) ?? null;
}

export function SettingField(props: { name: string; label: string; error?: string; hint?: ComponentChildren; children: (ids: { id: string; describedBy?: string; invalid: boolean }) => ComponentChildren }) {
  const id = `app-setting-${props.name.replace(".", "-")}`;
  const describedBy = [props.error ? `${id}-error` : "", props.hint ? `${id}-hint` : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div class="field">
      <label class="field-label" for={id}>
        {props.label}
      </label>
      {props.children({ id, describedBy, invalid: Boolean(props.error) })}
      {props.hint && <small id={`${id}-hint`}>{props.hint}</small>}
      {props.error && (
        <span class="field-error" id={`${id}-error`} role="alert">
          {props.error}
        </span>
      )}
    </div>
  );
}

function CheckField({ name, label, checked, hint }: { name: string; label: string; checked: boolean; hint: string }) {
  return (
    <label class="check setting-check">
      <input type="checkbox" name={name} defaultChecked={checked} />
      <span>
        {label} <small class="muted">{hint}</small>
      </span>
    </label>
  );
}

/**
 * A select's options with `current` chosen when the form is drawn (preact has no default value for
 * a select); `current` does not change while the form is shown, so the person's choice stays.
 */
function options(choices: [value: string, label: string][], current: string) {
  return choices.map(([value, label]) => (
    <option value={value} selected={value === current}>
      {label}
    </option>
  ));
}

/** The body of the PUT: only what differs from the app as loaded. */
function changesOf(app: App, form: HTMLFormElement): Record<string, unknown> {
  const values = new FormData(form);
  const text = (name: string) => String(values.get(name) ?? "").trim();
  const numberOrNull = (name: string) => (text(name) === "" ? null : Number(text(name)));
  const body: Record<string, unknown> = {};
  const compare = (field: string, wanted: unknown, current: unknown) => {
    if (wanted !== current) body[field] = wanted;
  };
  compare("name", text("name"), app.name);
  if (values.has("runtime")) compare("runtime", text("runtime"), app.runtime);
  compare("memoryMB", numberOrNull("memoryMB"), app.memoryMB);
  compare("cpus", numberOrNull("cpus"), app.cpus);
  compare("startupCommand", text("startupCommand") || "auto", app.startupCommand);
  compare("exposePort", numberOrNull("exposePort"), app.exposePort);
  compare("subdomain", text("subdomain") || null, app.subdomain);
  if (values.has("builder")) compare("builder", text("builder"), app.builder);
  for (const flag of ["autoRestart", "autoDeploy", "httpsRedirect", "hsts"] as const) compare(flag, values.has(flag), app[flag]);
  const limits: Partial<RateLimits> = {};
  for (const [field] of RATE_LIMIT_FIELDS) {
    const wanted = numberOrNull(`rateLimits.${field}`);
    if (wanted !== (app.rateLimits?.[field] ?? null)) limits[field] = wanted;
  }
  if (Object.keys(limits).length) body.rateLimits = limits;
  return body;
}

interface SettingsAnswer {
  restarted: boolean;
  buildId: string | null;
}

/**
 * The state of a form that saves with PUT /api/apps/{id}/settings. Its fields start from what
 * `formState` takes of the app as loaded; a save remounts it (key `revision`) with the app as saved.
 * Changes are measured against that same state, not against a newer app read by the page's polling.
 * A refusal goes beside the field `fieldOf` finds in its message, else under the form.
 */
export function useSettingsSave<State>(app: App, reloadApp: () => Promise<void>, formState: (app: App) => State, fieldOf: (message: string) => string | null | undefined) {
  const { session } = useSession();
  const canChange = may(session, "PUT /api/apps/{appId}/settings");
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState("");
  const [notice, setNotice] = useState("");
  const [busy, setBusy] = useState(false);
  const [revision, setRevision] = useState(0);
  const loaded = useMemo(() => formState(app), [revision]);

  const save = async (body: Record<string, unknown>, savedText: (answer: SettingsAnswer) => string) => {
    setFieldErrors({});
    setFormError("");
    setNotice("");
    if (!Object.keys(body).length) return setNotice("Nothing changed.");
    setBusy(true);
    try {
      const answer = await api<SettingsAnswer>("PUT", `/api/apps/${segment(app.id)}/settings`, body);
      await reloadApp();
      setRevision(revision + 1);
      setNotice(savedText(answer));
    } catch (failure) {
      const message = (failure as Error).message;
      const field = fieldOf(message);
      if (field) setFieldErrors({ [field]: message });
      else setFormError(message);
    } finally {
      setBusy(false);
    }
  };
  return { session, canChange, loaded, revision, busy, notice, formError, error: (field: string) => fieldErrors[field], save };
}

/** A setting's input, wired to the label, hint and error of its SettingField. */
export const settingInput = (name: string, attributes: Record<string, unknown>) => (ids: { id: string; describedBy?: string; invalid: boolean }) => (
  <input id={ids.id} name={name} aria-describedby={ids.describedBy} aria-invalid={ids.invalid || undefined} {...attributes} />
);

/** The end of a settings form: its save button (and `children`, more buttons) for who may save, what the save said, its refusal. */
export function SaveActions(props: { canChange: boolean; busy: boolean; notice: string; formError: string; submitText: string; children?: ComponentChildren }) {
  return (
    <>
      {props.canChange && (
        <div class="form-actions">
          <button type="submit" class="primary" disabled={props.busy}>
            {props.submitText}
          </button>
          {props.children}
          {props.busy && <Spinner label="Saving…" />}
        </div>
      )}
      <p role="status" class="notice">
        {props.notice}
      </p>
      <ErrorText message={props.formError} />
    </>
  );
}

export function SettingsTab({ app, reloadApp }: TabProps) {
  const { session, canChange, loaded: formApp, revision, busy, notice, formError, error, save } = useSettingsSave(app, reloadApp, (loaded) => loaded, fieldOfMessage);
  const submit = (event: SubmitEvent) => {
    event.preventDefault();
    void save(changesOf(formApp, event.currentTarget as HTMLFormElement), (answer) =>
      answer.buildId ? "Saved. The app is being rebuilt with the new settings." : answer.restarted ? "Saved. The app restarted with the new settings." : "Saved.",
    );
  };
  const input = settingInput;

  return (
    <>
      <h2>Settings</h2>
      {!canChange && <ReadOnlyNote role={session.role}>can read these settings, not change them.</ReadOnlyNote>}
      <form class="settings-form" aria-label="App settings" key={revision} onSubmit={submit} noValidate>
        <fieldset disabled={!canChange}>
          <legend>App</legend>
          <SettingField name="name" label="Name" error={error("name")} hint="Lowercase letters, digits and dashes">
            {input("name", { defaultValue: formApp.name, autocomplete: "off", spellcheck: false })}
          </SettingField>
          <SettingField name="subdomain" label="Subdomain" error={error("subdomain")} hint="Empty: no public address">
            {input("subdomain", { defaultValue: formApp.subdomain ?? "", autocomplete: "off", spellcheck: false })}
          </SettingField>
          {!isImageApp(formApp) && (
            <>
              <SettingField name="runtime" label="Runtime" error={error("runtime")}>
                {(ids) => (
                  <select id={ids.id} name="runtime" aria-describedby={ids.describedBy}>
                    {options([["node", "Node.js"], ["bun", "Bun"], ["python", "Python"]], formApp.runtime)}
                  </select>
                )}
              </SettingField>
              <SettingField name="builder" label="Builder" error={error("builder")}>
                {(ids) => (
                  <select id={ids.id} name="builder" aria-describedby={ids.describedBy}>
                    {options([["auto", "Automatic"], ["dockerfile", "The source's Dockerfile"]], formApp.builder)}
                  </select>
                )}
              </SettingField>
            </>
          )}
          <SettingField name="startupCommand" label="Startup command" error={error("startupCommand")} hint="auto: detected from the source">
            {input("startupCommand", { defaultValue: formApp.startupCommand, autocomplete: "off", spellcheck: false })}
          </SettingField>
          <SettingField name="exposePort" label="Port" error={error("exposePort")} hint="Given to the app as PORT; empty: 3000">
            {input("exposePort", { type: "number", defaultValue: formApp.exposePort ?? "", min: 1, max: 65535 })}
          </SettingField>
        </fieldset>
        <fieldset disabled={!canChange}>
          <legend>Resources</legend>
          <SettingField name="memoryMB" label="Memory (MB)" error={error("memoryMB")} hint="64 to 16384">
            {input("memoryMB", { type: "number", defaultValue: formApp.memoryMB, min: 64, max: 16384, step: 1 })}
          </SettingField>
          <SettingField name="cpus" label="CPUs" error={error("cpus")} hint="0.1 to 16; empty: the platform default">
            {input("cpus", { type: "number", defaultValue: formApp.cpus, min: 0.1, max: 16, step: 0.1 })}
          </SettingField>
        </fieldset>
        <fieldset disabled={!canChange}>
          <legend>Behaviour</legend>
          <CheckField name="autoRestart" label="Restart when it crashes or turns unhealthy" checked={formApp.autoRestart} hint="the platform restarts it with backoff: 2 s, then 4 s, 8 s… up to a ceiling" />
          <CheckField name="autoDeploy" label="Deploy on push" checked={formApp.autoDeploy} hint="repository apps" />
          <CheckField name="httpsRedirect" label="Redirect HTTP to HTTPS" checked={formApp.httpsRedirect} hint="once a certificate serves it" />
          <CheckField name="hsts" label="Send HSTS" checked={formApp.hsts} hint="browsers remember it for a year" />
          {["autoRestart", "autoDeploy", "httpsRedirect", "hsts"].map((flag) => error(flag) && <p class="field-error" role="alert">{error(flag)}</p>)}
        </fieldset>
        <fieldset disabled={!canChange}>
          <legend>Rate limits at the proxy</legend>
          <p class="muted">Empty: the platform's limit (shown as the placeholder).</p>
          <div class="rate-limit-fields">
            {RATE_LIMIT_FIELDS.map(([field, label]) => (
              <SettingField name={`rateLimits.${field}`} label={label} error={error(`rateLimits.${field}`)}>
                {input(`rateLimits.${field}`, { type: "number", min: 1, max: 1000000, step: 1, defaultValue: formApp.rateLimits?.[field] ?? "", placeholder: String(formApp.effectiveRateLimits[field]) })}
              </SettingField>
            ))}
          </div>
        </fieldset>
        <SaveActions canChange={canChange} busy={busy} notice={notice} formError={formError} submitText="Save settings" />
      </form>
      {app.repository && may(session, "GET /api/apps/{appId}/webhook") && <GitHubWebhook app={app} canReplace={may(session, "POST /api/apps/{appId}/webhook")} />}
      {may(session, "GET /api/apps/{appId}/deploy-hook") && <DeployHook app={app} canReplace={may(session, "POST /api/apps/{appId}/deploy-hook")} />}
    </>
  );
}
