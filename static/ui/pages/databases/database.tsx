// One database: its header (status, start and stop) and tabs: overview (connection strings and live
// stats), logs, backups (./backups.tsx), history of operations, settings (name, memory, password, delete).
import { useEffect, useState } from "preact/hooks";
import { api } from "../../api";
import { ActionButton, Field, Form } from "../../components/form";
import { Table } from "../../components/table";
import { LogOptions } from "../../components/log-options";
import { ErrorText, When } from "../../components/text";
import { ConfirmByName, Secret, Spinner, Sparkline, StatusBadge, Tabs } from "../../components/widgets";
import { href } from "../../router";
import { may, useLoad, useSession, type Session } from "../../session";
import { BackupsTab } from "./backups";
import { everyFewSeconds, formatBytes } from "../../components/backups";
import { databasePath, engineName, type BackupSummary, type Database, type DatabaseStats, type Operation } from "./types";

/** What the Settings tab offers; a role that may do none of it does not get the tab. */
const SETTINGS_ROUTES = ["PATCH /api/databases/{databaseId}/settings", "POST /api/databases/{databaseId}/rotate-password", "DELETE /api/databases/{databaseId}"];

const TABS = [
  { id: "overview", title: "Overview" },
  { id: "logs", title: "Logs" },
  { id: "backups", title: "Backups" },
  { id: "history", title: "History" },
  { id: "settings", title: "Settings", offered: (session: Session) => SETTINGS_ROUTES.some((route) => may(session, route)) },
];

export interface Loaded {
  database: Database;
  backups: BackupSummary;
}

export function DatabasePage({ databaseId, tab }: { databaseId: string; tab: string }) {
  const { session } = useSession();
  const loaded = useLoad(() => api<Loaded>("GET", databasePath(databaseId)), [databaseId]);
  const [actionError, setActionError] = useState("");
  // The status moves in the background (provisioning, a start or stop): the header follows it.
  useEffect(() => everyFewSeconds(() => void loaded.reload(), 3000), [loaded.reload]);

  if (!loaded.data) {
    return (
      <>
        <p>
          <a href={href("databases")}>← Databases</a>
        </p>
        {loaded.error ? <ErrorText message={loaded.error} /> : <Spinner />}
      </>
    );
  }
  const { database } = loaded.data;
  const tabs = TABS.filter((candidate) => !candidate.offered || candidate.offered(session));
  const current = tabs.find((candidate) => candidate.id === tab) ?? tabs[0]!;
  const running = database.status === "running" || database.status === "provisioning";
  const lifecycle = running ? "stop" : "start";
  const act = async (action: "start" | "stop") => {
    await api("POST", databasePath(database.id, `/${action}`));
    await loaded.reload();
  };
  return (
    <>
      <p>
        <a href={href("databases")}>← Databases</a>
      </p>
      <div class="db-heading">
        <h1>{database.name}</h1>
        <StatusBadge status={database.status} />
        <span class="muted">
          {engineName(database.engine)} {database.version}
        </span>
        <span class="spacer" />
        {may(session, running ? "POST /api/databases/{databaseId}/stop" : "POST /api/databases/{databaseId}/start") && (
          <ActionButton run={() => act(lifecycle)} onError={setActionError}>
            {running ? "Stop" : "Start"}
          </ActionButton>
        )}
      </div>
      {database.statusReason && <p class="muted">{database.statusReason}</p>}
      <ErrorText message={actionError || loaded.error} />
      <div class="db-tabs">
        <Tabs label="Database" current={current.id} tabs={tabs.map(({ id, title }) => ({ id, title, href: href("databases", database.id, id) }))} />
      </div>
      <section class="panel" aria-label={current.title}>
        {current.id === "overview" && <OverviewTab database={database} />}
        {current.id === "logs" && <LogsTab database={database} />}
        {current.id === "backups" && <BackupsTab database={database} summary={loaded.data.backups} onChanged={loaded.reload} />}
        {current.id === "history" && <HistoryTab database={database} />}
        {current.id === "settings" && <SettingsTab database={database} onChanged={loaded.reload} />}
      </section>
    </>
  );
}

