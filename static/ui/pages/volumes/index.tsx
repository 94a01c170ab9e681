// Volumes: `#/volumes` every volume of the workspace with its app (or "detached"), machine and
// size; `#/volumes/<volumeId>` one volume: attach a detached one to an app, delete a detached one
// after typing its name, and its backups, restores and schedule (./backups.tsx).
import "./volumes.css";
import { useEffect, useState } from "preact/hooks";
import { api } from "../../api";
import { everyFewSeconds, formatBytes } from "../../components/backups";
import { Field, Form, SelectField } from "../../components/form";
import { Table } from "../../components/table";
import { ErrorText, When } from "../../components/text";
import { ConfirmByName, Facts, Spinner } from "../../components/widgets";
import { href } from "../../router";
import { may, useLoad, useSession } from "../../session";
import { VolumeBackups } from "./backups";
import { volumePath, type Volume } from "./types";

/** `route` is the hash after `volumes`: [] or [volumeId]. */
export function VolumesSection({ route }: { route: string[] }) {
  const [volumeId] = route;
  if (volumeId) return <VolumePage key={volumeId} volumeId={volumeId} />;
  return <VolumeList />;
}

const appOf = (volume: Volume) => (volume.appId ? <a href={href("apps", volume.appId, "volumes")}>{volume.appName}</a> : "detached");

function VolumeList() {
  const list = useLoad(() => api<{ volumes: Volume[] }>("GET", "/api/volumes/").then(({ volumes }) => volumes));
  // Sizes are measured in the background and apps come and go: the list follows them.
  useEffect(() => everyFewSeconds(() => void list.reload(), 5000), [list.reload]);
  return (
    <>
      <h1>Volumes</h1>
      <p class="muted">Apps' data folders. A volume outlives its app's deploys, and its app too unless deleted with it: a kept one is detached, to attach to another app or delete.</p>
      <ErrorText message={list.error} />
      {!list.data && !list.error && <Spinner />}
      {list.data && (
        <Table
          caption="Volumes"
          headings={["Name", "App", "Mount path", "Machine", "Size"]}
          empty="No volumes yet. An app gets one at deploy or in its Volumes tab."
          rowKeys={list.data.map((volume) => volume.id)}
          rows={list.data.map((volume) => [
            <a href={href("volumes", volume.id)}>{volume.name}</a>,
            appOf(volume),
            <code>{volume.mountPath}</code>,
            volume.machineId,
            formatBytes(volume.sizeBytes),
          ])}
        />
      )}
    </>
  );
}

function VolumePage({ volumeId }: { volumeId: string }) {
  const { session } = useSession();
  const loaded = useLoad(() => api<{ volume: Volume }>("GET", volumePath(volumeId)).then(({ volume }) => volume), [volumeId]);
  const volume = loaded.data;
  const [notice, setNotice] = useState("");
  const back = (
    <p>
      <a href={href("volumes")}>← Volumes</a>
    </p>
  );
  if (!volume) return <>{back}{loaded.error ? <ErrorText message={loaded.error} /> : <Spinner />}</>;
  const facts: [string, preact.ComponentChildren][] = [
    ["App", appOf(volume)],
    ["Mount path", <code>{volume.mountPath}</code>],
    ["Machine", volume.machineId],
    ["Size", <>{formatBytes(volume.sizeBytes)} {volume.sizeMeasuredAt && <span class="muted">(measured <When iso={volume.sizeMeasuredAt} />)</span>}</>],
    ["Created", <When iso={volume.createdAt} />],
  ];
  const remove = async () => {
    await api("DELETE", volumePath(volume.id));
    location.hash = href("volumes");
  };
  return (
    <>
      {back}
      <h1>{volume.name}</h1>
      <Facts facts={facts} />
      {volume.detached && may(session, "POST /api/volumes/{volumeId}/attach") && (
        <AttachForm
          volume={volume}
          onAttached={async (appName) => {
            setNotice(`Attached to ${appName}, which restarts with it.`);
            await loaded.reload();
          }}
        />
      )}
      <p role="status" class="notice">
        {notice}
      </p>
      {volume.detached && may(session, "DELETE /api/volumes/{volumeId}") && (
        <>
          <h2>Delete</h2>
          <ConfirmByName name={volume.name} action="Delete volume" onConfirm={remove}>
            <p class="muted">The volume {volume.name}, all its data and its backups (files and remote copies) are deleted. This cannot be undone.</p>
          </ConfirmByName>
        </>
      )}
      <h2>Backups</h2>
      <VolumeBackups volume={volume} appName={volume.appName} />
    </>
  );
}

interface AppChoice {
  id: string;
  name: string;
}

function AttachForm({ volume, onAttached }: { volume: Volume; onAttached: (appName: string) => Promise<void> }) {
  const apps = useLoad(() => api<{ apps: AppChoice[] }>("GET", "/api/apps/").then((answer) => answer.apps));
  const attach = async (values: Record<string, string>) => {
    const { app } = await api<{ app: AppChoice }>("POST", volumePath(volume.id, "/attach"), { appId: values.appId, mountPath: values.mountPath!.trim() || undefined });
    await onAttached(app.name);
  };
  return (
    <>
      <h2>Attach to an app</h2>
      <ErrorText message={apps.error} />
      {apps.data && !apps.data.length && <p class="empty">No app to attach it to yet.</p>}
      {apps.data && apps.data.length > 0 && (
        <Form class="volume-attach" label="Attach to an app" submitText="Attach" onSubmit={attach}>
          <SelectField label="App" name="appId" options={apps.data.map((app) => [app.id, app.name])} />
          <Field label="Mount path" name="mountPath" defaultValue={volume.mountPath} autocomplete="off" spellcheck={false} hint="The app restarts with the volume there." />
        </Form>
      )}
    </>
  );
}
