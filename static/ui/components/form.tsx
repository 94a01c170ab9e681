// Forms: labelled fields (the label wraps its control, so no ids are needed) and a form that hands
// its values to an async action, disables its button while it runs (a double click sends once) and
// shows the API's message under it when it fails.
import type { ComponentChildren, InputHTMLAttributes } from "preact";
import { useState } from "preact/hooks";

type InputProps = InputHTMLAttributes<HTMLInputElement>;

export function Field({ label, hint, ...input }: { label: string; hint?: ComponentChildren } & InputProps) {
  return (
    <label class="field">
      <span class="field-label">{label}</span>
      <input {...input} />
      {hint && <small>{hint}</small>}
    </label>
  );
}

export function SelectField({ label, name, options }: { label: string; name: string; options: [value: string, text: string][] }) {
  return (
    <label class="field">
      <span class="field-label">{label}</span>
      <select name={name}>
        {options.map(([value, text]) => (
          <option value={value}>{text}</option>
        ))}
      </select>
    </label>
  );
}

export type FormValues = Record<string, string>;

export function Form(props: {
  label: string;
  submitText: string;
  onSubmit: (values: FormValues, form: HTMLFormElement) => Promise<unknown>;
  class?: string;
  children: ComponentChildren;
}) {
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    setError("");
    setBusy(true);
    try {
      await props.onSubmit(Object.fromEntries(new FormData(form)) as FormValues, form);
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form aria-label={props.label} class={props.class} onSubmit={submit}>
      {props.children}
      <div class="form-actions">
        <button type="submit" class="primary" disabled={busy}>
          {props.submitText}
        </button>
      </div>
      <p class="error" role="alert">
        {error}
      </p>
    </form>
  );
}

/**
 * A button's click that runs `run` with the button disabled, reporting a failure's message to
 * `onError` (the page shows it near the button).
 */
export function ActionButton(props: { run: () => Promise<unknown>; onError: (message: string) => void; class?: string; label?: string; children: ComponentChildren }) {
  const [busy, setBusy] = useState(false);
  const click = async () => {
    setBusy(true);
    props.onError("");
    try {
      await props.run();
    } catch (failure) {
      props.onError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" class={props.class} aria-label={props.label} disabled={busy} onClick={click}>
      {props.children}
    </button>
  );
}
