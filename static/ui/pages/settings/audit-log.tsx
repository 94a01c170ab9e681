// Settings > Audit log: the workspace's security events, newest first.
import { api } from "../../api";
import { Table } from "../../components/table";
import { ErrorText, When } from "../../components/text";
import { useLoad } from "../../session";
import { actorText, memberEmails, type Actor } from "../../components/actor";
import { ACTION_LABELS } from "./audit-actions";

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
            <span title={event.action}>{ACTION_LABELS[event.action as keyof typeof ACTION_LABELS] ?? event.action}</span>,
            actorText(event.actor, loaded.data?.emailOf),
            event.target ?? "—",
            event.clientAddress ?? "—",
          ])}
        />
      )}
    </>
  );
}
