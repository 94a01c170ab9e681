// Shared pieces of pages: a spinner for work in progress, tabs, a status badge, a secret that is
// masked until revealed, a confirmation that asks for a name to be typed, a list of facts and a small line chart.
import type { ComponentChildren } from "preact";
import "./widgets.css";
import { useState } from "preact/hooks";
import { CopyButton } from "./text";

/** Work in progress, said to screen readers too. */
export function Spinner({ label = "Loading…" }: { label?: string }) {
  return (
    <span class="spinner" role="status">
      <span class="spinner-wheel" aria-hidden="true" />
      {label}
    </span>
  );
}

/** Links to the tabs of a page (each its own hash route), the current one marked. */
export function Tabs({ label, tabs, current }: { label: string; tabs: { href: string; title: string; id: string }[]; current: string }) {
  return (
    <nav class="tabs" aria-label={label}>
      {tabs.map((tab) => (
        <a href={tab.href} aria-current={tab.id === current ? "page" : undefined}>
          {tab.title}
        </a>
      ))}
    </nav>
  );
}

/** A status word (`running`, `failed`, `building`...) as a coloured badge; the class is the status. */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge status-${status.replace(/[^a-z-]/g, "")}`}>{status}</span>;
}

/** A secret shown as dots until the person reveals it; copying works either way. */
export function Secret({ value, label }: { value: string; label: string }) {
  const [shown, setShown] = useState(false);
  return (
    <span class="secret" role="group" aria-label={label}>
      <code>{shown ? value : "•".repeat(Math.min(value.length, 24))}</code>
      <button type="button" aria-pressed={shown} aria-label={`${shown ? "Hide" : "Reveal"} ${label}`} onClick={() => setShown(!shown)}>
        {shown ? "Hide" : "Reveal"}
      </button>
      <CopyButton text={value} label={label} />
    </span>
  );
}

/**
 * Confirms a destructive action by having the person type `name`: the button works only once the
 * name matches. `onConfirm` runs with the button disabled; its failure is shown under it.
 */
export function ConfirmByName(props: { name: string; action: string; onConfirm: () => Promise<unknown>; children?: ComponentChildren }) {
  const [typed, setTyped] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const confirm = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError("");
    try {
      await props.onConfirm();
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="confirm-by-name" aria-label={props.action} onSubmit={confirm}>
      {props.children}
      <label class="field">
        <span class="field-label">
          Type <strong>{props.name}</strong> to confirm
        </span>
        <input value={typed} autocomplete="off" spellcheck={false} onInput={(event) => setTyped((event.currentTarget as HTMLInputElement).value)} />
      </label>
      <button type="submit" class="danger" disabled={busy || typed !== props.name}>
        {props.action}
      </button>
      <p class="error" role="alert">
        {error}
      </p>
    </form>
  );
}

/** Facts about a resource as labelled tiles ("Status: running"), in the order given. */
export function Facts({ facts }: { facts: [term: string, value: ComponentChildren][] }) {
  return (
    <dl class="app-facts">
      {facts.map(([term, value]) => (
        <div>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * A small line chart of numbers over time (SVG, no library), with its latest value in words for
 * screen readers and a title saying what it shows.
 */
export function Sparkline({ title, values, unit = "", width = 240, height = 48 }: { title: string; values: number[]; unit?: string; width?: number; height?: number }) {
  const latest = values.length ? values[values.length - 1]! : null;
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  const points = values.map((value, index) => `${(index * step).toFixed(1)},${(height - (value / max) * (height - 2) - 1).toFixed(1)}`).join(" ");
  return (
    <figure class="sparkline">
      <figcaption>
        {title}: <strong>{latest === null ? "no data yet" : `${Number.isInteger(latest) ? latest : latest.toFixed(1)}${unit}`}</strong>
      </figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={`${title} over time`}>
        {values.length > 1 && <polyline points={points} fill="none" stroke="currentColor" stroke-width="1.5" />}
      </svg>
    </figure>
  );
}
