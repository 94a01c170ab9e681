// An app's volume list as rows of name and mount path, in the deploy forms and the app's Volumes
// tab: rows are added and removed in the page, and their inputs (`volumes.<n>.name`,
// `volumes.<n>.mountPath`) are read back by volumeListOf as the API takes the list.
import "./volumes.css";
import { useState } from "preact/hooks";

export interface VolumeMount {
  name: string;
  mountPath: string;
}

/**
 * `kept`: the app's volumes, whose name stays; removing one of them detaches it (`removeText`).
 * `readOnly`: for a role that may not change them, the rows without their buttons.
 */
export function VolumeRows({ kept = [], removeText, readOnly = false }: { kept?: VolumeMount[]; removeText: string; readOnly?: boolean }) {
  const [rows, setRows] = useState(() => kept.map((volume, index) => ({ key: index, kept: true, ...volume })));
  const [added, setAdded] = useState(0);
  const add = () => {
    setRows([...rows, { key: kept.length + added, kept: false, name: "", mountPath: "" }]);
    setAdded(added + 1);
  };
  return (
    <div class="volume-rows">
      {rows.map((row, index) => (
        <div class="volume-row" key={row.key} role="group" aria-label={`Volume ${index + 1}`}>
          <label class="field">
            <span class="field-label">Volume {index + 1} name</span>
            <input name={`volumes.${index}.name`} defaultValue={row.name} readOnly={row.kept} autocomplete="off" spellcheck={false} placeholder="data" />
          </label>
          <label class="field">
            <span class="field-label">Volume {index + 1} mount path</span>
            <input name={`volumes.${index}.mountPath`} defaultValue={row.mountPath} autocomplete="off" spellcheck={false} placeholder="/app/data" />
          </label>
          {!readOnly && (
            <button type="button" class="quiet" aria-label={`${removeText} ${row.kept ? row.name : `volume ${index + 1}`}`} onClick={() => setRows(rows.filter((other) => other !== row))}>
              {removeText}
            </button>
          )}
        </div>
      ))}
      {!readOnly && (
        <button type="button" onClick={add}>
          Add a volume
        </button>
      )}
    </div>
  );
}

/** The rows' list, in their order; a row left empty is no volume. */
export function volumeListOf(values: Record<string, string>): VolumeMount[] {
  const list: VolumeMount[] = [];
  for (let index = 0; `volumes.${index}.name` in values; index++) {
    const name = values[`volumes.${index}.name`]!.trim();
    const mountPath = values[`volumes.${index}.mountPath`]?.trim() ?? "";
    if (name || mountPath) list.push({ name, mountPath });
  }
  return list;
}

/** The deploy forms' optional volumes: `{volumes}` when rows were given. */
export function VolumeFields() {
  return (
    <fieldset class="deploy-volumes">
      <legend>Volumes (optional)</legend>
      <p class="muted">
        Folders kept across deploys, restarts and rollbacks. Names: lowercase letters, digits and dashes; a ZIP or repository app mounts under <code>/app/data</code>,
        not <code>/app</code> itself. With a volume, a release stops the old container before it starts the new one.
      </p>
      <VolumeRows removeText="Remove" />
    </fieldset>
  );
}

export function volumesValue(values: Record<string, string>): { volumes?: VolumeMount[] } {
  const volumes = volumeListOf(values);
  return volumes.length ? { volumes } : {};
}
