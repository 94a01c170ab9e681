// History tab: GET /api/apps/{id}/history, the app's builds and the edits of its source tree (in
// the Files tab or through the API) on one timeline, newest first, so the edits a build was made
// from are listed just below it.
import { api, segment } from "../../../api";
import { actorText, memberEmails, type Actor } from "../../../components/actor";
import { Table } from "../../../components/table";
import { ErrorText, When } from "../../../components/text";
import { Spinner, StatusBadge } from "../../../components/widgets";
import { href } from "../../../router";
import { useLoad } from "../../../session";
import type { Build, TabProps } from "./types";

interface FileChange {
  action: string;
  paths: string[];
  pathCount: number;
  actor: Actor;
}

interface HistoryEvent {
  kind: "build" | "files";
  at: string;
  build: Build | null;
  change: FileChange | null;
}

const CHANGE_LABELS: Record<string, string> = {
  create: "File created",
  write: "File saved",
  mkdir: "Folder created",
  move: "Renamed or moved",
  delete: "Deleted",
  "bulk-rename": "Bulk rename",
};

/** The paths of a change: a move reads "from → to"; a long list is cut with its full count. */
function changedPaths(change: FileChange): string {
  if (change.action === "move" && change.paths.length === 2) return `${change.paths[0]} → ${change.paths[1]}`;
  const shown = change.paths.slice(0, 3).join(", ");
  return change.pathCount > 3 ? `${shown} and ${change.pathCount - 3} more` : shown;
}

export function HistoryTab({ app }: TabProps) {
  const loaded = useLoad(async () => {
    const [{ events }, emailOf] = await Promise.all([api<{ events: HistoryEvent[] }>("GET", `/api/apps/${segment(app.id)}/history`), memberEmails()]);
    return { events, emailOf };
  }, [app.id]);
  return (
    <>
      <h2>History</h2>
      <p class="muted">Builds and edits of the app's files, newest first: the edits a build was made from come just below it.</p>
      <ErrorText message={loaded.error} />
      {!loaded.data && !loaded.error && <Spinner />}
      {loaded.data && (
        <Table
          caption="History"
          headings={["When", "What", "By", "Details"]}
          empty="Nothing yet."
          rows={loaded.data.events.map((event) => {
            const { build, change } = event;
            if (build) {
              return [
                <When iso={event.at} />,
                <>
                  Build <a href={href("apps", app.id, "builds", build.id)}><code>{build.id}</code></a> <StatusBadge status={build.status} />
                </>,
                build.rollbackOf ? `rollback of ${build.rollbackOf.slice(0, 12)}` : build.trigger,
                build.commitSha ? `${build.commitSha.slice(0, 7)} ${build.commitMessage ?? ""}`.trim() : (build.error ?? ""),
              ];
            }
            return [<When iso={event.at} />, CHANGE_LABELS[change!.action] ?? change!.action, actorText(change!.actor, loaded.data!.emailOf), changedPaths(change!)];
          })}
        />
      )}
    </>
  );
}
