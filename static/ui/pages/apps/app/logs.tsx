// Logs tab: the app's last lines (tail, timestamps), followed live on demand, filtered by a search
// over the lines loaded. A followed stream ends when the app's container stops (a restart, a new
// release): the tab then follows again, as `heroku logs --tail` does, skipping what it has shown.
import { useEffect, useMemo, useState } from "preact/hooks";
import { api, ApiError, followLines, segment } from "../../../api";
import { LogOptions } from "../../../components/log-options";
import { ErrorText } from "../../../components/text";
import { Spinner } from "../../../components/widgets";
import { useSession } from "../../../session";
import type { TabProps } from "./types";

/** Lines kept on the page while following: older ones are dropped. */
const MAX_LINES = 5000;
/** Lines asked for again when a followed stream resumes; those already shown are skipped. */
const RESUME_TAIL = 500;
/** Waits between a stream's end and the next try: doubled while no new line comes, up to the last. */
const RESUME_DELAYS_MS = [1000, 2000, 4000, 8000];

const withoutStamp = (stamped: string) => stamped.slice(stamped.indexOf(" ") + 1);

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

export function LogsTab({ app }: TabProps) {
  const [tail, setTail] = useState(100);
  const [timestamps, setTimestamps] = useState(false);
  const [follow, setFollow] = useState(false);
  const [search, setSearch] = useState("");
  const [lines, setLines] = useState<string[] | null>(null);
  const [error, setError] = useState("");
  const [reloads, setReloads] = useState(0);
  /** The followed stream ended and the tab waits to follow again. */
  const [resuming, setResuming] = useState(false);
  const { ended } = useSession();
  const fail = (failure: unknown) => {
    if (failure instanceof ApiError && failure.status === 401) ended("Your session ended. Log in again.");
    else setError((failure as Error).message);
  };

  useEffect(() => {
    const query = `tail=${tail}&timestamps=${timestamps}`;
    const path = `/api/apps/${segment(app.id)}/logs?${query}`;
    const controller = new AbortController();
    setError("");
    setLines(null);
    if (!follow) {
      api<{ lines: string[] }>("GET", path)
        .then((answer) => !controller.signal.aborted && setLines(answer.lines))
        .catch((failure) => !controller.signal.aborted && fail(failure));
      return () => controller.abort();
    }
    setLines([]);
    setResuming(false);
    let pending: string[] = [];
    // Lines come in bursts: they are shown a few times a second rather than one render each.
    const flush = setInterval(() => {
      if (!pending.length) return;
      const arrived = pending;
      pending = [];
      setLines((shown) => [...(shown ?? []), ...arrived].slice(-MAX_LINES));
    }, 200);
    // Lines are always asked for with their nanosecond timestamps, which make each line unique: a
    // resumed stream skips the ones already shown. (Not "older than the last shown": a restart
    // starts the new container before the old one stops, so their lines interleave in time.) The
    // timestamps are cut off again when the person did not ask for them.
    const shown = new Set<string>();
    let received = 0;
    const receive = (stamped: string) => {
      if (!stamped || shown.has(stamped)) return;
      shown.add(stamped);
      received++;
      if (shown.size > MAX_LINES + RESUME_TAIL) shown.delete(shown.values().next().value!);
      pending.push(timestamps ? stamped : withoutStamp(stamped));
      setResuming(false);
    };
    const followAcrossRestarts = async () => {
      for (let attempt = 0, quiet = 0; !controller.signal.aborted; attempt++) {
        const receivedBefore = received;
        await followLines(`/api/apps/${segment(app.id)}/logs?tail=${attempt ? RESUME_TAIL : tail}&timestamps=true&follow=true`, receive, controller.signal);
        if (controller.signal.aborted) return;
        setResuming(true);
        quiet = received === receivedBefore ? quiet + 1 : 0;
        await pause(RESUME_DELAYS_MS[Math.min(quiet, RESUME_DELAYS_MS.length - 1)]!, controller.signal);
      }
    };
    followAcrossRestarts().catch((failure) => !controller.signal.aborted && fail(failure));
    return () => {
      controller.abort();
      clearInterval(flush);
    };
  }, [app.id, tail, timestamps, follow, reloads]);

  const shown = useMemo(() => {
    const needle = search.trim().toLowerCase();
    return needle ? (lines ?? []).filter((line) => line.toLowerCase().includes(needle)) : (lines ?? []);
  }, [lines, search]);

  return (
    <>
      <h2>Logs</h2>
      <div class="log-controls">
        <LogOptions tail={tail} tails={[50, 100, 500, 1000, 5000]} onTail={setTail} timestamps={timestamps} onTimestamps={setTimestamps} />
        <label class="check">
          <input type="checkbox" role="switch" checked={follow} onChange={(event) => setFollow((event.currentTarget as HTMLInputElement).checked)} />
          Follow
        </label>
        <label class="field log-search">
          <span class="field-label">Search</span>
          <input type="search" value={search} placeholder="Filter the loaded lines" onInput={(event) => setSearch((event.currentTarget as HTMLInputElement).value)} />
        </label>
        {!follow && (
          <button type="button" onClick={() => setReloads(reloads + 1)}>
            Refresh
          </button>
        )}
      </div>
      <ErrorText message={error} />
      {lines === null && !error && <Spinner label="Loading the logs…" />}
      {lines !== null && (
        <>
          <p class="muted" aria-live="polite">
            {search.trim() ? `${shown.length} of ${lines.length} lines match` : `${lines.length} lines`}
            {follow && (resuming ? " · the app's output stopped (a restart or a stop): following again when it runs" : " · following")}
          </p>
          <pre class="log-lines log-view" tabIndex={0} aria-label="Log lines">
            {shown.length ? shown.join("\n") : follow ? "Waiting for output…" : "No output."}
          </pre>
        </>
      )}
    </>
  );
}
