// Backups of a resource that keeps them (a database, a volume), with one action model for every
// kind: make one, list them (status, size, verified), download, verify, restore after typing the
// resource's name, delete after a confirmation; and the schedule with its retention. Each action is
// offered only to a role that may take it. A page gives what differs: the resource's paths, extra
// columns, what a passed verification counted and what a restore does.
import "./backups.css";
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { may, useSession } from "../session";
import { ActionButton, Field, Form } from "./form";
import { Table } from "./table";
import { ErrorText, When } from "./text";
import { ConfirmByName, Spinner, StatusBadge } from "./widgets";

/** The resource whose backups these are. */
export interface BackupOwner {
  /** Its API path, as `/api/volumes/vol_1`: the backups are under `${path}/backups`. */
  path: string;
  /** Its backup routes as the session's permissions write them (written out, so that a test checks each is a route). */
  routes: BackupRoutes;
  /** Typed to confirm a restore. */
  name: string;
}

export interface BackupRoutes {
  backUp: string;
  download: string;
  verify: string;
  restore: string;
  delete: string;
  setSchedule: string;
  clearSchedule: string;
}

export interface BackupRow {
  id: string;
  type: string;
  status: string;
  sizeBytes: number;
  error: string | null;
  verifiedAt: string | null;
  verification: { status: string; error: string | null } | null;
  createdAt: string;
}

export interface BackupSchedule {
  cron: string;
  keepLast: number;
  keepDailyDays: number;
  keepWeeklyWeeks: number;
  verify: boolean;
  nextRunAt: string | null;
  lastRunAt: string | null;
}

