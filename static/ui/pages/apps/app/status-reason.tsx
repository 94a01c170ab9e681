// Why an app is in its status. A crash loop's reason ends with the container's last output lines
// (after the first line break): they are shown preformatted, as the app printed them. An unhealthy
// or crash-looping app gets the reason under the page's header, whichever tab is open.
import type { App } from "./types";

/** Statuses that need the person's attention while the app still runs (or is restarted). */
const TROUBLED = new Set(["unhealthy", "crash-loop"]);
export const isTroubled = (app: App) => TROUBLED.has(app.status);

export function StatusReason({ reason }: { reason: string | null }) {
  if (!reason) return null;
  const lineBreak = reason.indexOf("\n");
  if (lineBreak < 0) return <span class="muted status-reason">{reason}</span>;
  return (
    <span class="status-reason">
      <span class="muted">{reason.slice(0, lineBreak)}</span>
      <pre class="log-lines status-reason-output" role="region" aria-label="Last output" tabIndex={0}>
        {reason.slice(lineBreak + 1)}
      </pre>
    </span>
  );
}

export function TroubledStatus({ app }: { app: App }) {
  if (!isTroubled(app)) return null;
  const headline = app.status === "crash-loop" ? "The app keeps crashing." : "The app fails its health check.";
  return (
    <div class={`callout status-callout status-callout-${app.status}`}>
      <p>
        <strong>{headline}</strong> {app.autoRestart ? "The platform restarts it with backoff." : "Restarting it on a crash or failed check is off (Settings)."}
      </p>
      <StatusReason reason={app.statusReason} />
    </div>
  );
}
