// A section of an app's settings that holds secrets the server makes on their first read (the
// deploy-hook URL, the GitHub webhook's secret): the page asks for them only when the person does,
// and can replace them.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { api } from "../../../api";
import { ActionButton } from "../../../components/form";
import { ErrorText } from "../../../components/text";
import { Secret } from "../../../components/widgets";

export interface SecretField {
  label: string;
  value: string;
}

export function SecretSection(props: {
  id: string;
  heading: string;
  children: ComponentChildren;
  /** GET reads the secrets, POST replaces them. */
  path: string;
  fieldsOf: (answer: any) => SecretField[];
  canReplace: boolean;
  labels: { show: string; replace: string; confirm: string; replaced: string };
}) {
  const [fields, setFields] = useState<SecretField[] | null>(null);
  const [replaced, setReplaced] = useState(false);
  const [error, setError] = useState("");
  const { labels } = props;
  const show = async () => setFields(props.fieldsOf(await api("GET", props.path)));
  const replace = async () => {
    if (!confirm(labels.confirm)) return;
    setFields(props.fieldsOf(await api("POST", props.path)));
    setReplaced(true);
  };
  return (
    <section aria-labelledby={`${props.id}-heading`}>
      <h3 id={`${props.id}-heading`}>{props.heading}</h3>
      <p class="muted">{props.children}</p>
      {/* Keyed by the value too: a replacement starts hidden. */}
      {fields?.map(({ label, value }) => (
        <Secret key={`${label} ${value}`} value={value} label={label} />
      ))}
      <div class="form-actions">
        {!fields && (
          <ActionButton run={show} onError={setError}>
            {labels.show}
          </ActionButton>
        )}
        {props.canReplace && (
          <ActionButton run={replace} onError={setError}>
            {labels.replace}
          </ActionButton>
        )}
      </div>
      <p role="status" class="notice">
        {replaced && labels.replaced}
      </p>
      <ErrorText message={error} />
    </section>
  );
}
