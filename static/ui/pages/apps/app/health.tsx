// Health tab: the app's health check (changed through PUT /api/apps/{id}/settings `healthCheck`,
// only the fields the person changed; "Back to the defaults" sends null) and its probes from
// GET /api/apps/{id}/health: the last one and the recent history, read again while the tab is open.
import { useEffect, useRef } from "preact/hooks";
import { api, segment } from "../../../api";
import { Table } from "../../../components/table";
import { ErrorText, ReadOnlyNote } from "../../../components/text";
import { Facts, Spinner, StatusBadge } from "../../../components/widgets";
import { useLoad } from "../../../session";
import { SaveActions, SettingField, settingInput, useSettingsSave } from "./settings";
import type { HealthCheck, HealthProbe, TabProps } from "./types";

const PROBES_REFRESH_MS = 3000;

type NumberField = Exclude<keyof HealthCheck, "path">;
/** The numbers of a check with their bounds, as src/apps/health/settings.ts sets them. */
const NUMBER_FIELDS: [field: NumberField, label: string, min: number, max: number, hint: string][] = [
  ["intervalSeconds", "Interval (seconds)", 1, 3600, "Between two probes of the running app"],
  ["timeoutSeconds", "Timeout (seconds)", 1, 60, "One probe may take this long"],
  ["healthyThreshold", "Healthy after (passes in a row)", 1, 10, "A release switches the proxy after this many"],
  ["unhealthyThreshold", "Unhealthy after (failures in a row)", 1, 20, "The running app turns unhealthy"],
  ["startPeriodSeconds", "Start period (seconds)", 0, 600, "A new container's time to pass before its release gives up"],
];

interface AppHealth {
  healthCheck: HealthCheck;
  lastProbe: HealthProbe | null;
  consecutiveFailures: number;
  probes: HealthProbe[];
}

const timeFormat = new Intl.DateTimeFormat(undefined, {
  dateStyle: "short",
  timeStyle: "medium",
});

/** A probe's time to the second (probes come seconds apart). */
function ProbeTime({ probe }: { probe: HealthProbe }) {
  return (
    <time dateTime={probe.at} title={probe.at}>
      {timeFormat.format(new Date(probe.at))}
    </time>
  );
}

/** What a probe got: the HTTP status, else why none counted (a TCP check passes with neither). */
function probeOutcome(probe: HealthProbe): string {
  if (probe.httpStatus !== null) return `HTTP ${probe.httpStatus}`;
  return probe.error ?? "connected";
}

/** What the check does, in a sentence. */
function checkSentence(check: HealthCheck): string {
  const what = check.path === null ? "TCP only: a connect to the app's port" : `GET ${check.path}, passing on a 2xx or 3xx`;
  return `${what}, every ${check.intervalSeconds} s (timeout ${check.timeoutSeconds} s).`;
}

/** The body's `healthCheck`: only the fields that differ from `current`; the path empty is null (TCP only). */
function changesOf(current: HealthCheck, form: HTMLFormElement): Partial<HealthCheck> {
  const values = new FormData(form);
  const text = (name: string) => String(values.get(`healthCheck.${name}`) ?? "").trim();
  const changes: Partial<HealthCheck> = {};
  const path = text("path") || null;
  if (path !== current.path) changes.path = path;
  for (const [field] of NUMBER_FIELDS) {
    // An emptied number is sent as it is (NaN becomes null in JSON) for the API to refuse by name.
    const wanted = text(field) === "" ? NaN : Number(text(field));
    if (wanted !== current[field]) changes[field] = wanted;
  }
  return changes;
}

/**
 * The field a refusal is about: the one it names (`healthCheck.path`); when it names only
 * `healthCheck` (the settings route checks the object as a whole), the one field changed, if so.
 */
function refusedField(message: string, changed: string[]): string | undefined {
  const named = /field '(healthCheck(?:\.[A-Za-z]+)?)'/.exec(message)?.[1];
  if (named !== "healthCheck") return named;
  return changed.length === 1 ? `healthCheck.${changed[0]}` : undefined;
}

