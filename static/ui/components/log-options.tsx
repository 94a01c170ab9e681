// The choices every log view offers: how many of the last lines to read, and whether to show the
// engine's timestamps (an app's logs, a database's logs).
import "./widgets.css";

export function LogOptions(props: { tail: number; tails: number[]; onTail(tail: number): void; timestamps: boolean; onTimestamps(shown: boolean): void }) {
  return (
    <>
      <label class="field">
        <span class="field-label">Lines</span>
        <select value={String(props.tail)} onChange={(event) => props.onTail(Number((event.currentTarget as HTMLSelectElement).value))}>
          {props.tails.map((count) => (
            <option value={String(count)}>{`Last ${count}`}</option>
          ))}
        </select>
      </label>
      <label class="check">
        <input type="checkbox" checked={props.timestamps} onChange={(event) => props.onTimestamps((event.currentTarget as HTMLInputElement).checked)} />
        Timestamps
      </label>
    </>
  );
}
