// The workspace's apps (GET /api/apps/) with their live status: read again every few seconds while
// the page is shown, and filtered by name as the person types.
import { useEffect, useMemo, useState } from "preact/hooks";
import "./apps.css";
import { api } from "../../api";
import { ErrorText, When } from "../../components/text";
import { Spinner, StatusBadge } from "../../components/widgets";
import { href } from "../../router";
import { may, useLoad, useSession } from "../../session";

export interface AppSummary {
  id: string;
  name: string;
  runtime: string;
  status: string;
  statusReason: string | null;
  url: string | null;
  updatedAt: string;
}

const REFRESH_MS = 4000;

export function AppList() {
  const { session } = useSession();
  const canDeploy = may(session, "POST /api/apps/deploy") || may(session, "POST /api/apps/deploy-from-repo") || may(session, "POST /api/apps/deploy-image");
  const apps = useLoad(() => api<{ apps: AppSummary[] }>("GET", "/api/apps/").then(({ apps }) => apps));
  const [search, setSearch] = useState("");
  const { reload } = apps;

  useEffect(() => {
    // A hidden tab asks for nothing; it catches up as soon as it is shown again.
    const timer = setInterval(() => document.hidden || void reload(), REFRESH_MS);
    const shown = () => document.hidden || void reload();
    document.addEventListener("visibilitychange", shown);
    return () => {
      clearInterval(timer);
      document.removeEventListener("visibilitychange", shown);
    };
  }, [reload]);

  const wanted = search.trim().toLowerCase();
  const shownApps = useMemo(() => (apps.data ?? []).filter((app) => app.name.includes(wanted)), [apps.data, wanted]);

  return (
    <>
      <div class="apps-heading">
        <h1>Apps</h1>
        {canDeploy && (
          <a class="button-link primary" href="#/apps/new">
            Deploy an app
          </a>
        )}
      </div>
      <ErrorText message={apps.error} />
      {!apps.data && !apps.error && (
        <p class="loading">
          <Spinner />
        </p>
      )}
      {apps.data && apps.data.length === 0 && (
        <p class="empty">
          No apps in this workspace yet.
          {canDeploy && (
            <>
              {" "}
              <a href="#/apps/new">Deploy an app</a> from a ZIP or a repository.
            </>
          )}
        </p>
      )}
      {apps.data && apps.data.length > 0 && (
        <>
          <label class="field apps-search">
            <span class="field-label">Search apps by name</span>
            <input type="search" value={search} autocomplete="off" spellcheck={false} onInput={(event) => setSearch((event.currentTarget as HTMLInputElement).value)} />
          </label>
          <p class="muted apps-count" role="status">
            {wanted ? `${shownApps.length} of ${apps.data.length} apps match.` : `${apps.data.length} ${apps.data.length === 1 ? "app" : "apps"}.`}
          </p>
          {shownApps.length > 0 && <AppTable apps={shownApps} />}
        </>
      )}
    </>
  );
}

function AppTable({ apps }: { apps: AppSummary[] }) {
  return (
    <div class="table-wrap">
      <table class="apps-table">
        <caption class="visually-hidden">Apps</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col">URL</th>
            <th scope="col">Runtime</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {apps.map((app) => (
            // Keyed by id: a refresh or a filter keeps each row's elements, so focus stays put.
            <tr key={app.id}>
              <td>
                <a href={href("apps", app.id)}>{app.name}</a>
              </td>
              <td title={app.statusReason ?? undefined}>
                <StatusBadge status={app.status} />
              </td>
              <td class="apps-url">{app.url ? <a href={app.url} target="_blank" rel="noopener noreferrer">{app.url.replace(/^https?:\/\//, "")}</a> : "—"}</td>
              <td>{app.runtime}</td>
              <td>
                <When iso={app.updatedAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