function HealthCheckForm({ app, reloadApp }: TabProps) {
  const changed = useRef<string[]>([]);
  const { session, canChange, loaded: check, revision, busy, notice, formError, error, save } = useSettingsSave(
    app,
    reloadApp,
    (loaded) => loaded.healthCheck,
    (message) => refusedField(message, changed.current),
  );
  const submit = (event: SubmitEvent) => {
    event.preventDefault();
    const changes = changesOf(check, event.currentTarget as HTMLFormElement);
    changed.current = Object.keys(changes);
    void save(changed.current.length ? { healthCheck: changes } : {}, () => "Saved. The next probe and release use it.");
  };
  const reset = () => save({ healthCheck: null }, () => "Back to the defaults: a TCP check.");

  return (
    <form class="settings-form" aria-label="Health check" key={revision} onSubmit={submit} noValidate>
      {!canChange && <ReadOnlyNote role={session.role}>can read the health check, not change it.</ReadOnlyNote>}
      <fieldset disabled={!canChange}>
        <legend>Check</legend>
        <p class="muted">{checkSentence(check)}</p>
        <SettingField name="healthCheck.path" label="Path" error={error("healthCheck.path")} hint="Starts with /, no spaces, for example /health. Empty: TCP only (a connect to the app's port)">
          {settingInput("healthCheck.path", {
            defaultValue: check.path ?? "",
            placeholder: "TCP only",
            autocomplete: "off",
            spellcheck: false,
          })}
        </SettingField>
        {NUMBER_FIELDS.map(([field, label, min, max, hint]) => (
          <SettingField name={`healthCheck.${field}`} label={label} error={error(`healthCheck.${field}`)} hint={`${hint}; ${min} to ${max}`}>
            {settingInput(`healthCheck.${field}`, {
              type: "number",
              defaultValue: check[field],
              min,
              max,
              step: 1,
            })}
          </SettingField>
        ))}
      </fieldset>
      <SaveActions canChange={canChange} busy={busy} notice={notice} formError={formError} submitText="Save the health check">
        <button type="button" disabled={busy} onClick={reset}>
          Back to the defaults
        </button>
      </SaveActions>
    </form>
  );
}

function LastProbe({ health }: { health: AppHealth }) {
  const probe = health.lastProbe;
  if (!probe) return <p class="empty">No probe yet since the platform started: the first comes within the check's interval while the app runs.</p>;
  const facts: [string, preact.ComponentChildren][] = [
    ["Result", <StatusBadge status={probe.status} />],
    ["When", <ProbeTime probe={probe} />],
    [probe.httpStatus !== null ? "HTTP status" : "Error", probeOutcome(probe)],
    ["Latency", `${Math.round(probe.latencyMs)} ms`],
    ["Failures in a row", String(health.consecutiveFailures)],
  ];
  return (
    <Facts facts={facts} />
  );
}

export function HealthTab({ app, reloadApp, rest }: TabProps) {
  const loaded = useLoad(() => api<{ health: AppHealth }>("GET", `/api/apps/${segment(app.id)}/health`).then(({ health }) => health), [app.id]);
  useEffect(() => {
    const timer = setInterval(() => document.hidden || void loaded.reload(), PROBES_REFRESH_MS);
    return () => clearInterval(timer);
  }, [loaded.reload]);
  const health = loaded.data;
  return (
    <>
      <h2>Health</h2>
      <HealthCheckForm app={app} reloadApp={reloadApp} rest={rest} />
      <section aria-labelledby="health-last-probe">
        <h3 id="health-last-probe">Last probe</h3>
        <ErrorText message={loaded.error} />
        {!health && !loaded.error && <Spinner />}
        {health && <LastProbe health={health} />}
      </section>
      <h3>Recent probes</h3>
      {health && (
        <Table
          caption="Recent probes"
          headings={["When", "Result", "HTTP status or error", "Latency"]}
          empty="No probes yet."
          rows={health.probes.map((probe) => [<ProbeTime probe={probe} />, <StatusBadge status={probe.status} />, probeOutcome(probe), `${Math.round(probe.latencyMs)} ms`])}
        />
      )}
      <p class="muted">The last 20 probes, newest first, kept in memory: a platform restart starts them afresh.</p>
    </>
  );
}
