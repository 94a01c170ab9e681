// Volumes tab: the app's volumes (name, mount path, size, a link to each one's backups) and its
// release strategy, changed through PUT /api/apps/{id}/settings (`volumes` is the whole list: a row
// removed is detached, kept, listed on the Volumes page). `#/apps/<id>/volumes/<volumeId>` is one
// volume's backups, restores and schedule (../../volumes/backups.tsx). Also the choice, in the
// delete dialog, to delete the app's volumes with it.
import { useEffect } from "preact/hooks";
import { api } from "../../../api";
import { everyFewSeconds, formatBytes } from "../../../components/backups";
import { Table } from "../../../components/table";
import { ReadOnlyNote } from "../../../components/text";
import { href } from "../../../router";
import { useLoad } from "../../../session";
import { VolumeBackups } from "../../volumes/backups";
import type { Volume } from "../../volumes/types";
import { VolumeRows, volumeListOf } from "../../volumes/mount-rows";
import { SaveActions, SettingField, useSettingsSave } from "./settings";
import type { App, TabProps } from "./types";

const STRATEGIES: [value: App["releaseStrategy"], text: string][] = [
  ["stop-first", "Stop first"],
  ["start-first", "Start first"],
];

/** The body of the PUT: the list when it differs from the app's, the strategy when it changed. */
function changesOf(app: App, form: HTMLFormElement): Record<string, unknown> {
  const values = Object.fromEntries(new FormData(form)) as Record<string, string>;
  const body: Record<string, unknown> = {};
  const volumes = volumeListOf(values);
  const current = app.volumes.map(({ name, mountPath }) => ({ name, mountPath }));
  if (JSON.stringify(volumes) !== JSON.stringify(current)) body.volumes = volumes;
  if (values.releaseStrategy !== app.releaseStrategy) body.releaseStrategy = values.releaseStrategy;
  return body;
}

function VolumesForm({ app, reloadApp }: TabProps) {
  const { session, canChange, loaded: formApp, revision, busy, notice, formError, error, save } = useSettingsSave(app, reloadApp, (loaded) => loaded, (message) =>
    /releaseStrategy/.test(message) ? "releaseStrategy" : null,
  );
  const submit = (event: SubmitEvent) => {
    event.preventDefault();
    void save(changesOf(formApp, event.currentTarget as HTMLFormElement), (answer) => (answer.restarted ? "Saved. The app restarted with its volumes." : "Saved."));
  };
  const reset = () => save({ releaseStrategy: null }, () => "Back to the default release strategy.");
  return (
    <form class="settings-form" aria-label="Volumes and release" key={revision} onSubmit={submit} noValidate>
      {!canChange && <ReadOnlyNote role={session.role}>can read the volumes, not change them.</ReadOnlyNote>}
      <fieldset disabled={!canChange}>
        <legend>Mounted volumes</legend>
        <p class="muted">A change restarts the app. A volume removed here is detached, not deleted: its data waits on the Volumes page, to attach again or delete.</p>
        <VolumeRows kept={formApp.volumes} removeText="Detach" readOnly={!canChange} />
      </fieldset>
      <fieldset disabled={!canChange}>
        <legend>Release</legend>
        <SettingField name="releaseStrategy" label="Release strategy" error={error("releaseStrategy")} hint="Stop first: the old container stops, then the new one starts (a short 503). Start first: the new one starts while the old one serves. Default: stop first with volumes, since two processes writing one SQLite file corrupt it">
          {(ids) => (
            <select id={ids.id} name="releaseStrategy" aria-describedby={ids.describedBy}>
              {STRATEGIES.map(([value, text]) => (
                <option value={value} selected={value === formApp.releaseStrategy}>
                  {text}
                </option>
              ))}
            </select>
          )}
        </SettingField>
      </fieldset>
      <SaveActions canChange={canChange} busy={busy} notice={notice} formError={formError} submitText="Save volumes">
        <button type="button" disabled={busy} onClick={reset}>
          Default release strategy
        </button>
      </SaveActions>
    </form>
  );
}

/**
 * The app's volumes' sizes as the engine measures them: reading /api/volumes starts a measure when
 * the last one is stale (the app's own view has the sizes as last recorded).
 */
function useMeasuredSizes(app: App) {
  const measured = useLoad(() => api<{ volumes: Volume[] }>("GET", "/api/volumes/").then(({ volumes }) => volumes), [app.id]);
  useEffect(() => everyFewSeconds(() => void measured.reload(), 5000), [measured.reload]);
  return (volume: App["volumes"][number]) => formatBytes(measured.data?.find((candidate) => candidate.id === volume.id)?.sizeBytes ?? volume.sizeBytes);
}

export function VolumesTab({ app, reloadApp, rest }: TabProps) {
  const [volumeId] = rest;
  const sizeOf = useMeasuredSizes(app);
  if (volumeId) {
    const volume = app.volumes.find((candidate) => candidate.id === volumeId);
    return (
      <>
        <p>
          <a href={href("apps", app.id, "volumes")}>← Volumes of {app.name}</a>
        </p>
        {volume ? (
          <>
            <h2>
              Volume {volume.name} <span class="muted">at {volume.mountPath}</span>
            </h2>
            <p class="muted">{sizeOf(volume)} used.</p>
            <h3>Backups</h3>
            <VolumeBackups volume={volume} appName={app.name} />
          </>
        ) : (
          <p class="empty">The app no longer mounts this volume: it is on the Volumes page.</p>
        )}
      </>
    );
  }
  return (
    <>
      <h2>Volumes</h2>
      <Table
        caption="Volumes"
        headings={["Name", "Mount path", "Size", ""]}
        empty="No volumes: everything the app writes is lost at its next deploy."
        rowKeys={app.volumes.map((volume) => volume.id)}
        rows={app.volumes.map((volume) => [
          volume.name,
          <code>{volume.mountPath}</code>,
          sizeOf(volume),
          <a href={href("apps", app.id, "volumes", volume.id)} aria-label={`Backups of ${volume.name}`}>
            Backups
          </a>,
        ])}
      />
      <VolumesForm app={app} reloadApp={reloadApp} rest={rest} />
    </>
  );
}

/** In the delete dialog of an app with volumes: delete them too (off: they are kept, detached). */
export function DeleteVolumesChoice({ app, checked, onChange }: { app: App; checked: boolean; onChange: (checked: boolean) => void }) {
  if (!app.volumes.length) return null;
  return (
    <label class="volume-delete-volumes">
      <input type="checkbox" checked={checked} onChange={(event) => onChange((event.currentTarget as HTMLInputElement).checked)} />
      Also delete its volumes ({app.volumes.map((volume) => volume.name).join(", ")}), their data and their backups; otherwise they are kept, detached
    </label>
  );
}
