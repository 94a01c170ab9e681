// A deploy after the API accepted it: the build log as it is written (GET
// /api/apps/{appId}/builds/{buildId}/log, followed) and the app's status until it runs or fails,
// with links to the app's page and its URL.
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, followLines, segment } from "../../../api";
import { ErrorText } from "../../../components/text";
import { Spinner, StatusBadge } from "../../../components/widgets";
import { href } from "../../../router";
import { useSession } from "../../../session";
import type { AppSummary } from "../list";

export interface StartedDeploy {
  app: AppSummary;
  buildId: string;
  created: boolean;
}

/**
 * Statuses a deploy ends in: nothing more changes without a person asking, or the platform's
 * probes and restarts take over (unhealthy, crash-loop: shown with their reason).
 */
const SETTLED = new Set(["running", "failed", "crashed", "stopped", "unhealthy", "crash-loop"]);
const STATUS_POLL_MS = 1500;
/** A log longer than this keeps only its latest lines on the page (the whole log stays in the API). */
const MAX_SHOWN_LINES = 5000;
/** New lines are drawn together at most this often, so a chatty build does not redraw per line. */
const LOG_FLUSH_MS = 100;

export function DeployProgress({ started, onDeployAnother }: { started: StartedDeploy; onDeployAnother: () => void }) {
  const { ended } = useSession();
  const [app, setApp] = useState(started.app);
  const [statusError, setStatusError] = useState("");
  const log = useBuildLog(started.app.id, started.buildId);
  const settled = SETTLED.has(app.status);
  const heading = useRef<HTMLHeadingElement>(null);
  // The form the person used is gone: their focus goes to what replaced it, in the same commit
  // that shows the heading (an effect would run after paint, leaving a moment with focus nowhere).
  useLayoutEffect(() => heading.current?.focus(), []);

  useEffect(() => {
    if (settled) return;
    const timer = setTimeout(async () => {
      try {
        setApp((await api<{ app: AppSummary }>("GET", `/api/apps/${segment(app.id)}`)).app);
        setStatusError("");
      } catch (failure) {
        if (failure instanceof ApiError && failure.status === 401) return ended("Your session ended. Log in again.");
        setStatusError((failure as Error).message);
        // Asked again on the next turn: setting the same app would not re-run this effect.
        setApp({ ...app });
      }
    }, STATUS_POLL_MS);
    return () => clearTimeout(timer);
  }, [app, settled, ended]);

  return (
    <section class="deploy-progress" aria-labelledby="deploy-progress-heading">
      <h2 id="deploy-progress-heading" tabIndex={-1} ref={heading}>
        {started.created ? "Deploying" : "Releasing a new version of"} {app.name}
      </h2>
      <p class="deploy-status" role="status">
        <StatusBadge status={app.status} />
        {!settled && <Spinner label="Waiting for the app to start…" />}
        {app.status === "running" && (
          <span>
            {app.name} is running{app.url && (
              <>
                {" at "}
                <a href={app.url} target="_blank" rel="noopener noreferrer">
                  {app.url}
                </a>
              </>
            )}
            .
          </span>
        )}
        {(app.status === "unhealthy" || app.status === "crash-loop") && <span>{app.name} was released and is {app.status}: see its page.</span>}
        {settled && !["running", "unhealthy", "crash-loop"].includes(app.status) && <span>The deploy did not succeed{app.statusReason ? `: ${app.statusReason}` : "."}</span>}
      </p>
      <ErrorText message={statusError} />
      <p class="deploy-links">
        <a href={href("apps", app.id)}>Open the app's page</a>
        {settled && (
          <button type="button" class="quiet" onClick={onDeployAnother}>
            Deploy another app
          </button>
        )}
      </p>
      <h3>Build log</h3>
      <ErrorText message={log.error} />
      <pre class="log-lines deploy-log" role="log" aria-label="Build log" tabIndex={0} ref={log.view}>
        {log.text}
      </pre>
      {log.following && <Spinner label="Following the build…" />}
    </section>
  );
}

/** The build log, followed until the build ends; the view stays at the bottom unless the person scrolled up. */
function useBuildLog(appId: string, buildId: string) {
  const { ended } = useSession();
  const [lines, setLines] = useState<string[]>([]);
  const [following, setFollowing] = useState(true);
  const [error, setError] = useState("");
  const view = useRef<HTMLPreElement>(null);

  useEffect(() => {
    const stop = new AbortController();
    let pending: string[] = [];
    const flush = () => {
      if (!pending.length) return;
      const added = pending;
      pending = [];
      setLines((shown) => [...shown, ...added].slice(-MAX_SHOWN_LINES));
    };
    const flusher = setInterval(flush, LOG_FLUSH_MS);
    // An empty line is the stream's heartbeat while the build is quiet.
    const collect = (line: string) => line && pending.push(line);
    followLines(`/api/apps/${segment(appId)}/builds/${segment(buildId)}/log`, collect, stop.signal)
      .catch((failure) => {
        if (stop.signal.aborted) return;
        if (failure instanceof ApiError && failure.status === 401) ended("Your session ended. Log in again.");
        else setError(`The build log stopped: ${(failure as Error).message}`);
      })
      .finally(() => {
        flush();
        clearInterval(flusher);
        if (!stop.signal.aborted) setFollowing(false);
      });
    return () => {
      stop.abort();
      clearInterval(flusher);
    };
  }, [appId, buildId, ended]);

  const atBottom = useRef(true);
  useEffect(() => {
    const element = view.current;
    if (!element) return;
    const scrolled = () => (atBottom.current = element.scrollHeight - element.scrollTop - element.clientHeight < 24);
    element.addEventListener("scroll", scrolled);
    return () => element.removeEventListener("scroll", scrolled);
  }, []);
  useEffect(() => {
    if (atBottom.current && view.current) view.current.scrollTop = view.current.scrollHeight;
  }, [lines]);

  return { text: lines.length ? lines.join("\n") : following ? "Waiting for the build to start…" : "The build wrote nothing.", following, error, view };
}
