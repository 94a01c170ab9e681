// A database's backups: the shared list and schedule (components/backups.tsx), a warning when the
// newest backup is older than the schedule promises, and a dump uploaded with its progress.
import { useState } from "preact/hooks";
import { upload } from "../../api";
import { BackupList, ScheduleForm } from "../../components/backups";
import { Field, Form } from "../../components/form";
import { When } from "../../components/text";
import { may, useSession } from "../../session";
import { databasePath, type Backup, type BackupSummary, type Database } from "./types";

const DATABASE_BACKUP_ROUTES = {
  backUp: "POST /api/databases/{databaseId}/backups",
  download: "GET /api/databases/{databaseId}/backups/{backupId}/download",
  verify: "POST /api/databases/{databaseId}/backups/{backupId}/verify",
  restore: "POST /api/databases/{databaseId}/restore",
  delete: "DELETE /api/databases/{databaseId}/backups/{backupId}",
  setSchedule: "PUT /api/databases/{databaseId}/backup-schedule",
  clearSchedule: "DELETE /api/databases/{databaseId}/backup-schedule",
};

export function BackupsTab({ database, summary, onChanged }: { database: Database; summary: BackupSummary; onChanged: () => Promise<void> }) {
  const { session } = useSession();
  const [uploads, setUploads] = useState(0);
  const owner = { path: databasePath(database.id), routes: DATABASE_BACKUP_ROUTES, name: database.name };
  return (
    <>
      <h2>Backups</h2>
      {summary.warning && (
        <p class="db-warning" role="alert">
          {summary.warning}
        </p>
      )}
      <p class="muted">
        Newest completed backup: <When iso={summary.lastCompletedAt} empty="none yet" />
      </p>
      <BackupList<Backup>
        owner={owner}
        verified={(backup) => backup.verification!.checks.map((check) => `${check.name}: ${check.count}`).join(", ")}
        restoreText={<p>The database's current data is replaced by this backup (a pre-restore backup is taken first).</p>}
        restoreStarted="Restore started: a pre-restore backup is taken first. Its progress is in the History tab."
        onChanged={onChanged}
        revision={uploads}
      />
      {may(session, "POST /api/databases/{databaseId}/backups/upload") && <UploadDump database={database} onUploaded={async () => setUploads((count) => count + 1)} />}
      <ScheduleForm owner={owner} schedule={summary.schedule} onChanged={onChanged} />
    </>
  );
}

function UploadDump({ database, onUploaded }: { database: Database; onUploaded: () => Promise<void> }) {
  const [progress, setProgress] = useState<number | null>(null);
  const send = async (_values: Record<string, string>, form: HTMLFormElement) => {
    const file = (form.elements.namedItem("file") as HTMLInputElement).files?.[0];
    if (!file) throw new Error("Choose a dump file first.");
    const body = new FormData();
    body.append("file", file);
    setProgress(0);
    try {
      await upload(databasePath(database.id, "/backups/upload"), body, setProgress);
      form.reset();
      await onUploaded();
    } finally {
      setProgress(null);
    }
  };
  return (
    <>
      <h3>Upload a dump</h3>
      <p class="muted">A dump of this engine, raw or gzip; it becomes an uploaded backup you can verify and restore.</p>
      <Form class="inline" label="Upload a dump" submitText="Upload" onSubmit={send}>
        <Field label="Dump file" name="file" type="file" required />
        {progress !== null && <progress max={1} value={progress} aria-label="Upload progress" />}
      </Form>
    </>
  );
}
