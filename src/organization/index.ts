// Routes of /api/organization: invitations, members, every key, the audit log and the deletion of
// the active workspace. Who may call what is in src/http/permissions.ts.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { auditActor, authPlugin, limitFailedAttempts } from "../http/auth";
import { passwordFormSource } from "../http/request-source";
import { ok } from "../http/envelope";
import { json, ref, responses } from "../http/responses";
import { listAuditEvents } from "../audit/service";
import { membersOf } from "../workspaces/service";
import { createSession, publicUser, sessionCookie, setActiveWorkspace, signInAttempts } from "../auth/service";
import { secondFactorCode, UserSchema, withSessionCookie } from "../auth/model";
import { sha256Hex } from "../crypto/tokens";
import { acceptInvitation, cancelInvitation, createInvitation, invitedAccountEmail, listInvitations, previewInvitation } from "./service";
import { changeMemberRole, deleteWorkspace, listWorkspaceKeys, publicMember, removeMember, revokeWorkspaceKey } from "./members";
import {
  AuditEntrySchema,
  DeletedOrganizationSchema,
  INVITATION_ROLES,
  InvitationPreviewSchema,
  InvitationSchema,
  MemberSchema,
  ROLES,
  RemovedMemberSchema,
  WorkspaceApiKeySchema,
} from "./model";

const invitationIdParams = t.Object({ invitationId: t.String({ minLength: 1, maxLength: 64 }) });
const userIdParams = t.Object({ userId: t.String({ minLength: 1, maxLength: 64 }) });
const keyIdParams = t.Object({ keyId: t.String({ minLength: 1, maxLength: 64 }) });
const roleSchema = t.Union(ROLES.map((role) => t.Literal(role)));

