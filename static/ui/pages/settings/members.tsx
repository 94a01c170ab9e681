// Settings > Members: the workspace's members (owners and admins change their roles and remove
// them; the API says who may touch an owner), and invitations (owners and admins send and cancel
// them; no one else sees them). Its owners delete an empty workspace at the end, unless it is their
// only one (an account without a workspace has nothing left to open), and may require two-factor
// sign-in of every member.
import { useState } from "preact/hooks";
import { api, segment } from "../../api";
import { ActionButton, Field, Form, SelectField } from "../../components/form";
import { Table } from "../../components/table";
import { CopyButton, ErrorText, When } from "../../components/text";
import { ConfirmByName } from "../../components/widgets";
import { may, useLoad, useSession } from "../../session";
import { TwoFactorRequirement } from "./account";

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

/** Roles as offered; an invitation is never for an owner. */
const ROLES: [role: string, text: string][] = [
  ["member", "Member"],
  ["admin", "Admin"],
  ["viewer", "Viewer (read-only)"],
  ["owner", "Owner"],
];

const inviteLink = (invitationId: string) => `${location.origin}/#/invite/${segment(invitationId)}`;

export function MembersTab() {
  const { session } = useSession();
  const canManage = may(session, "PATCH /api/organization/members/{userId}");
  const canRemove = may(session, "DELETE /api/organization/members/{userId}");
  const seesInvitations = may(session, "GET /api/organization/invitations");
  const canInvite = may(session, "POST /api/organization/invitations");
  const canCancel = may(session, "DELETE /api/organization/invitations/{invitationId}");
  const members = useLoad(() => api<{ members: Member[] }>("GET", "/api/organization/members").then(({ members }) => members));
  const invitations = useLoad(() =>
    seesInvitations ? api<{ invitations: Invitation[] }>("GET", "/api/organization/invitations").then(({ invitations }) => invitations) : Promise.resolve(null),
  );
  const [invitationsError, setInvitationsError] = useState("");
  const [membersError, setMembersError] = useState("");

  const invite = async (values: Record<string, string>, form: HTMLFormElement) => {
    await api("POST", "/api/organization/invitations", values);
    form.reset();
    await invitations.reload();
  };
  const changeRole = async (member: Member, role: string) => {
    setMembersError("");
    try {
      await api("PATCH", `/api/organization/members/${segment(member.userId)}`, { role });
      await members.reload();
    } catch (failure) {
      // Redrawn with the message, the select goes back to the role kept.
      setMembersError((failure as Error).message);
    }
  };
  const remove = async (member: Member) => {
    if (!confirm(`Remove ${member.email} from the workspace? Their sessions and API keys here stop working.`)) return;
    await api("DELETE", `/api/organization/members/${segment(member.userId)}`);
    await members.reload();
  };
  const roleOptions = (current: string) => ROLES.filter(([role]) => session.role === "owner" || role !== "owner" || current === "owner");
  const cancel = async (invitation: Invitation) => {
    await api("DELETE", `/api/organization/invitations/${segment(invitation.id)}`);
    await invitations.reload();
  };

  return (
    <>
      <h2>Members</h2>
      <ErrorText message={membersError || members.error} />
      {members.data && (
        <Table
          caption="Members"
          headings={canRemove ? ["Email", "Role", "Joined", ""] : ["Email", "Role", "Joined"]}
          empty="No members."
          rows={members.data.map((member) => {
            const cells = [
              member.email + (member.userId === session.user.id ? " (you)" : ""),
              canManage ? (
                <select aria-label={`Role of ${member.email}`} value={member.role} onChange={(event) => void changeRole(member, (event.currentTarget as HTMLSelectElement).value)}>
                  {roleOptions(member.role).map(([role, text]) => (
                    <option value={role}>{text}</option>
                  ))}
                </select>
              ) : (
                member.role
              ),
              <When iso={member.joinedAt} />,
            ];
            if (canRemove) {
              cells.push(
                <ActionButton class="danger" label={`Remove ${member.email}`} run={() => remove(member)} onError={setMembersError}>
                  Remove
                </ActionButton>,
              );
            }
            return cells;
          })}
        />
      )}
      {seesInvitations && <h2>Invitations</h2>}
      {canInvite && (
        <>
          <p class="muted">Invite someone by email, then send them the invite link. It is valid for 48 hours.</p>
          <Form class="inline" label="Invite a member" submitText="Invite" onSubmit={invite}>
            <Field label="Email" type="email" name="email" required autocomplete="off" />
            <SelectField label="Role" name="role" options={ROLES.filter(([role]) => role !== "owner")} />
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
              pending && canCancel ? (
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
      {may(session, "PUT /api/organization/two-factor-requirement") && <TwoFactorRequirement />}
      {may(session, "DELETE /api/organization/") && <DeleteWorkspace />}
    </>
  );
}

/** Deletes the active workspace once its name is typed; the session then acts in the user's next one. */
function DeleteWorkspace() {
  const { session, reload } = useSession();
  const workspace = session.organizations.find((organization) => organization.id === session.activeOrganizationId);
  if (!workspace) return null;
  const remove = async () => {
    await api("DELETE", "/api/organization/");
    location.hash = "#/apps";
    await reload();
  };
  return (
    <section aria-labelledby="delete-workspace-heading">
      <h2 id="delete-workspace-heading">Delete the workspace</h2>
      {session.organizations.length < 2 ? (
        <p class="muted">{`${workspace.name} is your only workspace: deleting it would leave your account with nothing to open.`}</p>
      ) : (
        <ConfirmByName name={workspace.name} action="Delete workspace" onConfirm={remove}>
          <p class="muted">Its members, invitations, API keys and audit log are deleted with it; the members' accounts stay. Delete its apps and databases first.</p>
        </ConfirmByName>
      )}
    </section>
  );
}