const KEPT_SAMPLES = 30;

function OverviewTab({ database }: { database: Database }) {
  const [samples, setSamples] = useState<DatabaseStats[]>([]);
  const [statsError, setStatsError] = useState("");
  useEffect(() => {
    const sample = async () => {
      try {
        const { stats } = await api<{ stats: DatabaseStats }>("GET", databasePath(database.id, "/stats"));
        setSamples((previous) => [...previous, stats].slice(-KEPT_SAMPLES));
        setStatsError("");
      } catch (failure) {
        setStatsError((failure as Error).message);
      }
    };
    void sample();
    return everyFewSeconds(sample, 3000);
  }, [database.id]);
  const latest = samples[samples.length - 1];
  return (
    <>
      <h2>Connection</h2>
      <dl class="db-facts">
        <dt>From outside</dt>
        <dd>{database.connectionString ? <Secret value={database.connectionString} label="External connection string" /> : "No host port yet."}</dd>
        <dt>From your apps</dt>
        <dd>
          <Secret value={database.internalConnectionString} label="Internal connection string" />
        </dd>
        <dt>Host</dt>
        <dd>
          <code>{database.port ? `${database.host}:${database.port}` : database.host}</code>
        </dd>
        <dt>User</dt>
        <dd>
          <code>{database.username}</code>
        </dd>
        <dt>Database</dt>
        <dd>
          <code>{database.databaseName}</code>
        </dd>
        <dt>Storage</dt>
        <dd>
          {formatBytes(database.storage?.usedBytes)} of {database.storageGB} GB
          {database.storage?.warning && <p class="db-warning">{database.storage.warning}</p>}
        </dd>
      </dl>
      <h2>Live</h2>
      <ErrorText message={statsError} />
      {latest && !latest.running && <p class="muted">Not running: the figures are zeros.</p>}
      <div class="db-charts">
        <Sparkline title="CPU" unit="%" values={samples.map((stats) => stats.cpuPercent)} />
        <Sparkline title="Memory" unit=" MB" values={samples.map((stats) => stats.memoryUsedBytes / 1048576)} />
        <Sparkline title="Network in per reading" unit=" KB" values={samples.slice(1).map((stats, index) => Math.max(0, stats.networkRxBytes - samples[index]!.networkRxBytes) / 1024)} />
      </div>
    </>
  );
}

function LogsTab({ database }: { database: Database }) {
  const [tail, setTail] = useState(100);
  const [timestamps, setTimestamps] = useState(false);
  const logs = useLoad(
    () => api<{ lines: string[] }>("GET", databasePath(database.id, `/logs?tail=${tail}&timestamps=${timestamps}`)).then(({ lines }) => lines),
    [database.id, tail, timestamps],
  );
  return (
    <>
      <h2>Logs</h2>
      <div class="db-toolbar">
        <LogOptions tail={tail} tails={[100, 500, 2000]} onTail={setTail} timestamps={timestamps} onTimestamps={setTimestamps} />
        <button type="button" onClick={() => void logs.reload()}>
          Refresh
        </button>
      </div>
      <ErrorText message={logs.error} />
      {!logs.data && !logs.error && <Spinner />}
      {logs.data && (logs.data.length ? <pre class="db-logs" role="region" tabIndex={0} aria-label="Log lines">{logs.data.join("\n")}</pre> : <p class="empty">No log lines.</p>)}
    </>
  );
}

export function HistoryTab({ database }: { database: Database }) {
  const history = useLoad(() => api<{ operations: Operation[] }>("GET", databasePath(database.id, "/operations")).then(({ operations }) => operations), [database.id]);
  useEffect(() => everyFewSeconds(() => void history.reload(), 4000), [history.reload]);
  return (
    <>
      <h2>Operations</h2>
      <ErrorText message={history.error} />
      {!history.data && !history.error && <Spinner />}
      {history.data && (
        <Table
          caption="Operations"
          headings={["Operation", "Status", "By", "Started", "Finished", "Error"]}
          empty="No operations yet."
          rowKeys={history.data.map((operation) => operation.id)}
          rows={history.data.map((operation) => [
            operation.type,
            <StatusBadge status={operation.status} />,
            operation.actor.type === "system" ? "platform" : operation.actor.type === "api_key" ? "API key" : "user",
            <When iso={operation.startedAt} />,
            <When iso={operation.finishedAt} />,
            operation.error ?? "",
          ])}
        />
      )}
    </>
  );
}

