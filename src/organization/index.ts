// Routes of /api/organization: invitations, members and the audit log of the active workspace.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { assertSameOrigin, auditActor, authPlugin, clientAddressOf, limitFailedAttempts, requireRole } from "../http/auth";
import { ok } from "../http/envelope";
import { listAuditEvents } from "../audit/service";
import { membersOf } from "../workspaces/service";
import { createSession, sessionCookie, setActiveWorkspace } from "../auth/service";
import { sha256Hex } from "../crypto/tokens";
import { acceptInvitation, cancelInvitation, createInvitation, listInvitations, previewInvitation } from "./service";

const invitationIdParams = t.Object({ invitationId: t.String({ minLength: 1, maxLength: 64 }) });


export function organizationRoutes(ctx: ServerContext) {
  return new Elysia({ prefix: "/api/organization", tags: ["Organization"] })
    .use(authPlugin(ctx))
    .get(
      "/invitations",
      ({ principal }) => {
        // The id is what accepts an invitation, so only those who may invite see them.
        requireRole(principal, "owner", "admin");
        return ok({ invitations: listInvitations(ctx.db, principal.workspaceId) });
      },
      {
        auth: true,
        detail: {
          summary: "List the workspace's invitations",
          description:
            "Owners and admins. Answers `invitations`: id, organizationId, email, role, status (`pending`, `accepted`, " +
            "`canceled`, `expired`), invitedBy, expiresAt, createdAt; newest first.",
        },
      },
    )
    .get("/invitations/:invitationId/preview", ({ params }) => ok({ invitation: previewInvitation(ctx.db, params.invitationId) }), {
      params: invitationIdParams,
      detail: {
        summary: "What an invitation is for, before accepting it",
        description:
          "No API key needed: the invitation id is the secret. Answers `invitation` {email, organizationName, role, status, " +
          "expiresAt} so the invite page can say what the invitee joins. 404 `INVITATION_NOT_FOUND` for unknown ids.",
        security: [],
      },
    })
    .post(
      "/invitations",
      ({ principal, body, set }) => {
        requireRole(principal, "owner", "admin");
        set.status = 201;
        return ok({ invitation: createInvitation(ctx.db, principal.workspaceId, { email: body.email, role: body.role ?? "member" }, auditActor(principal)) });
      },
      {
        auth: true,
        body: t.Object({
          email: t.String({ format: "email", maxLength: 254 }),
          role: t.Optional(t.Union([t.Literal("admin"), t.Literal("member")], { default: "member" })),
        }),
        detail: {
          summary: "Invite someone by email",
          description:
            "Owners and admins. The email is lowercased; one pending invitation per email (409 `INVITATION_PENDING`). " +
            "409 `PASSWORDLESS_ACCOUNT` for the email of the owner `platform keys create` made, which only the owner setup claims. " +
            "Valid 48 hours. The invitee accepts with `POST /api/organization/invitations/{invitationId}/accept`.",
        },
      },
    )
    .delete(
      "/invitations/:invitationId",
      ({ principal, params }) => {
        requireRole(principal, "owner", "admin");
        return ok({ invitation: cancelInvitation(ctx.db, principal.workspaceId, params.invitationId, auditActor(principal)) });
      },
      { auth: true, params: invitationIdParams, detail: { summary: "Cancel a pending invitation" } },
    )
    .post(
      "/invitations/:invitationId/accept",
      async ({ params, body, request, server, set }) => {
        assertSameOrigin(request, false);
        const clientAddress = clientAddressOf(server, request);
        const accepted = await limitFailedAttempts(ctx, clientAddress, () =>
          acceptInvitation(ctx.db, params.invitationId, body.password, clientAddress),
        );
        const token = createSession(ctx.db, accepted.userId, ctx.config.sessionTtlSeconds);
        setActiveWorkspace(ctx.db, sha256Hex(token), accepted.userId, accepted.workspaceId);
        set.headers["set-cookie"] = sessionCookie(token, ctx.config.sessionTtlSeconds, request);
        return ok({ organizationId: accepted.workspaceId, user: { id: accepted.userId } });
      },
      {
        params: invitationIdParams,
        body: t.Object({ password: t.String({ minLength: 8, maxLength: 256 }) }),
        detail: {
          summary: "Accept an invitation",
          description:
            "No API key needed: the invitation id is the secret. With the password of the account that has the invited " +
            "email, or a new password to create that account; it never sets the password of an existing account (409 " +
            "`PASSWORDLESS_ACCOUNT` for one without). Starts a session in the organization. " +
            "404 `INVITATION_NOT_FOUND` (unknown, canceled or used, also by an acceptance at the same moment), 410 " +
            "`INVITATION_EXPIRED`, 409 `CONFLICT` when the invited account was created meanwhile (accept again with its password).",
          security: [],
        },
      },
    )
    .get("/members", ({ principal }) => ok({ members: membersOf(ctx.db, principal.workspaceId).map((member) => ({ ...member, joinedAt: new Date(member.joinedAt).toISOString() })) }), {
      auth: true,
      detail: { summary: "List the workspace's members", description: "Answers `members`: userId, email, role, joinedAt." },
    })
    .get(
      "/audit-log",
      ({ principal, query }) => {
        requireRole(principal, "owner", "admin");
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
          summary: "Read the workspace's security audit log",
          description:
            "Owners and admins. Answers `events` newest first: id, action (`api_key.created`, `api_key.updated`, " +
            "`api_key.revoked`, `auth.login`, `auth.login_failed`, `auth.owner_created`, `invitation.created`, " +
            "`invitation.canceled`, `invitation.accepted`), actor {type, id}, target, clientAddress, createdAt.",
        },
      },
    );
}
