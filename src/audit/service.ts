// The per-workspace audit log: security events and the actions on apps and databases, who did
// what, when, from where.
import { and, desc, eq, lt } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { auditEvents } from "../db/schema";
import { newId } from "../crypto/tokens";
import type { Static } from "@sinclair/typebox";
import type { AuditEntrySchema } from "../organization/model";

/** Every action the log records. */
export const AUDIT_ACTIONS = [
  "api_key.created",
  "api_key.updated",
  "api_key.revoked",
  "auth.login",
  "auth.login_failed",
  "auth.owner_created",
  "auth.owner_claimed",
  "auth.two_factor_enabled",
  "auth.two_factor_disabled",
  "auth.recovery_code_used",
  "auth.two_factor_requirement_changed",
  "invitation.created",
  "invitation.canceled",
  "invitation.accepted",
  "member.role_changed",
  "member.removed",
  "github_app.installation_bound",
  "app.deployed",
  "app.started",
  "app.stopped",
  "app.restarted",
  "app.deleted",
  "app.env_changed",
  "app.settings_changed",
  "app.redeployed",
  "app.files_changed",
  "app.files_downloaded",
  "app.rolled_back",
  "app.deploy_hook_read",
  "app.deploy_hook_rotated",
  "app.deployed_by_hook",
  "app.deployed_by_push",
  "app.webhook_secret_read",
  "app.webhook_secret_rotated",
  "app.domain_added",
  "app.domain_removed",
  "app.certificate_uploaded",
  "app.certificate_removed",
  "registry.added",
  "registry.deleted",
  "database.created",
  "database.started",
  "database.stopped",
  "database.deleted",
  "database.settings_changed",
  "database.password_rotated",
  "database.backup_started",
  "database.restored",
  "database.backup_schedule_set",
  "database.backup_schedule_cleared",
  "database.backup_uploaded",
  "database.backup_deleted",
  "database.backup_verified",
  "database.backup_downloaded",
  "volume.backup_started",
  "volume.backup_deleted",
  "volume.backup_verified",
  "volume.backup_downloaded",
  "volume.restored",
  "volume.backup_schedule_set",
  "volume.backup_schedule_cleared",
  "volume.attached",
  "volume.deleted",
  "build.canceled",
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditActor {
  type: "user" | "api_key" | "cli" | "anonymous";
  id: string | null;
  clientAddress?: string | null;
}

export function recordAuditEvent(
  db: PlatformDb,
  event: { workspaceId: string; action: AuditAction; actor: AuditActor; target?: string | null; now?: number },
): void {
  db.insert(auditEvents)
    .values({
      id: newId("evt"),
      workspaceId: event.workspaceId,
      action: event.action,
      actorType: event.actor.type,
      actorId: event.actor.id,
      target: event.target ?? null,
      clientAddress: event.actor.clientAddress ?? null,
      createdAt: event.now ?? Date.now(),
    })
    .run();
}

export function listAuditEvents(db: PlatformDb, workspaceId: string, options: { limit: number; before?: number }): Static<typeof AuditEntrySchema>[] {
  const where = options.before
    ? and(eq(auditEvents.workspaceId, workspaceId), lt(auditEvents.createdAt, options.before))
    : eq(auditEvents.workspaceId, workspaceId);
  return db
    .select()
    .from(auditEvents)
    .where(where)
    .orderBy(desc(auditEvents.createdAt))
    .limit(options.limit)
    .all()
    .map((event) => ({
      id: event.id,
      // Written only by recordAuditEvent, with an AuditAction.
      action: event.action as AuditAction,
      actor: { type: event.actorType, id: event.actorId },
      target: event.target,
      clientAddress: event.clientAddress,
      createdAt: new Date(event.createdAt).toISOString(),
    }));
}
