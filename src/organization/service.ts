// Workspace invitations: invite by email (lowercased, one pending invite per email, 48 h to
// accept), list, cancel and accept. The invitation id is the unguessable secret of the invite link.
import { and, desc, eq } from "drizzle-orm";
import type { SecretBox } from "../crypto/secrets";
import { assertSecondFactor, spendSecondFactor, type SecondFactorProof } from "../auth/two-factor/service";
import type { PlatformDb } from "../db";
import { invitations, workspaces } from "../db/schema";
import { newId } from "../crypto/tokens";
import { ApiError } from "../http/errors";
import { recordAuditEvent, type AuditActor } from "../audit/service";
import { addMember, createUser, findUserByEmail, roleIn } from "../workspaces/service";
import type { Static } from "@sinclair/typebox";
import type { InvitationPreviewSchema, InvitationSchema } from "./model";

export const INVITATION_TTL_MS = 48 * 3600 * 1000;

type InvitationRow = typeof invitations.$inferSelect;

export function publicInvitation(invitation: InvitationRow, now = Date.now()): Static<typeof InvitationSchema> {
  const expired = invitation.status === "pending" && now >= invitation.expiresAt;
  return {
    id: invitation.id,
    organizationId: invitation.workspaceId,
    email: invitation.email,
    role: invitation.role,
    status: expired ? ("expired" as const) : invitation.status,
    invitedBy: invitation.invitedBy,
    expiresAt: new Date(invitation.expiresAt).toISOString(),
    createdAt: new Date(invitation.createdAt).toISOString(),
  };
}

export function listInvitations(db: PlatformDb, workspaceId: string, now = Date.now()) {
  return db
    .select()
    .from(invitations)
    .where(eq(invitations.workspaceId, workspaceId))
    .orderBy(desc(invitations.createdAt))
    .all()
    .map((invitation) => publicInvitation(invitation, now));
}

/**
 * The owner `platform keys create` makes has no password until the owner setup claims it with
 * one of its keys. Accepting an invitation sets the password of an account that has none, so an
 * invitation to that email would hand the owner to whoever holds the link: neither is allowed.
 */
function passwordlessAccount(email: string) {
  return new ApiError(
    "PASSWORDLESS_ACCOUNT",
    `${email} belongs to an account without a password (made by \`platform keys create\`); it is claimed through the owner setup or POST /api/auth/claim, not an invitation`,
  );
}

export function createInvitation(
  db: PlatformDb,
  workspaceId: string,
  input: { email: string; role: "admin" | "member" | "viewer" },
  actor: AuditActor & { userId: string },
  now = Date.now(),
) {
  const email = input.email.toLowerCase();
  return db.transaction((tx) => {
    const txDb = tx as unknown as PlatformDb;
    const existingUser = findUserByEmail(txDb, email);
    if (existingUser && !existingUser.passwordHash) throw passwordlessAccount(email);
    if (existingUser && roleIn(txDb, workspaceId, existingUser.id)) {
      throw new ApiError("ALREADY_MEMBER", `${email} is already a member of this organization`);
    }
    const pending = tx
      .select()
      .from(invitations)
      .where(and(eq(invitations.workspaceId, workspaceId), eq(invitations.email, email), eq(invitations.status, "pending")))
      .all()
      .find((invitation) => invitation.expiresAt > now);
    if (pending) throw new ApiError("INVITATION_PENDING", `${email} already has a pending invitation`);
    const row: InvitationRow = {
      id: newId("inv"),
      workspaceId,
      email,
      role: input.role,
      status: "pending",
      invitedBy: actor.userId,
      expiresAt: now + INVITATION_TTL_MS,
      createdAt: now,
      updatedAt: now,
    };
    tx.insert(invitations).values(row).run();
    recordAuditEvent(txDb, { workspaceId, action: "invitation.created", actor, target: email, now });
    return publicInvitation(row, now);
  });
}

export function previewInvitation(db: PlatformDb, invitationId: string, now = Date.now()): Static<typeof InvitationPreviewSchema> {
  const row = db
    .select({ invitation: invitations, organizationName: workspaces.name })
    .from(invitations)
    .innerJoin(workspaces, eq(workspaces.id, invitations.workspaceId))
    .where(eq(invitations.id, invitationId))
    .get();
  if (!row) throw new ApiError("INVITATION_NOT_FOUND", "Invitation not found");
  const { email, role, status, expiresAt } = publicInvitation(row.invitation, now);
  return { email, organizationName: row.organizationName, role, status, expiresAt };
}

