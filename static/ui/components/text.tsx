// Small pieces of text: a time in the reader's locale, an error line, and a copy button.
import { useState } from "preact/hooks";

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export function When({ iso, empty = "—" }: { iso: string | null | undefined; empty?: string }) {
  if (!iso) return <>{empty}</>;
  return (
    <time dateTime={iso} title={iso}>
      {dateFormat.format(new Date(iso))}
    </time>
  );
}

/** An error message for the area it sits in; empty, it takes no room but screen readers hear it when it fills. */
export function ErrorText({ message }: { message: string }) {
  return (
    <p class="error" role="alert">
      {message}
    </p>
  );
}

/** Copies `text`; `label` names what is copied when the button sits beside other copy buttons. */
export function CopyButton({ text, label: what }: { text: string; label?: string }) {
  const [label, setLabel] = useState("Copy");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setLabel("Copied");
    } catch {
      setLabel("Copy failed: select the text");
    }
    setTimeout(() => setLabel("Copy"), 2000);
  };
  return (
    <button type="button" aria-label={what ? `${label} ${what}` : undefined} onClick={copy}>
      {label}
    </button>
  );
}

/**
 * Where a page leaves out what the user's role may not do (the API would refuse it with 403): the
 * sentence starts with the role, `children` say what it may.
 */
export function ReadOnlyNote({ role, children }: { role: string; children: string }) {
  return <p class="muted read-only-note">{`Your role in this workspace (${role}) ${children}`}</p>;
}
