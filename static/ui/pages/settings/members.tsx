// Settings > Members: the workspace's members, and invitations (owners and admins send and cancel them).
import { useState } from "preact/hooks";
import { api, segment } from "../../api";
import { ActionButton, Field, Form, SelectField } from "../../components/form";
import { Table } from "../../components/table";
import { CopyButton, ErrorText, When } from "../../components/text";
import { useLoad, useSession } from "../../session";

interface Member {
  userId: string;
  email: string;
  role: string;
  joinedAt: string;
}

interface Invitation {
  id: string;
  email: string;
  role: string;
  status: string;
  expiresAt: string;
}

const inviteLink = (invitationId: string) => `${location.origin}/#/invite/${segment(invitationId)}`;

export function MembersTab() {
  const { session } = useSession();
  const canManage = session.role === "owner" || session.role === "admin";
  const members = useLoad(() => api<{ members: Member[] }>("GET", "/api/organization/members").then(({ members }) => members));
  const invitations = useLoad(() => api<{ invitations: Invitation[] }>("GET", "/api/organization/invitations").then(({ invitations }) => invitations));
  const [invitationsError, setInvitationsError] = useState("");

  const invite = async (values: Record<string, string>, form: HTMLFormElement) => {
    await api("POST", "/api/organization/invitations", values);
    form.reset();
    await invitations.reload();
  };
  const cancel = async (invitation: Invitation) => {
    await api("DELETE", `/api/organization/invitations/${segment(invitation.id)}`);
    await invitations.reload();
  };

  return (
    <>
      <h2>Members</h2>
      <ErrorText message={members.error} />
      {members.data && (
        <Table
          caption="Members"
          headings={["Email", "Role", "Joined"]}
          empty="No members."
          rows={members.data.map((member) => [member.email + (member.userId === session.user.id ? " (you)" : ""), member.role, <When iso={member.joinedAt} />])}
        />
      )}
      <h2>Invitations</h2>
      {canManage && (
        <>
          <p class="muted">Invite someone by email, then send them the invite link. It is valid for 48 hours.</p>
          <Form class="inline" label="Invite a member" submitText="Invite" onSubmit={invite}>
            <Field label="Email" type="email" name="email" required autocomplete="off" />
            <SelectField
              label="Role"
              name="role"
              options={[
                ["member", "Member"],
                ["admin", "Admin"],
                ["viewer", "Viewer (read-only)"],
              ]}
            />
          </Form>
        </>
      )}
      <ErrorText message={invitationsError || invitations.error} />
      {invitations.data && (
        <Table
          caption="Invitations"
          headings={["Email", "Role", "Status", "Expires", "Invite link", ""]}
          empty="No invitations."
          rows={invitations.data.map((invitation) => {
            const pending = invitation.status === "pending";
            const link = inviteLink(invitation.id);
            return [
              invitation.email,
              invitation.role,
              <span class={`badge ${invitation.status}`}>{invitation.status}</span>,
              pending ? <When iso={invitation.expiresAt} /> : "—",
              pending ? (
                <div class="secret">
                  <input type="text" readOnly value={link} aria-label={`Invite link for ${invitation.email}`} onFocus={(event) => (event.currentTarget as HTMLInputElement).select()} />
                  <CopyButton text={link} />
                </div>
              ) : (
                "—"
              ),
              pending && canManage ? (
                <ActionButton class="danger" label={`Cancel invitation for ${invitation.email}`} run={() => cancel(invitation)} onError={setInvitationsError}>
                  Cancel
                </ActionButton>
              ) : (
                ""
              ),
            ];
          })}
        />
      )}
    </>
  );
}
