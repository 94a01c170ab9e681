// Settings > Audit log: the workspace's security events, newest first.
import { api } from "../../api";
import { Table } from "../../components/table";
import { ErrorText, When } from "../../components/text";
import { useLoad } from "../../session";
import { actorText, memberEmails, type Actor } from "../../components/actor";

const ACTION_LABELS: Record<string, string> = {
  "api_key.created": "API key created",
  "api_key.updated": "API key updated",
  "api_key.revoked": "API key revoked",
  "auth.login": "Logged in",
  "auth.login_failed": "Failed login",
  "auth.owner_created": "Owner account created",
  "invitation.created": "Invitation sent",
  "invitation.canceled": "Invitation canceled",
  "invitation.accepted": "Invitation accepted",
  "auth.owner_claimed": "Owner account claimed",
  "member.role_changed": "Member's role changed",
  "member.removed": "Member removed",
  "app.deployed": "App deployed",
  "app.started": "App started",
  "app.stopped": "App stopped",
  "app.restarted": "App restarted",
  "app.deleted": "App deleted",
  "app.env_changed": "App env vars changed",
  "app.settings_changed": "App settings changed",
  "build.canceled": "Build canceled",
  "database.created": "Database created",
  "database.started": "Database started",
  "database.stopped": "Database stopped",
  "database.deleted": "Database deleted",
  "database.settings_changed": "Database settings changed",
  "database.password_rotated": "Database password rotated",
};

interface AuditEvent {
  createdAt: string;
  action: string;
  actor: Actor;
  target: string | null;
  clientAddress: string | null;
}

export function AuditLogTab() {
  const loaded = useLoad(async () => {
    const [{ events }, emailOf] = await Promise.all([api<{ events: AuditEvent[] }>("GET", "/api/organization/audit-log"), memberEmails()]);
    return { events, emailOf };
  });
  return (
    <>
      <h2>Audit log</h2>
      <p class="muted">Security events of this workspace, newest first.</p>
      <ErrorText message={loaded.error} />
      {loaded.data && (
        <Table
          caption="Audit log"
          headings={["Time", "Event", "Actor", "Target", "Address"]}
          empty="No events yet."
          rows={loaded.data.events.map((event) => [
            <When iso={event.createdAt} />,
            <span title={event.action}>{ACTION_LABELS[event.action] ?? event.action}</span>,
            actorText(event.actor, loaded.data?.emailOf),
            event.target ?? "—",
            event.clientAddress ?? "—",
          ])}
        />
      )}
    </>
  );
}
