// Forms: labelled fields (the label wraps its control) and a form that hands its values to an async
// action, disables its button while it runs (a double click sends once) and shows the API's message
// under it when it fails, or, for a form that asks for it, beside the field the message names.
import { createContext, type ComponentChildren, type InputHTMLAttributes } from "preact";
import { useContext, useId, useState } from "preact/hooks";
import { ApiError } from "../api";

type InputProps = InputHTMLAttributes<HTMLInputElement>;

/** The refusal shown beside a field of the enclosing Form, by the field's name. */
const FieldErrors = createContext<Record<string, string>>({});

export function Field({ label, hint, ...input }: { label: string; hint?: ComponentChildren } & InputProps) {
  const error = useContext(FieldErrors)[String(input.name)];
  const errorId = useId();
  return (
    <label class="field">
      <span class="field-label">{label}</span>
      <input {...input} aria-invalid={error ? true : undefined} aria-describedby={error ? errorId : undefined} />
      {hint && <small>{hint}</small>}
      {error && (
        <span class="field-error" id={errorId} role="alert">
          {error}
        </span>
      )}
    </label>
  );
}

/**
 * The field of `form` a refusal is about: the one its message names ("Invalid body field 'image':
 * ..."), else the one `fieldOfCode` gives for its code; null when it is about none of them.
 */
function refusedField(failure: unknown, form: HTMLFormElement, fieldOfCode: Record<string, string>): string | null {
  if (!(failure instanceof ApiError)) return null;
  const named = /field '([A-Za-z.]+)'/.exec(failure.message)?.[1] ?? (failure.code ? fieldOfCode[failure.code] : undefined);
  return named && form.elements.namedItem(named) ? named : null;
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
  /** Refusals are shown beside the field they name, and these codes beside the fields given. */
  fieldOfCode?: Record<string, string>;
  children: ComponentChildren;
}) {
  const [error, setError] = useState("");
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    setError("");
    setFieldErrors({});
    setBusy(true);
    try {
      await props.onSubmit(Object.fromEntries(new FormData(form)) as FormValues, form);
    } catch (failure) {
      const field = props.fieldOfCode && refusedField(failure, form, props.fieldOfCode);
      if (field) {
        setFieldErrors({ [field]: (failure as Error).message });
        (form.elements.namedItem(field) as HTMLElement).focus();
      } else setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form aria-label={props.label} class={props.class} onSubmit={submit}>
      <FieldErrors.Provider value={fieldErrors}>{props.children}</FieldErrors.Provider>
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
