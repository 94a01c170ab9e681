// A deploy from a ZIP: the app's fields and the file; "Check the ZIP" asks the API which env
// variables the code reads (POST /api/apps/inspect-env) and offers an input for each, any others
// go in as .env text, then Deploy uploads it all (POST /api/apps/deploy) with a progress bar.
import { useEffect, useRef, useState } from "preact/hooks";
import { upload } from "../../../api";
import { ErrorText } from "../../../components/text";
import { Spinner } from "../../../components/widgets";
import { AppFields, appFieldValues } from "./app-fields";
import { EnvTextField, envTextVariables } from "./env-text";
import type { StartedDeploy } from "./progress";

interface EnvVariable {
  name: string;
  required: boolean;
  builtin: boolean;
  exampleValue?: string;
  references: { file: string; line: number }[];
}

export function ZipDeployForm({ onStarted }: { onStarted: (started: StartedDeploy) => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [variables, setVariables] = useState<EnvVariable[] | null>(null);
  const [envValues, setEnvValues] = useState<Record<string, string>>({});
  const [checking, setChecking] = useState(false);
  const [checkError, setCheckError] = useState("");
  const [uploaded, setUploaded] = useState<number | null>(null);
  const [error, setError] = useState("");
  const uploads = useRef<AbortController | null>(null);
  useEffect(() => () => uploads.current?.abort(), []);

  const chooseFile = (event: Event) => {
    setFile((event.currentTarget as HTMLInputElement).files?.[0] ?? null);
    setVariables(null);
    setEnvValues({});
    setCheckError("");
  };

  const check = async () => {
    setCheckError("");
    if (!file) return setCheckError("Choose the ZIP file first.");
    const form = new FormData();
    form.set("file", file);
    setChecking(true);
    uploads.current = new AbortController();
    try {
      const found = await upload<{ variables: EnvVariable[] }>("/api/apps/inspect-env", form, () => {}, uploads.current.signal);
      setVariables(found.variables);
    } catch (failure) {
      setCheckError((failure as Error).message);
    } finally {
      setChecking(false);
    }
  };

  const deploy = async (event: SubmitEvent) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(event.currentTarget as HTMLFormElement)) as Record<string, string>;
    if (!file) return setError("Choose the ZIP file first.");
    let pasted: Record<string, string>;
    try {
      pasted = envTextVariables(values.envText);
    } catch (failure) {
      return setError((failure as Error).message);
    }
    const form = new FormData();
    // A form's fields are text: the health check goes as JSON text, as the API takes it.
    for (const [field, value] of Object.entries(appFieldValues(values))) form.set(field, typeof value === "object" ? JSON.stringify(value) : String(value));
    // A value typed for a variable the check found wins over the same name in the text.
    const envVars = { ...pasted, ...Object.fromEntries(Object.entries(envValues).filter(([, value]) => value !== "")) };
    if (Object.keys(envVars).length) form.set("envVars", JSON.stringify(envVars));
    form.set("file", file);
    setError("");
    setUploaded(0);
    uploads.current = new AbortController();
    try {
      onStarted(await upload<StartedDeploy>("/api/apps/deploy", form, setUploaded, uploads.current.signal));
    } catch (failure) {
      setError((failure as Error).message);
      setUploaded(null);
    }
  };

  const uploading = uploaded !== null;
  return (
    <form class="deploy-form" aria-label="Deploy from a ZIP" onSubmit={deploy} onInput={() => error && setError("")}>
      <AppFields />
      <label class="field">
        <span class="field-label">ZIP file</span>
        <input type="file" accept=".zip,application/zip" required onChange={chooseFile} />
        <small>The app's source with its files at the top or in one folder.</small>
      </label>
      <div class="form-actions">
        <button type="button" disabled={checking || uploading} onClick={check}>
          Check the ZIP
        </button>
        {checking && <Spinner label="Reading the ZIP…" />}
      </div>
      <ErrorText message={checkError} />
      {variables && <EnvInputs variables={variables} values={envValues} onChange={(name, value) => setEnvValues({ ...envValues, [name]: value })} />}
      <EnvTextField hint="KEY=VALUE lines, as in a .env file, for variables the check does not list; a value typed above wins. Stored encrypted." />
      <div class="form-actions deploy-actions">
        <button type="submit" class="primary" disabled={uploading}>
          Deploy
        </button>
        {uploading && (
          <label class="deploy-upload">
            <span>{uploaded < 1 ? `Uploading… ${Math.round(uploaded * 100)}%` : "Uploaded, starting the build…"}</span>
            <progress max={1} value={uploaded} />
          </label>
        )}
      </div>
      <ErrorText message={error} />
    </form>
  );
}

/** The variables the code reads: an input for each one the person may set, the required ones marked. */
function EnvInputs({ variables, values, onChange }: { variables: EnvVariable[]; values: Record<string, string>; onChange: (name: string, value: string) => void }) {
  const settable = variables.filter((variable) => !variable.builtin);
  const builtins = variables.filter((variable) => variable.builtin);
  return (
    <fieldset class="deploy-env">
      <legend>Environment variables</legend>
      {settable.length === 0 && <p class="muted">The code reads no variable that needs a value.</p>}
      {settable.map((variable) => {
        const where = variable.references.slice(0, 3).map((reference) => `${reference.file}:${reference.line}`);
        const more = variable.references.length - where.length;
        return (
          <label class="field" key={variable.name}>
            <span class="field-label">
              {variable.name} {variable.required ? <span class="deploy-required">(required)</span> : <span class="muted">(optional)</span>}
            </span>
            <input
              value={values[variable.name] ?? ""}
              required={variable.required}
              autocomplete="off"
              spellcheck={false}
              placeholder={variable.exampleValue ? `e.g. ${variable.exampleValue}` : undefined}
              onInput={(event) => onChange(variable.name, (event.currentTarget as HTMLInputElement).value)}
            />
            {where.length > 0 && <small>Read in {where.join(", ") + (more > 0 ? ` and ${more} more` : "")}</small>}
          </label>
        );
      })}
      {builtins.length > 0 && <p class="muted">Set by the platform: {builtins.map((variable) => variable.name).join(", ")}.</p>}
    </fieldset>
  );
}
