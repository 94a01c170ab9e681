// Builds tab: the app's build history, one build's log (followed while the build runs), a
// rollback to any succeeded build, and a cancel for one waiting or running. `#/apps/<id>/builds/<buildId>`
// opens that build's log.
import { useEffect, useState } from "preact/hooks";
import { api, followLines, segment } from "../../../api";
import { ActionButton } from "../../../components/form";
import { Table } from "../../../components/table";
import { ErrorText, When } from "../../../components/text";
import { Spinner, StatusBadge } from "../../../components/widgets";
import { href } from "../../../router";
import { may, useLoad, useSession } from "../../../session";
import { BuildDigest, isImageApp } from "./image-source";
import type { Build, TabProps } from "./types";

const UNFINISHED = new Set(["queued", "building"]);
const BUILDS_REFRESH_MS = 4000;

function duration(milliseconds: number | null) {
  if (milliseconds === null) return "—";
  const seconds = Math.round(milliseconds / 1000);
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

function BuildLog({ appId, build }: { appId: string; build: Build }) {
  const [log, setLog] = useState<string | null>(null);
  const [error, setError] = useState("");
  const running = UNFINISHED.has(build.status);
  useEffect(() => {
    const controller = new AbortController();
    const base = `/api/apps/${segment(appId)}/builds/${segment(build.id)}`;
    setLog(null);
    setError("");
    if (!running) {
      api<{ log: string }>("GET", base)
        .then((answer) => !controller.signal.aborted && setLog(answer.log))
        .catch((failure) => !controller.signal.aborted && setError((failure as Error).message));
    } else {
      let text = "";
      setLog("");
      const flush = setInterval(() => setLog(text), 250);
      followLines(`${base}/log`, (line) => line && (text += `${line}\n`), controller.signal)
        .catch((failure) => !controller.signal.aborted && setError((failure as Error).message))
        .finally(() => {
          clearInterval(flush);
          if (!controller.signal.aborted) setLog(text);
        });
      controller.signal.addEventListener("abort", () => clearInterval(flush));
    }
    return () => controller.abort();
  }, [appId, build.id, running]);
  return (
    <section class="build-log" aria-label={`Log of build ${build.id}`}>
      <h3>
        Build <code>{build.id}</code> <StatusBadge status={build.status} />
      </h3>
      {build.error && <p class="error">{build.error}</p>}
      <ErrorText message={error} />
      {log === null && !error ? <Spinner label="Loading the build log…" /> : (
        <pre class="log-lines log-view" tabIndex={0} aria-label="Build log">{log || (running ? "Waiting for output…" : "The log is empty.")}</pre>
      )}
      {running && <Spinner label="Following the build…" />}
      <p>
        <a href={href("apps", appId, "builds")}>Close the log</a>
      </p>
    </section>
  );
}

export function BuildsTab({ app, reloadApp, rest }: TabProps) {
  const { session } = useSession();
  const canRollBack = may(session, "POST /api/apps/{appId}/builds/{buildId}/rollback");
  const canCancel = may(session, "POST /api/apps/{appId}/builds/{buildId}/cancel");
  const builds = useLoad(() => api<{ builds: Build[] }>("GET", `/api/apps/${segment(app.id)}/builds`).then(({ builds }) => builds), [app.id]);
  const [error, setError] = useState("");
  useEffect(() => {
    const timer = setInterval(() => void builds.reload(), BUILDS_REFRESH_MS);
    return () => clearInterval(timer);
  }, [builds.reload]);

  const rollback = async (build: Build) => {
    if (!confirm(`Roll back ${app.name} to build ${build.id}? It is released again as a new build.`)) return;
    await api("POST", `/api/apps/${segment(app.id)}/builds/${segment(build.id)}/rollback`);
    await Promise.all([builds.reload(), reloadApp()]);
  };
  const cancel = async (build: Build) => {
    if (!confirm(`Cancel build ${build.id} of ${app.name}? The app keeps serving what it serves now.`)) return;
    await api("POST", `/api/apps/${segment(app.id)}/builds/${segment(build.id)}/cancel`);
    await Promise.all([builds.reload(), reloadApp()]);
  };
  const opened = rest[0] ? builds.data?.find((build) => build.id === rest[0]) : undefined;

  return (
    <>
      <h2>Builds</h2>
      <ErrorText message={error || builds.error} />
      {opened && <BuildLog appId={app.id} build={opened} />}
      {rest[0] && builds.data && !opened && <p class="error">No build {rest[0]} among the latest builds.</p>}
      {!builds.data && !builds.error && <Spinner />}
      {builds.data && (
        <Table
          caption="Builds, newest first"
          headings={["Build", "Status", "Trigger", isImageApp(app) ? "Digest pulled" : "Commit", "Started", "Duration", ...(canRollBack || canCancel ? ["Actions"] : [])]}
          empty="No builds yet."
          rowKeys={builds.data.map((build) => build.id)}
          rows={builds.data.map((build) => {
            const cells = [
            <a href={href("apps", app.id, "builds", build.id)}>
              <code>{build.id}</code>
            </a>,
            <>
              <StatusBadge status={build.status} />
              {build.queuePosition !== null && <span class="muted"> #{build.queuePosition} in line</span>}
              {build.id === app.currentBuildId && <span class="muted"> serving</span>}
            </>,
            build.rollbackOf ? `rollback of ${build.rollbackOf.slice(0, 12)}` : build.trigger,
            isImageApp(app) ? <BuildDigest build={build} /> : build.commitSha ? <span title={build.commitMessage ?? ""}><code>{build.commitSha.slice(0, 7)}</code> {build.commitMessage}</span> : "—",
            <When iso={build.startedAt} />,
            duration(build.durationMs),
            ];
            if (!canRollBack && !canCancel) return cells;
            return [
              ...cells,
              canRollBack && build.status === "succeeded" ? (
                <ActionButton label={`Roll back to build ${build.id}`} run={() => rollback(build)} onError={setError}>
                  Roll back
                </ActionButton>
              ) : canCancel && UNFINISHED.has(build.status) && !build.rollbackOf ? (
                <ActionButton class="danger" label={`Cancel build ${build.id}`} run={() => cancel(build)} onError={setError}>
                  Cancel
                </ActionButton>
              ) : (
                ""
              ),
            ];
          })}
        />
      )}
    </>
  );
}
