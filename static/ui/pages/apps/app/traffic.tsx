// Traffic tab: what the public proxy counted for the app, read every few seconds, drawn as small
// charts of the values seen since the tab opened, with the numbers of the last 5 minutes and hour.
import { useEffect, useState } from "preact/hooks";
import { api, segment } from "../../../api";
import { Table } from "../../../components/table";
import { ErrorText } from "../../../components/text";
import { Sparkline, Spinner } from "../../../components/widgets";
import type { TabProps } from "./types";

interface TrafficWindow {
  requests: number;
  byStatusClass: Record<"1xx" | "2xx" | "3xx" | "4xx" | "5xx", number>;
  rateLimited: number;
  bytesIn: number;
  bytesOut: number;
  upstreamLatencyMs: { p50: number; p99: number } | null;
}
interface Traffic {
  last5Minutes: TrafficWindow;
  lastHour: TrafficWindow;
}

const TRAFFIC_REFRESH_MS = 5000;
/** Samples kept per chart: the last half hour at one every 5 s. */
const MAX_SAMPLES = 360;

const SERIES: { title: string; unit?: string; of(window: TrafficWindow): number }[] = [
  { title: "Requests (5 min)", of: (window) => window.requests },
  { title: "2xx answers", of: (window) => window.byStatusClass["2xx"] },
  { title: "4xx answers", of: (window) => window.byStatusClass["4xx"] },
  { title: "5xx answers", of: (window) => window.byStatusClass["5xx"] },
  { title: "Refused with 429", of: (window) => window.rateLimited },
  { title: "Latency p50", unit: " ms", of: (window) => window.upstreamLatencyMs?.p50 ?? 0 },
  { title: "Latency p99", unit: " ms", of: (window) => window.upstreamLatencyMs?.p99 ?? 0 },
];

function bytes(count: number) {
  if (count < 1024) return `${count} B`;
  if (count < 1024 * 1024) return `${(count / 1024).toFixed(1)} KiB`;
  return `${(count / 1024 / 1024).toFixed(1)} MiB`;
}

export function TrafficTab({ app }: TabProps) {
  const [latest, setLatest] = useState<Traffic | null>(null);
  const [samples, setSamples] = useState<TrafficWindow[]>([]);
  const [error, setError] = useState("");

  useEffect(() => {
    let stopped = false;
    const read = async () => {
      try {
        const { traffic } = await api<{ traffic: Traffic }>("GET", `/api/apps/${segment(app.id)}/traffic`);
        if (stopped) return;
        setLatest(traffic);
        setSamples((kept) => [...kept, traffic.last5Minutes].slice(-MAX_SAMPLES));
        setError("");
      } catch (failure) {
        if (!stopped) setError((failure as Error).message);
      }
    };
    void read();
    const timer = setInterval(() => document.hidden || void read(), TRAFFIC_REFRESH_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [app.id]);

  const row = (label: string, of: (window: TrafficWindow) => string) => [label, of(latest!.last5Minutes), of(latest!.lastHour)];
  return (
    <>
      <h2>Traffic</h2>
      <p class="muted">Counted by the public proxy for {app.subdomain ? <code>{app.subdomain}</code> : "the app"}; refreshed every {TRAFFIC_REFRESH_MS / 1000} s. Charts show the last 5 minutes as seen since this page opened.</p>
      <ErrorText message={error} />
      {!latest && !error && <Spinner />}
      {latest && (
        <>
          <div class="traffic-charts">
            {SERIES.map((series) => (
              <Sparkline title={series.title} unit={series.unit} values={samples.map(series.of)} width={200} height={40} />
            ))}
          </div>
          <h3>Numbers</h3>
          <Table
            caption="Traffic counts"
            headings={["Measure", "Last 5 minutes", "Last hour"]}
            empty=""
            rows={[
              row("Requests", (window) => String(window.requests)),
              ...(["1xx", "2xx", "3xx", "4xx", "5xx"] as const).map((statusClass) => row(`${statusClass} answers`, (window) => String(window.byStatusClass[statusClass]))),
              row("Refused with 429", (window) => String(window.rateLimited)),
              row("Latency p50 / p99", (window) => (window.upstreamLatencyMs ? `${window.upstreamLatencyMs.p50} / ${window.upstreamLatencyMs.p99} ms` : "—")),
              row("Bytes in / out", (window) => `${bytes(window.bytesIn)} / ${bytes(window.bytesOut)}`),
            ]}
          />
          <p class="muted">
            Rate limits in force: {app.effectiveRateLimits.clientRps} requests/s per client (burst {app.effectiveRateLimits.clientBurst}), {app.effectiveRateLimits.hostRps}/s for the app (burst {app.effectiveRateLimits.hostBurst}). Change them in <a href={`#/apps/${encodeURIComponent(app.id)}/settings`}>Settings</a>.
          </p>
        </>
      )}
    </>
  );
}
