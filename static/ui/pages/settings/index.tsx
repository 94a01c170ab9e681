// Settings: tabs for API keys, members and invitations, the audit log, and the platform.
import { useEffect } from "preact/hooks";
import { AuditLogTab } from "./audit-log";
import { DeveloperTab } from "./developer";
import { MembersTab } from "./members";
import { PlatformTab } from "./platform";

const TABS = [
  { path: "developer", title: "Developer", Tab: DeveloperTab },
  { path: "members", title: "Members", Tab: MembersTab },
  { path: "audit-log", title: "Audit log", Tab: AuditLogTab },
  { path: "platform", title: "Platform", Tab: PlatformTab },
];

export function SettingsSection({ route }: { route: string[] }) {
  const tab = TABS.find((candidate) => candidate.path === route[0]) ?? TABS[0]!;
  useEffect(() => {
    document.title = `${tab.title} · Settings · Platform`;
  }, [tab]);
  return (
    <>
      <h1>Settings</h1>
      <nav class="tabs" aria-label="Settings">
        {TABS.map((candidate) => (
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