function invitationInWorkspace(db: PlatformDb, workspaceId: string, invitationId: string) {
  const invitation = db
    .select()
    .from(invitations)
    .where(and(eq(invitations.id, invitationId), eq(invitations.workspaceId, workspaceId)))
    .get();
  if (!invitation) throw new ApiError("INVITATION_NOT_FOUND", "Invitation not found");
  return invitation;
}

export function cancelInvitation(db: PlatformDb, workspaceId: string, invitationId: string, actor: AuditActor, now = Date.now()) {
  const invitation = invitationInWorkspace(db, workspaceId, invitationId);
  if (invitation.status !== "pending") throw new ApiError("CONFLICT", `Invitation is already ${invitation.status}`);
  const canceled = db.transaction((tx) => {
    const row = tx.update(invitations).set({ status: "canceled", updatedAt: now }).where(eq(invitations.id, invitation.id)).returning().get();
    recordAuditEvent(tx as unknown as PlatformDb, { workspaceId, action: "invitation.canceled", actor, target: invitation.email, now });
    return row;
  });
  return publicInvitation(canceled, now);
}

/** The email of the existing account (with a password) an invitation would sign in, if any. */
export function invitedAccountEmail(db: PlatformDb, invitationId: string): string | null {
  const invitation = db.select({ email: invitations.email }).from(invitations).where(eq(invitations.id, invitationId)).get();
  const account = invitation ? findUserByEmail(db, invitation.email) : undefined;
  return account?.passwordHash ? account.email : null;
}

/**
 * Accepts an invitation with the invitee's password: it logs in the account that has the
 * invited email, or creates that account when there is none; it never sets the password of an
 * existing account. Returns the user to start a session for, and the workspace it joined.
 */
export async function acceptInvitation(
  db: PlatformDb,
  secrets: SecretBox,
  invitationId: string,
  /** `code`: the second factor of an existing account with two-factor sign-in. */
  { password, code }: { password: string; code?: string },
  clientAddress: string | null,
  now = Date.now(),
) {
  const invitation = db.select().from(invitations).where(eq(invitations.id, invitationId)).get();
  if (!invitation || invitation.status !== "pending") throw new ApiError("INVITATION_NOT_FOUND", "Invitation not found");
  if (now >= invitation.expiresAt) throw new ApiError("INVITATION_EXPIRED", "Invitation has expired; ask for a new one");
  const existing = findUserByEmail(db, invitation.email);
  if (existing && !existing.passwordHash) throw passwordlessAccount(existing.email);
  let secondFactor: SecondFactorProof | null = null;
  if (existing) {
    const passwordValid = await Bun.password.verify(password, existing.passwordHash!);
    const wrongPassword = new ApiError("INVALID_CREDENTIALS", "Wrong password for the invited account");
    secondFactor = assertSecondFactor(db, secrets, { userId: existing.id, passwordValid, code, wrongPassword }, now);
  }
  const newPasswordHash = existing ? null : await Bun.password.hash(password);
  return db.transaction((tx) => {
    const txDb = tx as unknown as PlatformDb;
    // Read again: while the password was hashed, another acceptance may have used this invitation
    // or created the invited account.
    const stillPending = tx
      .select({ id: invitations.id })
      .from(invitations)
      .where(and(eq(invitations.id, invitation.id), eq(invitations.status, "pending")))
      .get();
    if (!stillPending) throw new ApiError("INVITATION_NOT_FOUND", "Invitation not found");
    if (findUserByEmail(txDb, invitation.email)?.id !== existing?.id) {
      throw new ApiError("CONFLICT", "The invited account was created meanwhile; accept again with its password");
    }
    // Spent only by the acceptance that goes through: one refused above leaves the code unused.
    spendSecondFactor(txDb, secondFactor, clientAddress, now);
    const userId = existing?.id ?? createUser(txDb, invitation.email, newPasswordHash, now).id;
    if (!roleIn(txDb, invitation.workspaceId, userId)) addMember(txDb, invitation.workspaceId, userId, invitation.role, now);
    tx.update(invitations).set({ status: "accepted", updatedAt: now }).where(eq(invitations.id, invitation.id)).run();
    recordAuditEvent(txDb, {
      workspaceId: invitation.workspaceId,
      action: "invitation.accepted",
      actor: { type: "user", id: userId, clientAddress },
      target: invitation.email,
      now,
    });
    return { userId, email: existing?.email ?? invitation.email, workspaceId: invitation.workspaceId };
  });
}
