// A database's backups: take one, list them (size, status, verified), download, verify, restore
// after typing the database's name, delete one after a confirmation, upload a dump with its progress, and the schedule with its
// retention; a warning when the newest backup is older than the schedule promises. Each action is
// offered only to a role that may take it.
import { useEffect, useState } from "preact/hooks";
import { api, upload } from "../../api";
import { ActionButton, Field, Form } from "../../components/form";
import { Table } from "../../components/table";
import { ErrorText, When } from "../../components/text";
import { may, useSession } from "../../session";
import { ConfirmByName, Spinner, StatusBadge } from "../../components/widgets";
import { databasePath, everyFewSeconds, formatBytes, type Backup, type BackupSummary, type Database } from "./types";

export function BackupsTab({ database, summary, onChanged }: { database: Database; summary: BackupSummary; onChanged: () => Promise<void> }) {
  const { session } = useSession();
  const canDownload = may(session, "GET /api/databases/{databaseId}/backups/{backupId}/download");
  const canVerify = may(session, "POST /api/databases/{databaseId}/backups/{backupId}/verify");
  const canRestore = may(session, "POST /api/databases/{databaseId}/restore");
  const canDelete = may(session, "DELETE /api/databases/{databaseId}/backups/{backupId}");
  const hasActions = canDownload || canVerify || canRestore || canDelete;
  const [backups, setBackups] = useState<Backup[] | null>(null);
  const [listError, setListError] = useState("");
  const [actionError, setActionError] = useState("");
  const [restoring, setRestoring] = useState<Backup | null>(null);
  const [notice, setNotice] = useState("");
  const load = async () => {
    try {
      setBackups((await api<{ backups: Backup[] }>("GET", databasePath(database.id, "/backups"))).backups);
      setListError("");
    } catch (failure) {
      setListError((failure as Error).message);
    }
  };
  // Backups and verifies run in the background: the list follows them.
  useEffect(() => {
    void load();
    return everyFewSeconds(() => void load(), 3000);
  }, [database.id]);

  const backUp = async () => {
    await api("POST", databasePath(database.id, "/backups"));
    await load();
  };
  const verify = async (backup: Backup) => {
    await api("POST", databasePath(database.id, `/backups/${encodeURIComponent(backup.id)}/verify`));
    await load();
  };
  const remove = async (backup: Backup) => {
    if (!confirm(`Delete the backup taken ${new Date(backup.createdAt).toLocaleString()}? Its file and remote copies are gone for good.`)) return;
    await api("DELETE", databasePath(database.id, `/backups/${encodeURIComponent(backup.id)}`));
    await Promise.all([load(), onChanged()]);
  };
  const restore = async (backup: Backup) => {
    await api("POST", databasePath(database.id, "/restore"), { backupId: backup.id });
    setRestoring(null);
    setNotice("Restore started: a pre-restore backup is taken first. Its progress is in the History tab.");
    await Promise.all([load(), onChanged()]);
  };

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
      {may(session, "POST /api/databases/{databaseId}/backups") && (
        <ActionButton class="primary" run={backUp} onError={setActionError}>
          Back up now
        </ActionButton>
      )}
      <div role="status">{notice && <p>{notice}</p>}</div>
      <ErrorText message={actionError} />
      <ErrorText message={listError} />
      {restoring && (
        <div class="db-confirm">
          <h3>Restore the backup of <When iso={restoring.createdAt} /></h3>
          <ConfirmByName name={database.name} action="Restore backup" onConfirm={() => restore(restoring)}>
            <p>The database's current data is replaced by this backup (a pre-restore backup is taken first).</p>
          </ConfirmByName>
          <button type="button" class="quiet" onClick={() => setRestoring(null)}>
            Cancel
          </button>
        </div>
      )}
      {!backups && !listError && <Spinner />}
      {backups && (
        <Table
          caption="Backups"
          headings={["Taken", "Type", "Status", "Size", "Verified", ...(hasActions ? [""] : [])]}
          empty="No backups yet."
          rowKeys={backups.map((backup) => backup.id)}
          rows={backups.map((backup) => {
            const cells = [
            <When iso={backup.createdAt} />,
            backup.type,
            <>
              <StatusBadge status={backup.status} />
              {backup.error && <span class="db-row-error">{backup.error}</span>}
            </>,
            backup.status === "completed" ? formatBytes(backup.sizeBytes) : "—",
            <Verification backup={backup} />,
            ];
            if (!hasActions) return cells;
            return [
              ...cells,
              backup.status !== "running" && (
                <span class="db-row-actions">
                  {canDownload && backup.status === "completed" && (
                    <a href={databasePath(database.id, `/backups/${encodeURIComponent(backup.id)}/download`)} download>
                      Download
                    </a>
                  )}
                  {canVerify && backup.status === "completed" && (
                    <ActionButton run={() => verify(backup)} onError={setActionError} label={`Verify backup of ${backup.createdAt}`}>
                      Verify
                    </ActionButton>
                  )}
                  {canRestore && backup.status === "completed" && (
                    <button type="button" aria-label={`Restore backup of ${backup.createdAt}`} onClick={() => setRestoring(backup)}>
                      Restore
                    </button>
                  )}
                  {canDelete && (
                    <ActionButton class="danger" run={() => remove(backup)} onError={setActionError} label={`Delete backup of ${backup.createdAt}`}>
                      Delete
                    </ActionButton>
                  )}
                </span>
              ),
            ];
          })}
        />
      )}
      {may(session, "POST /api/databases/{databaseId}/backups/upload") && <UploadDump database={database} onUploaded={load} />}
      <ScheduleForm
        database={database}
        summary={summary}
        onChanged={onChanged}
        canSet={may(session, "PUT /api/databases/{databaseId}/backup-schedule")}
        canClear={may(session, "DELETE /api/databases/{databaseId}/backup-schedule")}
      />
    </>
  );
}

