// Members of a workspace and what owners and admins do to them: change a role, remove a member
// (with their keys, at once), see and revoke every key that acts in the workspace, and delete an
// empty workspace. Ownership is the owners' alone, and a workspace always keeps one owner.
import { and, count, eq, or, sql } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { apiKeys, apps, databases, memberships, sessions, users, volumes, workspaces } from "../db/schema";
import { ApiError } from "../http/errors";
import { recordAuditEvent, type AuditActor } from "../audit/service";
import { publicKey } from "../api-keys/service";
import type { Role } from "../workspaces/service";
import type { Static } from "@sinclair/typebox";
import type { DeletedOrganizationSchema, MemberSchema, RemovedMemberSchema, WorkspaceApiKeySchema } from "./model";

type Member = Static<typeof MemberSchema>;

/** A member as the API shows one. */
export function publicMember(member: { userId: string; email: string; role: Role; joinedAt: number }): Member {
  return { userId: member.userId, email: member.email, role: member.role, joinedAt: new Date(member.joinedAt).toISOString() };
}

function memberOf(db: PlatformDb, workspaceId: string, userId: string): Member {
  const member = db
    .select({ userId: users.id, email: users.email, role: memberships.role, joinedAt: memberships.createdAt })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.userId, userId)))
    .get();
  if (!member) throw new ApiError("MEMBER_NOT_FOUND", "Member not found");
  return publicMember(member);
}

function ownerCount(db: PlatformDb, workspaceId: string): number {
  return db
    .select({ count: count() })
    .from(memberships)
    .where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.role, "owner")))
    .get()!.count;
}

function assertMayTouchOwnership(callerRole: Role, from: Role, to: Role | null) {
  if ((from === "owner" || to === "owner") && callerRole !== "owner") {
    throw new ApiError("FORBIDDEN", "Only an owner may grant, take or remove the owner role");
  }
}

export function changeMemberRole(
  db: PlatformDb,
  workspaceId: string,
  callerRole: Role,
  userId: string,
  role: Role,
  actor: AuditActor,
  now = Date.now(),
): Member {
  return db.transaction((tx) => {
    const txDb = tx as unknown as PlatformDb;
    const member = memberOf(txDb, workspaceId, userId);
    assertMayTouchOwnership(callerRole, member.role, role);
    if (member.role === "owner" && role !== "owner" && ownerCount(txDb, workspaceId) === 1) {
      throw new ApiError("LAST_OWNER", "The workspace's last owner cannot be demoted: make another member owner first");
    }
    tx.update(memberships).set({ role }).where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.userId, userId))).run();
    recordAuditEvent(txDb, { workspaceId, action: "member.role_changed", actor, target: `${member.email}: ${member.role} -> ${role}`, now });
    return { ...member, role };
  });
}

/** Removes the membership and, in the same transaction, the member's keys made in the workspace. */
export function removeMember(
  db: PlatformDb,
  workspaceId: string,
  callerRole: Role,
  userId: string,
  actor: AuditActor,
  now = Date.now(),
): Static<typeof RemovedMemberSchema> {
  return db.transaction((tx) => {
    const txDb = tx as unknown as PlatformDb;
    const member = memberOf(txDb, workspaceId, userId);
    assertMayTouchOwnership(callerRole, member.role, null);
    if (member.role === "owner" && ownerCount(txDb, workspaceId) === 1) {
      throw new ApiError("LAST_OWNER", "The workspace's last owner cannot be removed: make another member owner first");
    }
    tx.delete(memberships).where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.userId, userId))).run();
    // Keys made elsewhere that list this workspace stop acting here too: authentication asks for the membership.
    const revokedKeys = tx
      .delete(apiKeys)
      .where(and(eq(apiKeys.workspaceId, workspaceId), eq(apiKeys.userId, userId)))
      .returning({ id: apiKeys.id })
      .all().length;
    tx.update(sessions)
      .set({ activeWorkspaceId: null })
      .where(and(eq(sessions.userId, userId), eq(sessions.activeWorkspaceId, workspaceId)))
      .run();
    recordAuditEvent(txDb, { workspaceId, action: "member.removed", actor, target: `${member.email} (${revokedKeys} keys revoked)`, now });
    return { ...member, revokedKeys };
  });
}