const UNITS = ["B", "KB", "MB", "GB", "TB"];
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return "—";
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${UNITS[unit]}`;
}

/** Calls `tick` every `ms` (not at once, and not while the tab is hidden) until the answered stop is called. */
export function everyFewSeconds(tick: () => void, ms: number): () => void {
  const timer = setInterval(() => document.hidden || tick(), ms);
  return () => clearInterval(timer);
}

const backupPath = (owner: BackupOwner, backup: BackupRow, rest = "") => `${owner.path}/backups/${encodeURIComponent(backup.id)}${rest}`;

export function BackupList<Backup extends BackupRow>(props: {
  owner: BackupOwner;
  /** Columns after the size, as a volume's SHA-256. */
  columns?: { heading: string; cell: (backup: Backup) => ComponentChildren }[];
  /** What a passed verification counted, in words (shown as its title). */
  verified: (backup: Backup) => string;
  /** What a restore does to the resource, shown in its confirmation. */
  restoreText: ComponentChildren;
  /** Said once the API accepted a restore. */
  restoreStarted: string;
  /** Called after a restore or a delete changed what the page shows beside the list. */
  onChanged?: () => Promise<void>;
  /** Bumped by the page to read the list again (an upload added one). */
  revision?: number;
}) {
  const { owner, columns = [] } = props;
  const { session } = useSession();
  const canDownload = may(session, owner.routes.download);
  const canVerify = may(session, owner.routes.verify);
  const canRestore = may(session, owner.routes.restore);
  const canDelete = may(session, owner.routes.delete);
  const hasActions = canDownload || canVerify || canRestore || canDelete;
  const [backups, setBackups] = useState<Backup[] | null>(null);
  const [listError, setListError] = useState("");
  const [actionError, setActionError] = useState("");
  const [restoring, setRestoring] = useState<Backup | null>(null);
  const [notice, setNotice] = useState("");
  const load = async () => {
    try {
      setBackups((await api<{ backups: Backup[] }>("GET", `${owner.path}/backups`)).backups);
      setListError("");
    } catch (failure) {
      setListError((failure as Error).message);
    }
  };
  // Backups and verifies run in the background: the list follows them.
  useEffect(() => {
    void load();
    return everyFewSeconds(() => void load(), 3000);
  }, [owner.path, props.revision]);
  const changed = () => Promise.all([load(), props.onChanged?.()]);

  const backUp = async () => {
    await api("POST", `${owner.path}/backups`);
    await load();
  };
  const verify = async (backup: Backup) => {
    await api("POST", backupPath(owner, backup, "/verify"));
    await load();
  };
  const remove = async (backup: Backup) => {
    if (!confirm(`Delete the backup taken ${new Date(backup.createdAt).toLocaleString()}? Its file and remote copies are gone for good.`)) return;
    await api("DELETE", backupPath(owner, backup));
    await changed();
  };
  const restore = async (backup: Backup) => {
    await api("POST", `${owner.path}/restore`, { backupId: backup.id });
    setRestoring(null);
    setNotice(props.restoreStarted);
    await changed();
  };

  return (
    <>
      {may(session, owner.routes.backUp) && (
        <ActionButton class="primary" run={backUp} onError={setActionError}>
          Back up now
        </ActionButton>
      )}
      <div role="status">{notice && <p>{notice}</p>}</div>
      <ErrorText message={actionError} />
      <ErrorText message={listError} />
      {restoring && (
        <div class="backup-confirm">
          <h3>
            Restore the backup of <When iso={restoring.createdAt} />
          </h3>
          <ConfirmByName name={owner.name} action="Restore backup" onConfirm={() => restore(restoring)}>
            {props.restoreText}
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
          headings={["Taken", "Type", "Status", "Size", ...columns.map((column) => column.heading), "Verified", ...(hasActions ? [""] : [])]}
          empty="No backups yet."
          rowKeys={backups.map((backup) => backup.id)}
          rows={backups.map((backup) => {
            const cells = [
              <When iso={backup.createdAt} />,
              backup.type,
              <>
                <StatusBadge status={backup.status} />
                {backup.error && <span class="backup-row-error">{backup.error}</span>}
              </>,
              backup.status === "completed" ? formatBytes(backup.sizeBytes) : "—",
              ...columns.map((column) => column.cell(backup)),
              <Verification backup={backup} verified={props.verified} />,
            ];
            if (!hasActions) return cells;
            const completed = backup.status === "completed";
            return [
              ...cells,
              backup.status !== "running" && (
                <span class="backup-row-actions">
                  {canDownload && completed && (
                    <a href={backupPath(owner, backup, "/download")} download>
                      Download
                    </a>
                  )}
                  {canVerify && completed && (
                    <ActionButton run={() => verify(backup)} onError={setActionError} label={`Verify backup of ${backup.createdAt}`}>
                      Verify
                    </ActionButton>
                  )}
                  {canRestore && completed && (
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
    </>
  );
}

function Verification<Backup extends BackupRow>({ backup, verified }: { backup: Backup; verified: (backup: Backup) => string }) {
  const verification = backup.verification;
  if (!verification) return <>not yet</>;
  if (verification.status === "running") return <Spinner label="verifying…" />;
  if (verification.status === "failed") return <span class="backup-row-error">failed: {verification.error}</span>;
  return (
    <span title={verified(backup)}>
      passed <When iso={backup.verifiedAt} />
    </span>
  );
}

/** The schedule: its form for a role that may set it, else what it is, in words. */
export function ScheduleForm({ owner, schedule, onChanged }: { owner: BackupOwner; schedule: BackupSchedule | null; onChanged: () => Promise<void> }) {
  const { session } = useSession();
  const canSet = may(session, owner.routes.setSchedule);
  const canClear = may(session, owner.routes.clearSchedule);
  const [clearError, setClearError] = useState("");
  const save = async (values: Record<string, string>) => {
    await api("PUT", `${owner.path}/backup-schedule`, {
      cron: values.cron!.trim(),
      keepLast: Number(values.keepLast || 7),
      keepDailyDays: Number(values.keepDailyDays || 0),
      keepWeeklyWeeks: Number(values.keepWeeklyWeeks || 0),
      verify: values.verify === "on",
    });
    await onChanged();
  };
  const clear = async () => {
    await api("DELETE", `${owner.path}/backup-schedule`);
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
        <Form class="backup-schedule" label="Backup schedule" submitText={schedule ? "Save schedule" : "Set schedule"} onSubmit={save}>
          <Field label="When (cron, UTC)" name="cron" required maxLength={120} defaultValue={schedule?.cron ?? ""} placeholder="0 3 * * *" hint="5 fields (minute hour day month weekday) or @daily, @hourly…" />
          <Field label="Keep the last" name="keepLast" type="number" min={1} max={1000} defaultValue={String(schedule?.keepLast ?? 7)} />
          <Field label="Keep one a day for (days)" name="keepDailyDays" type="number" min={0} max={3650} defaultValue={String(schedule?.keepDailyDays ?? 0)} />
          <Field label="Keep one a week for (weeks)" name="keepWeeklyWeeks" type="number" min={0} max={520} defaultValue={String(schedule?.keepWeeklyWeeks ?? 0)} />
          <label class="backup-check">
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
