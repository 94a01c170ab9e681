// One app's page: its name, live status, URL and lifecycle actions, then its tabs (overview, logs,
// builds, environment, settings, health, volumes, domains, traffic, files, history), each a hash route of its
// own. An unhealthy or crash-looping app has its reason under the header on every tab.
import { useEffect, useState } from "preact/hooks";
import "./app-page.css";
import { api, segment } from "../../../api";
import { ActionButton } from "../../../components/form";
import { ErrorText, When } from "../../../components/text";
import { ConfirmByName, Facts, Spinner, StatusBadge, Tabs } from "../../../components/widgets";
import { href } from "../../../router";
import { may, useLoad, useSession } from "../../../session";
import { FilesTab } from "../files";
import { BuildsTab } from "./builds";
import { DomainsTab } from "./domains";
import { EnvTab } from "./env";
import { HealthTab } from "./health";
import { HistoryTab } from "./history";
import { ImageSource, isImageApp } from "./image-source";
import { LogsTab } from "./logs";
import { SettingsTab } from "./settings";
import { isTroubled, StatusReason, TroubledStatus } from "./status-reason";
import { TrafficTab } from "./traffic";
import { DeleteVolumesChoice, VolumesTab } from "./volumes";
import type { App, TabProps } from "./types";

const STATUS_REFRESH_MS = 3000;

function OverviewTab({ app }: TabProps) {
  const rows: [string, preact.ComponentChildren][] = [
    ["Status", <><StatusBadge status={app.status} /> {!isTroubled(app) && <StatusReason reason={app.statusReason} />}</>],
    ["Runtime", app.runtime],
    ["Memory", `${app.memoryMB} MB`],
    ["CPUs", String(app.cpus)],
    ["Subdomain", app.subdomain ?? "None"],
    ["Serving port", app.servingPort === null ? "Not serving" : String(app.servingPort)],
    ["Current build", app.currentBuildId ? <a href={href("apps", app.id, "builds", app.currentBuildId)}><code>{app.currentBuildId}</code></a> : "None yet"],
    ["Source", isImageApp(app) ? <ImageSource app={app} /> : app.repository ? `${app.repository.owner}/${app.repository.name} (${app.repository.branch})` : "ZIP upload"],
    [
      "Certificate",
      app.certificate ? (
        <>
          <StatusBadge status={app.certificate.status} />
          {app.certificate.expiresAt && <> expires <When iso={app.certificate.expiresAt} /></>}
          {app.certificate.lastError && <span class="error-inline"> {app.certificate.lastError}</span>}
        </>
      ) : (
        "None (no subdomain)"
      ),
    ],
    ["Created", <When iso={app.createdAt} />],
  ];
  return (
    <>
      <h2>Overview</h2>
      {app.filesChangedSinceBuild && <p class="callout">Files were edited since the last build: redeploy to build them.</p>}
      <Facts facts={rows} />
    </>
  );
}

const LIFECYCLE: [route: string, action: string, label: string][] = [
  ["POST /api/apps/{appId}/start", "start", "Start"],
  ["POST /api/apps/{appId}/stop", "stop", "Stop"],
  ["POST /api/apps/{appId}/restart", "restart", "Restart"],
  ["POST /api/apps/{appId}/redeploy", "redeploy", "Redeploy"],
];

const TABS: { id: string; title: string; Tab: (props: TabProps) => preact.JSX.Element }[] = [
  { id: "overview", title: "Overview", Tab: OverviewTab },
  { id: "logs", title: "Logs", Tab: LogsTab },
  { id: "builds", title: "Builds", Tab: BuildsTab },
  { id: "env", title: "Environment", Tab: EnvTab },
  { id: "settings", title: "Settings", Tab: SettingsTab },
  { id: "health", title: "Health", Tab: HealthTab },
  { id: "volumes", title: "Volumes", Tab: VolumesTab },
  { id: "domains", title: "Domains", Tab: DomainsTab },
  { id: "traffic", title: "Traffic", Tab: TrafficTab },
  { id: "files", title: "Files", Tab: ({ app, rest }) => <FilesTab appId={app.id} rest={rest} /> },
  { id: "history", title: "History", Tab: HistoryTab },
];