function SettingsTab({ database, onChanged }: { database: Database; onChanged: () => Promise<void> }) {
  const { session } = useSession();
  const save = async (values: Record<string, string>) => {
    const body: Record<string, unknown> = {};
    if (values.name!.trim() !== database.name) body.name = values.name!.trim();
    if (Number(values.memoryMB) !== database.memoryMB) body.memoryMB = Number(values.memoryMB);
    // Emptied: back to the platform default (PLATFORM_DEFAULT_CPUS).
    const cpus = values.cpus!.trim() ? Number(values.cpus) : null;
    if (cpus !== database.cpus) body.cpus = cpus;
    if (!Object.keys(body).length) return;
    await api("PATCH", databasePath(database.id, "/settings"), body);
    await onChanged();
  };
  const remove = async () => {
    await api("DELETE", databasePath(database.id));
    location.hash = href("databases");
  };
  return (
    <>
      {may(session, "PATCH /api/databases/{databaseId}/settings") && (
        <>
          <h2>Settings</h2>
          <Form class="db-form" label="Database settings" submitText="Save" onSubmit={save}>
            <Field label="Name" name="name" required maxLength={63} defaultValue={database.name} hint="Also its host name on your apps' network; the connection string stays." />
            <Field label="Memory (MB)" name="memoryMB" type="number" min={256} max={262144} step={1} required defaultValue={String(database.memoryMB)} hint="Applied without a restart." />
            <Field label="CPUs" name="cpus" type="number" min={0.1} max={16} step={0.1} defaultValue={String(database.cpus)} hint="0.1 to 16; empty: the platform default. Applied without a restart." />
          </Form>
        </>
      )}
      {may(session, "POST /api/databases/{databaseId}/rotate-password") && <PasswordRotation database={database} onChanged={onChanged} />}
      {may(session, "DELETE /api/databases/{databaseId}") && (
        <>
          <h2>Delete</h2>
          <ConfirmByName name={database.name} action="Delete database" onConfirm={remove}>
            <p class="muted">The container, its volumes and its backups are deleted. This cannot be undone.</p>
          </ConfirmByName>
        </>
      )}
    </>
  );
}

function PasswordRotation({ database, onChanged }: { database: Database; onChanged: () => Promise<void> }) {
  const [rotateError, setRotateError] = useState("");
  const [rotated, setRotated] = useState(false);
  const [newPassword, setNewPassword] = useState("");
  const rotate = async () => {
    setRotated(false);
    if (!confirm(`Rotate the password of ${database.name}? Apps using the current one lose access until they get the new one.`)) return;
    await api("POST", databasePath(database.id, "/rotate-password"), newPassword ? { password: newPassword } : {});
    setNewPassword("");
    setRotated(true);
    await onChanged();
  };
  return (
    <>
      <h2>Password</h2>
      <p class="muted">A new password is set in the engine, random unless you give one; the connection strings change with it.</p>
      <div class="db-form">
        <label class="field">
          <span class="field-label">New password (optional)</span>
          <input type="password" autocomplete="new-password" minLength={8} maxLength={128} placeholder="Random" value={newPassword} onInput={(event) => setNewPassword((event.currentTarget as HTMLInputElement).value)} />
          <small>At least 8 characters, no spaces.</small>
        </label>
      </div>
      <ActionButton run={rotate} onError={setRotateError}>
        Rotate password
      </ActionButton>
      <div role="status">{rotated && <p>Password rotation started: the new connection strings show once it has finished.</p>}</div>
      <ErrorText message={rotateError} />
    </>
  );
}