function Verification({ backup }: { backup: Backup }) {
  const verification = backup.verification;
  if (!verification) return <>not yet</>;
  if (verification.status === "running") return <Spinner label="verifying…" />;
  if (verification.status === "failed") return <span class="db-row-error">failed: {verification.error}</span>;
  const counted = verification.checks.map((check) => `${check.name}: ${check.count}`).join(", ");
  return (
    <span title={counted}>
      passed <When iso={backup.verifiedAt} />
    </span>
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

/** The schedule: its form for a role that may set it, else what it is, in words. */
function ScheduleForm(props: { database: Database; summary: BackupSummary; onChanged: () => Promise<void>; canSet: boolean; canClear: boolean }) {
  const { database, summary, onChanged, canSet, canClear } = props;
  const schedule = summary.schedule;
  const [clearError, setClearError] = useState("");
  const save = async (values: Record<string, string>) => {
    await api("PUT", databasePath(database.id, "/backup-schedule"), {
      cron: values.cron!.trim(),
      keepLast: Number(values.keepLast || 7),
      keepDailyDays: Number(values.keepDailyDays || 0),
      keepWeeklyWeeks: Number(values.keepWeeklyWeeks || 0),
      verify: values.verify === "on",
    });
    await onChanged();
  };
  const clear = async () => {
    await api("DELETE", databasePath(database.id, "/backup-schedule"));
    await onChanged();
  };
  return (
    <>
      <h3>Schedule and retention</h3>
      <p class="muted">
        {schedule ? (
          <>
            Next run <When iso={schedule.nextRunAt} />, last run <When iso={schedule.lastRunAt} empty="never" /> (times in UTC).
          </>
        ) : (
          "No schedule: backups are taken only when you ask."
        )}
      </p>
      {schedule && !canSet && (
        <p>
          {`Runs at ${schedule.cron} (UTC), keeps the last ${schedule.keepLast}` +
            (schedule.keepDailyDays ? `, one a day for ${schedule.keepDailyDays} days` : "") +
            (schedule.keepWeeklyWeeks ? `, one a week for ${schedule.keepWeeklyWeeks} weeks` : "") +
            (schedule.verify ? "; each backup is verified." : ".")}
        </p>
      )}
      {canSet && (
        <Form class="db-form" label="Backup schedule" submitText={schedule ? "Save schedule" : "Set schedule"} onSubmit={save}>
          <Field label="When (cron, UTC)" name="cron" required maxLength={120} defaultValue={schedule?.cron ?? ""} placeholder="0 3 * * *"
            hint="5 fields (minute hour day month weekday) or @daily, @hourly…" />
          <Field label="Keep the last" name="keepLast" type="number" min={1} max={1000} defaultValue={String(schedule?.keepLast ?? 7)} />
          <Field label="Keep one a day for (days)" name="keepDailyDays" type="number" min={0} max={3650} defaultValue={String(schedule?.keepDailyDays ?? 0)} />
          <Field label="Keep one a week for (weeks)" name="keepWeeklyWeeks" type="number" min={0} max={520} defaultValue={String(schedule?.keepWeeklyWeeks ?? 0)} />
          <label class="db-check">
            <input type="checkbox" name="verify" defaultChecked={schedule?.verify ?? false} />
            Verify each scheduled backup
          </label>
        </Form>
      )}
      {schedule && canClear && (
        <ActionButton class="danger" run={clear} onError={setClearError}>
          Clear schedule
        </ActionButton>
      )}
      <ErrorText message={clearError} />
    </>
  );
}