/** The lifecycle actions, each offered only when the user's role may call it (a viewer gets none). */
function Actions({ app, reloadApp }: { app: App; reloadApp(): Promise<void> }) {
  const { session } = useSession();
  const [error, setError] = useState("");
  const [deleting, setDeleting] = useState(false);
  const [deleteVolumes, setDeleteVolumes] = useState(false);
  const lifecycle = (action: string) => async () => {
    await api("POST", `/api/apps/${segment(app.id)}/${action}`);
    await reloadApp();
  };
  const remove = async () => {
    await api("DELETE", `/api/apps/${segment(app.id)}${deleteVolumes ? "?deleteVolumes=true" : ""}`);
    location.hash = "#/apps";
  };
  const offered = LIFECYCLE.filter(([route]) => may(session, route));
  const canDelete = may(session, "DELETE /api/apps/{appId}");
  if (!offered.length && !canDelete) return null;
  return (
    <div class="app-actions">
      <div class="app-action-buttons" role="group" aria-label="App actions">
        {offered.map(([, action, label]) => (
          <ActionButton run={lifecycle(action)} onError={setError}>
            {action === "redeploy" && isImageApp(app) ? "Redeploy (pulls the image again)" : label}
          </ActionButton>
        ))}
        {canDelete && (
          <button type="button" class="danger" aria-expanded={deleting} onClick={() => setDeleting(!deleting)}>
            {deleting ? "Keep the app" : "Delete…"}
          </button>
        )}
      </div>
      <ErrorText message={error} />
      {deleting && (
        <ConfirmByName name={app.name} action="Delete app" onConfirm={remove}>
          <p>Deleting removes the app's containers, images, files, env vars and builds. It cannot be undone.</p>
          <DeleteVolumesChoice app={app} checked={deleteVolumes} onChange={setDeleteVolumes} />
        </ConfirmByName>
      )}
    </div>
  );
}

export function AppPage({ appId, tab, rest }: { appId: string; tab?: string; rest: string[] }) {
  const loaded = useLoad(() => api<{ app: App }>("GET", `/api/apps/${segment(appId)}`).then(({ app }) => app), [appId]);
  const app = loaded.data;
  const current = TABS.find((candidate) => candidate.id === (tab ?? "overview")) ?? TABS[0]!;

  useEffect(() => {
    const timer = setInterval(() => document.hidden || void loaded.reload(), STATUS_REFRESH_MS);
    return () => clearInterval(timer);
  }, [loaded.reload]);
  useEffect(() => {
    document.title = `${current.title} · ${app?.name ?? "App"} · Platform`;
  }, [current, app?.name]);

  if (!app) {
    return loaded.error ? (
      <>
        <h1>App</h1>
        <ErrorText message={loaded.error} />
        <p>
          <a href="#/apps">Back to the apps</a>
        </p>
      </>
    ) : (
      <p class="loading">
        <Spinner />
      </p>
    );
  }
  return (
    <>
      <p class="app-breadcrumb">
        <a href="#/apps">Apps</a> /
      </p>
      <div class="app-header">
        <h1>{app.name}</h1>
        <StatusBadge status={app.status} />
        {app.url && (
          <a class="app-url" href={app.url} target="_blank" rel="noopener noreferrer">
            {app.url}
          </a>
        )}
      </div>
      {loaded.error && <ErrorText message={`Could not refresh the status: ${loaded.error}`} />}
      <TroubledStatus app={app} />
      <Actions app={app} reloadApp={loaded.reload} />
      <Tabs label="App" current={current.id} tabs={TABS.map(({ id, title }) => ({ id, title, href: id === "overview" ? href("apps", app.id) : href("apps", app.id, id) }))} />
      <section class="panel" aria-label={current.title} key={current.id}>
        <current.Tab app={app} reloadApp={loaded.reload} rest={rest} />
      </section>
    </>
  );
}
