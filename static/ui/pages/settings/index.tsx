// Settings: tabs for API keys, the account's two-factor sign-in, members and invitations, the audit
// log, image registry credentials, and the platform.
import { useEffect } from "preact/hooks";
import { may, useSession } from "../../session";
import { AccountTab } from "./account";
import { AuditLogTab } from "./audit-log";
import { DeveloperTab } from "./developer";
import { MembersTab } from "./members";
import { PlatformTab } from "./platform";
import { RegistriesTab } from "./registries";

/** The tabs; one that reads a route the user's role may not call is not offered. */
const TABS = [
  { path: "developer", title: "Developer", Tab: DeveloperTab },
  { path: "account", title: "Account", Tab: AccountTab },
  { path: "members", title: "Members", Tab: MembersTab },
  { path: "audit-log", title: "Audit log", Tab: AuditLogTab, reads: "GET /api/organization/audit-log" },
  { path: "registries", title: "Registries", Tab: RegistriesTab, reads: "GET /api/registries/" },
  { path: "platform", title: "Platform", Tab: PlatformTab },
];

export function SettingsSection({ route }: { route: string[] }) {
  const { session } = useSession();
  const tabs = TABS.filter((candidate) => !candidate.reads || may(session, candidate.reads));
  const tab = tabs.find((candidate) => candidate.path === route[0]) ?? tabs[0]!;
  useEffect(() => {
    document.title = `${tab.title} · Settings · Platform`;
  }, [tab]);
  return (
    <>
      <h1>Settings</h1>
      <nav class="tabs" aria-label="Settings">
        {tabs.map((candidate) => (
          <a href={`#/settings/${candidate.path}`} aria-current={candidate === tab ? "page" : undefined}>
            {candidate.title}
          </a>
        ))}
      </nav>
      <section class="panel" aria-label={tab.title} key={tab.path}>
        <tab.Tab />
      </section>
    </>
  );
}
