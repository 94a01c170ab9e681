// A volume's backups, restores and schedule, on the app page's Volumes tab and the Volumes page:
// the shared list and schedule (components/backups.tsx) with each backup's SHA-256 and what its
// verify counted; a restore is confirmed by typing the volume's name, saying that the app is
// stopped and started again, and followed in the list of restores.
import { useEffect } from "preact/hooks";
import { api } from "../../api";
import { BackupList, everyFewSeconds, formatBytes, ScheduleForm, type BackupSchedule } from "../../components/backups";
import { Table } from "../../components/table";
import { ErrorText, When } from "../../components/text";
import { StatusBadge } from "../../components/widgets";
import { useLoad } from "../../session";
import { volumePath, type VolumeBackup, type VolumeRestore } from "./types";

const VOLUME_BACKUP_ROUTES = {
  backUp: "POST /api/volumes/{volumeId}/backups",
  download: "GET /api/volumes/{volumeId}/backups/{backupId}/download",
  verify: "POST /api/volumes/{volumeId}/backups/{backupId}/verify",
  restore: "POST /api/volumes/{volumeId}/restore",
  delete: "DELETE /api/volumes/{volumeId}/backups/{backupId}",
  setSchedule: "PUT /api/volumes/{volumeId}/backup-schedule",
  clearSchedule: "DELETE /api/volumes/{volumeId}/backup-schedule",
};

const verified = (backup: VolumeBackup) => {
  const counted = backup.verification!;
  return `${counted.files} files (${formatBytes(counted.fileBytes)}), ${counted.directories} folders, ${counted.symlinks} symlinks, ${counted.otherEntries} other entries`;
};

/** `appName`: the app that mounts the volume, which a restore stops and starts again; null when detached. */
export function VolumeBackups({ volume, appName }: { volume: { id: string; name: string }; appName: string | null }) {
  const owner = { path: volumePath(volume.id), routes: VOLUME_BACKUP_ROUTES, name: volume.name };
  const schedule = useLoad(() => api<{ schedule: BackupSchedule | null }>("GET", volumePath(volume.id, "/backup-schedule")).then(({ schedule }) => ({ schedule })), [volume.id]);
  const restores = useLoad(() => api<{ restores: VolumeRestore[] }>("GET", volumePath(volume.id, "/restores")).then((answer) => answer.restores), [volume.id]);
  useEffect(() => everyFewSeconds(() => void restores.reload(), 3000), [restores.reload]);
  return (
    <>
      <p class="muted">An archive of the volume's files, made while the app keeps running: stop it first for a consistent copy of a database file.</p>
      <BackupList<VolumeBackup>
        owner={owner}
        columns={[{ heading: "SHA-256", cell: (backup) => (backup.sha256 ? <code class="volume-sha" title={backup.sha256}>{backup.sha256.slice(0, 12)}…</code> : "—") }]}
        verified={verified}
        restoreText={
          <p>
            {appName ? `The app ${appName} is stopped, ` : ""}the volume's content is replaced by this backup (a pre-restore backup of the current content is taken first)
            {appName ? ", and the app is started again (a stopped app stays stopped)." : "."}
          </p>
        }
        restoreStarted={appName ? `Restore started: ${appName} is stopped, restored and started again.` : "Restore started."}
        onChanged={restores.reload}
      />
      <h3>Restores</h3>
      <ErrorText message={restores.error} />
      {restores.data && (
        <Table
          caption="Restores"
          headings={["Started", "Status", "Finished", "Error"]}
          empty="No restores yet."
          rowKeys={restores.data.map((restore) => restore.id)}
          rows={restores.data.map((restore) => [<When iso={restore.startedAt} />, <StatusBadge status={restore.status} />, <When iso={restore.finishedAt} />, restore.error ?? ""])}
        />
      )}
      <ErrorText message={schedule.error} />
      {schedule.data && <ScheduleForm key={JSON.stringify(schedule.data)} owner={owner} schedule={schedule.data.schedule} onChanged={schedule.reload} />}
    </>
  );
}
