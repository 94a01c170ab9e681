// A logged-in person's page: the header (workspace switcher, who is logged in, log out), the
// sections, and the section the route names; in a workspace that requires two-factor sign-in,
// an account without it sees only its setup.
import { useEffect } from "preact/hooks";
import { api, ApiError } from "../api";
import { useRoute } from "../router";
import { useSession } from "../session";
import { AppsSection } from "./apps";
import { DatabasesSection } from "./databases";
import { SettingsSection } from "./settings";
import { VolumesSection } from "./volumes";
import { TwoFactorRequiredPage } from "./settings/account";

const SECTIONS = [
  { path: "apps", title: "Apps", Page: AppsSection },
  { path: "databases", title: "Databases", Page: DatabasesSection },
  { path: "volumes", title: "Volumes", Page: VolumesSection },
  { path: "settings", title: "Settings", Page: SettingsSection },
];

export function Workspace() {
  const { session, reload, ended } = useSession();
  const route = useRoute();
  const mustSetUpTwoFactor = session.twoFactorRequired && !session.twoFactorEnabled;
  const section = SECTIONS.find((candidate) => candidate.path === route[0]) ?? SECTIONS[0]!;
  useEffect(() => {
    document.title = `${section.title} · Platform`;
  }, [section]);

  const switchWorkspace = async (event: Event) => {
    const select = event.currentTarget as HTMLSelectElement;
    try {
      await api("POST", "/api/auth/set-active-organization", { organizationId: select.value });
      await reload();
    } catch (failure) {
      select.value = session.activeOrganizationId;
      alert(`Could not switch workspace: ${(failure as Error).message}`);
    }
  };
  const logout = async () => {
    try {
      await api("POST", "/api/auth/logout");
    } catch (failure) {
      // 401: the session had already ended, which is what logging out wants.
      if (!(failure instanceof ApiError && failure.status === 401)) return alert(`Could not log out: ${(failure as Error).message}`);
    }
    ended();
  };

  return (
    <>
      <header class="topbar">
        <a class="brand" href="#/apps">
          Platform
        </a>
        <label class="switcher">
          <span>Workspace</span>
          <select name="organizationId" value={session.activeOrganizationId} onChange={switchWorkspace}>
            {session.organizations.map((organization) => (
              <option value={organization.id}>{organization.name}</option>
            ))}
          </select>
        </label>
        <span class="spacer" />
        <span class="user" title={`Role: ${session.role}`}>
          {session.user.email}
        </span>
        <button type="button" class="quiet" onClick={logout}>
          Log out
        </button>
      </header>
      {mustSetUpTwoFactor ? (
        <TwoFactorRequiredPage />
      ) : (
        <div class="layout">
          <nav class="sidebar" aria-label="Sections">
            <ul>
              {SECTIONS.map((candidate) => (
                <li>
                  <a href={`#/${candidate.path}`} aria-current={candidate === section ? "page" : undefined}>
                    {candidate.title}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
          <main id="content" tabIndex={-1}>
            <section.Page key={session.activeOrganizationId} route={route.slice(1)} />
          </main>
        </div>
      )}
    </>
  );
}