export function organizationRoutes(ctx: ServerContext) {
  return new Elysia({ prefix: "/api/organization", tags: ["Organization"] })
    .use(authPlugin(ctx))
    .get(
      "/invitations",
      // The id is what accepts an invitation, so only those who may invite see them.
      ({ principal }) => ok({ invitations: listInvitations(ctx.db, principal.workspaceId) }),
      {
        auth: true,
        detail: {
          operationId: "listInvitations",
          responses: responses({ 200: json("The workspace's invitations, newest first", { invitations: t.Array(ref(InvitationSchema)) }) }),
          summary: "List the workspace's invitations",
          description: "Owners and admins. Answers `invitations`, newest first, whatever their status.",
        },
      },
    )
    .get("/invitations/:invitationId/preview", ({ params }) => ok({ invitation: previewInvitation(ctx.db, params.invitationId) }), {
      params: invitationIdParams,
      detail: {
        operationId: "previewInvitation",
        responses: responses({ 200: json("What the invitation is for", { invitation: ref(InvitationPreviewSchema) }) }, "INVITATION_NOT_FOUND"),
        summary: "What an invitation is for, before accepting it",
        description:
          "No API key needed: the invitation id is the secret. Answers `invitation` so the invite page can say what the " +
          "invitee joins. 404 `INVITATION_NOT_FOUND` for unknown ids.",
        security: [],
      },
    })
    .post(
      "/invitations",
      ({ principal, body, set }) => {
        set.status = 201;
        return ok({ invitation: createInvitation(ctx.db, principal.workspaceId, { email: body.email, role: body.role ?? "member" }, auditActor(principal)) });
      },
      {
        auth: true,
        body: t.Object({
          email: t.String({ format: "email", maxLength: 254 }),
          role: t.Optional(t.Union(INVITATION_ROLES.map((role) => t.Literal(role)), { default: "member" })),
        }),
        detail: {
          operationId: "createInvitation",
          responses: responses(
            { 201: json("The invitation, pending", { invitation: ref(InvitationSchema) }) },
            "ALREADY_MEMBER",
            "INVITATION_PENDING",
            "PASSWORDLESS_ACCOUNT",
          ),
          summary: "Invite someone by email",
          description:
            "Owners and admins. `role`: `admin`, `member` (default) or `viewer`; ownership is granted to a member with " +
            "PATCH /api/organization/members/{userId}. The email is lowercased; one pending invitation per email (409 `INVITATION_PENDING`). " +
            "409 `PASSWORDLESS_ACCOUNT` for the email of the owner `platform keys create` made, which only the owner setup or POST /api/auth/claim claims. " +
            "Valid 48 hours. The invitee accepts with `POST /api/organization/invitations/{invitationId}/accept`.",
        },
      },
    )
    .delete(
      "/invitations/:invitationId",
      ({ principal, params }) => ok({ invitation: cancelInvitation(ctx.db, principal.workspaceId, params.invitationId, auditActor(principal)) }),
      {
        auth: true,
        params: invitationIdParams,
        detail: {
          operationId: "cancelInvitation",
          responses: responses({ 200: json("The invitation, canceled", { invitation: ref(InvitationSchema) }) }, "INVITATION_NOT_FOUND", "CONFLICT"),
          summary: "Cancel a pending invitation",
          description: "Owners and admins. Answers `invitation`. 404 `INVITATION_NOT_FOUND`; 409 `CONFLICT` when it is no longer pending.",
        },
      },
    )
    .post(
      "/invitations/:invitationId/accept",
      async ({ params, body, request, server, set }) => {
        const { clientAddress, https } = passwordFormSource(ctx.config, server, request);
        // An existing account's sign-in: its wrong passwords and codes count as at the login, whichever
        // invitation (a fresh one is easy to get) they come through.
        const invitedAccount = invitedAccountEmail(ctx.db, params.invitationId);
        const account = [`invitation:${params.invitationId}`, ...(invitedAccount ? [signInAttempts(invitedAccount)] : [])];
        const accepted = await limitFailedAttempts(ctx, { clientAddress, account }, () =>
          acceptInvitation(ctx.db, ctx.secrets, params.invitationId, body, clientAddress),
        );
        const token = createSession(ctx.db, accepted.userId, ctx.config.sessionTtlSeconds);
        setActiveWorkspace(ctx.db, sha256Hex(token), accepted.userId, accepted.workspaceId);
        set.headers["set-cookie"] = sessionCookie(token, ctx.config.sessionTtlSeconds, https);
        return ok({ organizationId: accepted.workspaceId, user: publicUser({ id: accepted.userId, email: accepted.email }) });
      },
      {
        params: invitationIdParams,
        body: t.Object({ password: t.String({ minLength: 8, maxLength: 256 }), code: secondFactorCode }),
        detail: {
          operationId: "acceptInvitation",
          responses: responses(
            {
              200: withSessionCookie(
                json("The invitee is a member, and their session started in the workspace", {
                  organizationId: t.String({ description: "The workspace joined, where the session starts" }),
                  user: ref(UserSchema),
                }),
                "The HttpOnly `platform_session` cookie of the new session (Secure over HTTPS, SameSite=Lax)",
              ),
            },
            "HOST_NOT_ALLOWED",
            "CSRF_REJECTED",
            "RATE_LIMITED",
            "SERVER_BUSY",
            "INVITATION_NOT_FOUND",
            "INVITATION_EXPIRED",
            "INVALID_CREDENTIALS",
            "TWO_FACTOR_REQUIRED",
            "PASSWORDLESS_ACCOUNT",
            "CONFLICT",
          ),
          summary: "Accept an invitation",
          description:
            "No API key needed: the invitation id is the secret. With the password of the account that has the invited " +
            "email, or a new password to create that account; it never sets the password of an existing account (409 " +
            "`PASSWORDLESS_ACCOUNT` for one without; 401 `INVALID_CREDENTIALS` for a wrong one; an account with two-factor " +
            "sign-in needs `code` too, answered as at the login: 401 `TWO_FACTOR_REQUIRED` without it). Starts a session in the " +
            "organization and answers the account and `organizationId`. " +
            "404 `INVITATION_NOT_FOUND` (unknown, canceled or used, also by an acceptance at the same moment), 410 " +
            "`INVITATION_EXPIRED`, 409 `CONFLICT` when the invited account was created meanwhile (accept again with its password). " +
            "Failures are rate limited per client address and per invitation, and for an existing account also as its logins are " +
            "(they share one limit: 429 `RATE_LIMITED` with Retry-After once spent, whichever way); 403 " +
            "`HOST_NOT_ALLOWED` / `CSRF_REJECTED` for a disallowed Host or a cross-site Origin; 503 `SERVER_BUSY` when too many " +
            "password checks wait.",
          security: [],
        },
      },
    )
    .get("/members", ({ principal }) => ok({ members: membersOf(ctx.db, principal.workspaceId).map(publicMember) }), {
      auth: true,
      detail: {
        operationId: "listMembers",
        responses: responses({ 200: json("The workspace's members", { members: t.Array(ref(MemberSchema)) }) }),
        summary: "List the workspace's members",
        description: "Every role. Answers `members`.",
      },
    })
    .patch(
      "/members/:userId",
      ({ principal, params, body }) =>
        ok({ member: changeMemberRole(ctx.db, principal.workspaceId, principal.role, params.userId, body.role, auditActor(principal)) }),
      {
        auth: true,
        params: userIdParams,
        body: t.Object({ role: roleSchema }),
        detail: {
          operationId: "updateMemberRole",
          responses: responses({ 200: json("The member, with the new role", { member: ref(MemberSchema) }) }, "FORBIDDEN", "MEMBER_NOT_FOUND", "LAST_OWNER"),
          summary: "Change a member's role",
          description:
            "Owners and admins; only an owner may make someone owner or change an owner's role (403 `FORBIDDEN`). Answers " +
            "`member` with its new role. 404 `MEMBER_NOT_FOUND`; 409 `LAST_OWNER` when it would leave the workspace " +
            "without an owner. Recorded as `member.role_changed`.",
        },
      },
    )
    .delete(
      "/members/:userId",
      ({ principal, params }) => ok({ member: removeMember(ctx.db, principal.workspaceId, principal.role, params.userId, auditActor(principal)) }),
      {
        auth: true,
        params: userIdParams,
        detail: {
          operationId: "removeMember",
          responses: responses({ 200: json("The member removed", { member: ref(RemovedMemberSchema) }) }, "FORBIDDEN", "MEMBER_NOT_FOUND", "LAST_OWNER"),
          summary: "Remove a member",
          description:
            "Owners and admins; only an owner may remove an owner (403 `FORBIDDEN`). Removes the membership and deletes the " +
            "member's API keys made in this workspace in the same step: they get 401 from the next request on, and keys " +
            "made elsewhere no longer act here. Answers `member` with `revokedKeys`, how many keys went. 404 " +
            "`MEMBER_NOT_FOUND`; 409 `LAST_OWNER` for the last owner. Recorded as `member.removed`.",
        },
      },
    )
    .get("/api-keys", ({ principal }) => ok({ keys: listWorkspaceKeys(ctx.db, principal.workspaceId) }), {
      auth: true,
      detail: {
        operationId: "listWorkspaceApiKeys",
        responses: responses({ 200: json("Every key that acts in the workspace, oldest first", { keys: t.Array(ref(WorkspaceApiKeySchema)) }) }),
        summary: "Every API key that acts in the workspace",
        description:
          "Owners and admins. Answers `keys`: the fields of GET /api/api-keys plus the holder's `userId` and `email`; " +
          "keys made in this workspace and keys made in another one with this one in their `otherWorkspaceIds`.",
      },
    })
    .delete(
      "/api-keys/:keyId",
      ({ principal, params }) => ok({ apiKey: revokeWorkspaceKey(ctx.db, principal.workspaceId, params.keyId, auditActor(principal)) }),
      {
        auth: true,
        params: keyIdParams,
        detail: {
          operationId: "revokeWorkspaceApiKey",
          responses: responses({ 200: json("The key, as it was before the revocation", { apiKey: ref(WorkspaceApiKeySchema) }) }, "API_KEY_NOT_FOUND"),
          summary: "Revoke any key of the workspace",
          description:
            "Owners and admins. A key made in this workspace is deleted (401 from now on); a key made in another workspace " +
            "loses this one from its `otherWorkspaceIds` and keeps working where it was made. Answers `apiKey`, with its " +
            "holder's `userId` and `email` as in the list. 404 " +
            "`API_KEY_NOT_FOUND`. Recorded as `api_key.revoked`.",
        },
      },
    )
    .delete("/", ({ principal }) => ok({ deleted: true, organization: deleteWorkspace(ctx.db, principal.workspaceId) }), {
      auth: true,
      detail: {
        operationId: "deleteOrganization",
        responses: responses(
          { 200: json("The workspace is gone", { deleted: t.Literal(true), organization: ref(DeletedOrganizationSchema) }) },
          "WORKSPACE_NOT_EMPTY",
        ),
        summary: "Delete the workspace",
        description:
          "Owners only. Deletes the workspace with its members, invitations, API keys and audit log; the members' accounts " +
          "stay. 409 `WORKSPACE_NOT_EMPTY` while it still has apps, databases or volumes (delete them first). Answers `deleted: true` " +
          "and `organization`.",
      },
    })
    .get(
      "/audit-log",
      ({ principal, query }) => {
        const events = listAuditEvents(ctx.db, principal.workspaceId, {
          limit: query.limit ?? 100,
          before: query.before ? Date.parse(query.before) : undefined,
        });
        return ok({ events });
      },
      {
        auth: true,
        query: t.Object({
          limit: t.Optional(t.Integer({ minimum: 1, maximum: 500, default: 100 })),
          before: t.Optional(t.String({ format: "date-time", description: "Only events older than this (for paging)" })),
          workspaceId: t.Optional(t.String()),
          organizationId: t.Optional(t.String()),
        }),
        detail: {
          operationId: "getAuditLog",
          responses: responses({ 200: json("The events, newest first", { events: t.Array(ref(AuditEntrySchema)) }) }),
          summary: "Read the workspace's security audit log",
          description:
            "Owners and admins. Answers `events` newest first, at most `limit` of them; `before` pages back.",
        },
      },
    );
}