const actsIn = (workspaceId: string) =>
  or(
    eq(apiKeys.workspaceId, workspaceId),
    sql`exists (select 1 from json_each(${apiKeys.otherWorkspaceIds}) where json_each.value = ${workspaceId})`,
  );

/** Every key that may act in the workspace: those made in it and those made elsewhere for it. */
export function listWorkspaceKeys(db: PlatformDb, workspaceId: string): Static<typeof WorkspaceApiKeySchema>[] {
  return db
    .select({ key: apiKeys, email: users.email })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(actsIn(workspaceId))
    .orderBy(apiKeys.createdAt)
    .all()
    .map(({ key, email }) => ({ ...publicKey(key), userId: key.userId, email }));
}

/**
 * Revokes a key's power in the workspace: a key made in it is deleted (401 from then on); a key
 * made in another workspace only loses this one from its list, and keeps working where it was made.
 */
export function revokeWorkspaceKey(
  db: PlatformDb,
  workspaceId: string,
  keyId: string,
  actor: AuditActor,
  now = Date.now(),
): Static<typeof WorkspaceApiKeySchema> {
  const { key: revoked, email } = db.transaction((tx) => {
    const found = tx
      .select({ key: apiKeys, email: users.email })
      .from(apiKeys)
      .innerJoin(users, eq(users.id, apiKeys.userId))
      .where(and(eq(apiKeys.id, keyId), actsIn(workspaceId)))
      .get();
    if (!found) throw new ApiError("API_KEY_NOT_FOUND", "API key not found");
    const { key } = found;
    if (key.workspaceId === workspaceId) {
      tx.delete(apiKeys).where(eq(apiKeys.id, key.id)).run();
    } else {
      const otherWorkspaceIds = (key.otherWorkspaceIds ?? []).filter((id) => id !== workspaceId);
      tx.update(apiKeys).set({ otherWorkspaceIds, updatedAt: now }).where(eq(apiKeys.id, key.id)).run();
    }
    recordAuditEvent(tx as unknown as PlatformDb, { workspaceId, action: "api_key.revoked", actor, target: `${key.name} (${key.id})`, now });
    return found;
  });
  console.log(`[security] API key ${revoked.id} (${revoked.name}) revoked in workspace ${workspaceId}`);
  return { ...publicKey(revoked), userId: revoked.userId, email };
}

/** Deletes a workspace with everything it holds in the database; refused while apps, databases or volumes (their data) remain. */
export function deleteWorkspace(db: PlatformDb, workspaceId: string): Static<typeof DeletedOrganizationSchema> {
  return db.transaction((tx) => {
    const appCount = tx.select({ count: count() }).from(apps).where(eq(apps.workspaceId, workspaceId)).get()!.count;
    const databaseCount = tx.select({ count: count() }).from(databases).where(eq(databases.workspaceId, workspaceId)).get()!.count;
    if (appCount + databaseCount > 0) {
      throw new ApiError(
        "WORKSPACE_NOT_EMPTY",
        `The workspace still has ${appCount} apps and ${databaseCount} databases: delete them first`,
      );
    }
    // Detached volumes hold data nobody chose to delete: the rows would go, the engine's volumes stay unnamed.
    const volumeCount = tx.select({ count: count() }).from(volumes).where(eq(volumes.workspaceId, workspaceId)).get()!.count;
    if (volumeCount > 0) throw new ApiError("WORKSPACE_NOT_EMPTY", `The workspace still has ${volumeCount} volumes: delete them first (DELETE /api/volumes/{id})`);
    const workspace = tx.delete(workspaces).where(eq(workspaces.id, workspaceId)).returning().get();
    if (!workspace) throw new ApiError("WORKSPACE_NOT_FOUND", "Workspace not found");
    console.log(`[security] workspace ${workspace.id} (${workspace.name}) deleted`);
    return { id: workspace.id, name: workspace.name };
  });
}
