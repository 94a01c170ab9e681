// Bulk rename of the names under a folder: the person enters find and replace (plain text or a
// regular expression), previews the plan, settles each conflicting row (skip, overwrite, or rename
// to a free name) and applies it; the answer's results replace the preview.
import { useState } from "preact/hooks";
import { api, segment } from "../../../api";
import { Field, Form, type FormValues } from "../../../components/form";
import { ErrorText } from "../../../components/text";

type RenameAction = "skip" | "overwrite" | "rename";

interface PlanEntry {
  from: string;
  to: string;
  type: "file" | "dir";
  conflict: "exists" | "same-target" | null;
  action: "rename" | "overwrite" | "skip" | "fail";
  reason: string | null;
  result: "renamed" | "overwritten" | "skipped" | "failed" | null;
}

interface Plan {
  entries: PlanEntry[];
  counts: { planned: number; conflicts: number; renamed: number; overwritten: number; skipped: number; failed: number };
}

interface Request {
  basePath: string;
  find: string;
  replace: string;
  useRegex: boolean;
  includeFiles: boolean;
  includeDirs: boolean;
}

const CONFLICT_WORDS = { exists: "Name taken", "same-target": "Another entry takes this name" };
const ACTION_WORDS: Record<RenameAction, string> = { skip: "Skip", overwrite: "Overwrite", rename: "Rename to a free name" };
const PLANNED_WORDS: Record<PlanEntry["action"], string> = { rename: "Rename", overwrite: "Overwrite", skip: "Skip", fail: "Fails" };
const RESULT_WORDS: Record<NonNullable<PlanEntry["result"]>, string> = { renamed: "Renamed", overwritten: "Overwritten", skipped: "Skipped", failed: "Failed" };

export function BulkRename({ appId, folder, changed }: { appId: string; folder: string; changed(): Promise<void> }) {
  const [request, setRequest] = useState<Request | null>(null);
  const [plan, setPlan] = useState<Plan | null>(null);
  const [choices, setChoices] = useState<Record<string, RenameAction>>({});
  const [applied, setApplied] = useState(false);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const base = `/api/apps/${segment(appId)}/fs/bulk-rename`;

  const preview = async (values: FormValues) => {
    const next: Request = {
      basePath: folder,
      find: values.find ?? "",
      replace: values.replace ?? "",
      useRegex: values.useRegex === "on",
      includeFiles: values.includeFiles === "on",
      includeDirs: values.includeDirs === "on",
    };
    const answer = await api<Plan>("POST", `${base}/preview`, next);
    setRequest(next);
    setPlan(answer);
    setChoices({});
    setApplied(false);
  };
  const apply = async () => {
    if (!request) return;
    setBusy(true);
    setError("");
    try {
      setPlan(await api<Plan>("POST", `${base}/apply`, { ...request, defaultAction: "skip", actions: choices }));
      setApplied(true);
      await changed();
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="files-bulk" aria-labelledby="files-bulk-title">
      <h3 id="files-bulk-title">Bulk rename</h3>
      <p class="muted">Renames names (not contents) of everything under {folder ? `the folder ${folder}` : "the root folder"}. Nothing changes until you apply.</p>
      <Form label="Bulk rename" submitText="Preview" onSubmit={preview} class="files-bulk-form">
        <Field label="Find" name="find" required />
        <Field label="Replace with" name="replace" hint="With a regular expression, $1 or $<name> insert a group." />
        <label class="check">
          <input type="checkbox" name="useRegex" /> Regular expression
        </label>
        <label class="check">
          <input type="checkbox" name="includeFiles" defaultChecked /> Files
        </label>
        <label class="check">
          <input type="checkbox" name="includeDirs" /> Folders
        </label>
      </Form>
      {plan && (
        <>
          <p role="status">
            {applied
              ? `Done: ${plan.counts.renamed} renamed, ${plan.counts.overwritten} overwritten, ${plan.counts.skipped} skipped, ${plan.counts.failed} failed.`
              : `${plan.counts.planned} planned, ${plan.counts.conflicts} with a conflict.`}
          </p>
          {plan.entries.length > 0 && (
            <div class="table-wrap">
              <table class="files-table">
                <caption class="visually-hidden">{applied ? "Results of the bulk rename" : "Planned renames"}</caption>
                <thead>
                  <tr>
                    <th scope="col">From</th>
                    <th scope="col">To</th>
                    <th scope="col">Conflict</th>
                    <th scope="col">{applied ? "Result" : "Action"}</th>
                  </tr>
                </thead>
                <tbody>
                  {plan.entries.map((entry) => (
                    <tr key={entry.from}>
                      <td><code>{entry.from}</code></td>
                      <td><code>{entry.to}</code></td>
                      <td>{entry.conflict ? CONFLICT_WORDS[entry.conflict] : "—"}</td>
                      <td>
                        {applied ? (
                          <>
                            {entry.result && RESULT_WORDS[entry.result]}
                            {entry.reason && <span class="error-inline"> {entry.reason}</span>}
                          </>
                        ) : entry.conflict ? (
                          <select
                            aria-label={`What to do with ${entry.from}`}
                            value={choices[entry.from] ?? "skip"}
                            onChange={(event) => setChoices({ ...choices, [entry.from]: event.currentTarget.value as RenameAction })}
                          >
                            {(Object.keys(ACTION_WORDS) as RenameAction[]).map((action) => (
                              <option value={action}>{ACTION_WORDS[action]}</option>
                            ))}
                          </select>
                        ) : (
                          <>
                            {PLANNED_WORDS[entry.action]}
                            {entry.reason && <span class="error-inline"> {entry.reason}</span>}
                          </>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {!applied && plan.entries.length > 0 && (
            <div class="form-actions">
              <button type="button" class="primary" disabled={busy} onClick={apply}>
                Apply the renames
              </button>
            </div>
          )}
          <ErrorText message={error} />
        </>
      )}
    </section>
  );
}
