// Schemas of /api/organization: what it answers, as named schemas of the OpenAPI document (src/http/responses.ts).
import { t } from "elysia";
import type { TSchema } from "@sinclair/typebox";
import { oneOf, ref, resource, timestamp } from "../http/responses";
import { ApiKeySchema } from "../api-keys/model";
import { AUDIT_ACTIONS } from "../audit/service";

export const ROLES = ["owner", "admin", "member", "viewer"] as const;
/** The roles an invitation may grant: ownership is given to a member, never by invitation. */
export const INVITATION_ROLES = ["admin", "member", "viewer"] as const;
export const INVITATION_STATUSES = ["pending", "accepted", "canceled", "expired"] as const;
export const AUDIT_ACTOR_TYPES = ["user", "api_key", "cli", "anonymous"] as const;

// Emails are plain strings here, not `format: "email"`: the placeholder owner `platform keys create`
// makes has one like `owner+name@localhost`.
const memberFields = {
  userId: t.String(),
  email: t.String(),
  role: oneOf(ROLES),
  joinedAt: timestamp("When the membership began"),
};

export const MemberSchema = resource("Member", memberFields, "A member of the workspace: a user and their role there.");

export const RemovedMemberSchema = resource(
  "RemovedMember",
  {
    ...memberFields,
    revokedKeys: t.Integer({ minimum: 0, description: "How many of the member's API keys made in this workspace were deleted with the membership" }),
  },
  "A member just removed from the workspace, and how many of their keys went with the membership.",
);

const invitationFields = {
  email: t.String({ description: "The invited email, lowercased" }),
  role: oneOf(INVITATION_ROLES, "The role the invitee gets on accepting"),
  status: oneOf(INVITATION_STATUSES, "`expired`: still pending past `expiresAt`, so it can no longer be accepted"),
  expiresAt: timestamp(),
};

export const InvitationSchema = resource(
  "Invitation",
  {
    id: t.String({ description: "The secret of the invite link: it is what accepts the invitation" }),
    organizationId: t.String(),
    ...invitationFields,
    invitedBy: t.String({ description: "The user id of who invited" }),
    createdAt: timestamp(),
  },
  "An invitation to join the workspace.",
);

export const InvitationPreviewSchema = resource(
  "InvitationPreview",
  { ...invitationFields, organizationName: t.String({ description: "The workspace the invitee joins" }) },
  "What an invitation is for, as its invitee sees it before accepting.",
);

export const WorkspaceApiKeySchema = resource(
  "WorkspaceApiKey",
  {
    ...ApiKeySchema.properties,
    userId: t.String({ description: "The user the key acts as" }),
    email: t.String({ description: "That user's email" }),
  },
  "An API key that acts in the workspace, without its secret, with the user who holds it.",
);

export const AuditActorSchema = resource(
  "AuditActor",
  {
    type: oneOf(AUDIT_ACTOR_TYPES),
    id: t.Nullable(t.String({ description: "The user id (`user`) or the key id (`api_key`); null when there is none" })),
  },
  "Who did what an audit entry records.",
);

export const AuditEntrySchema = resource(
  "AuditEntry",
  {
    id: t.String(),
    action: oneOf(AUDIT_ACTIONS),
    actor: ref(AuditActorSchema),
    target: t.Nullable(t.String({ description: "What it was done to: a key, an email, for apps and databases `name (id)`" })),
    clientAddress: t.Nullable(t.String({ description: "The address the request came from, when known" })),
    createdAt: timestamp(),
  },
  "One event of the workspace's audit log.",
);

export const DeletedOrganizationSchema = resource(
  "DeletedOrganization",
  { id: t.String(), name: t.String() },
  "A workspace that was just deleted.",
);

export const ORGANIZATION_RESOURCES: (TSchema & { title: string })[] = [
  MemberSchema,
  RemovedMemberSchema,
  InvitationSchema,
  InvitationPreviewSchema,
  WorkspaceApiKeySchema,
  AuditActorSchema,
  AuditEntrySchema,
  DeletedOrganizationSchema,
];
