// The permission matrix: the roles that may call each authenticated route, and the audit action a
// successful call records. The auth plugin (./auth.ts) checks every request against it right after
// authentication, before the body is validated; a route missing here is refused to every role
// (fail closed). Keys are Elysia's route patterns: "METHOD /api/path/:param".
//
// owner: everything. admin: everything but ownership (granting, taking or removing `owner`, and
// deleting the workspace). member: deploys and operates apps and databases, reads logs; no
// database deletion, no restore, no members, invitations, workspace keys or audit log. viewer:
// reads only, and sees env values and connection strings masked (`mayReadSecrets`).
// Everyone manages their own API keys: a key acts with its holder's role, so a viewer's is read-only.
import type { AuditAction } from "../audit/service";
import type { Role } from "../workspaces/service";
import { ApiError } from "./errors";

const EVERYONE: readonly Role[] = ["owner", "admin", "member", "viewer"];
const OPERATORS: readonly Role[] = ["owner", "admin", "member"];
const MANAGERS: readonly Role[] = ["owner", "admin"];
const OWNERS: readonly Role[] = ["owner"];

export interface RoutePermission {
  roles: readonly Role[];
  /** Recorded after a successful (2xx) answer, with the caller as actor and the app or database as target. */
  audit?: AuditAction;
  /** A session that its workspace asks to set up two-factor sign-in first may call it (src/auth/two-factor). */
  beforeTwoFactorSetup?: true;
}

export const PERMISSIONS: Record<string, RoutePermission> = {
  // Session and own API keys.
  "GET /api/auth/session": { roles: EVERYONE, beforeTwoFactorSetup: true },
  "POST /api/auth/logout": { roles: EVERYONE, beforeTwoFactorSetup: true },
  // The service checks that the caller belongs to the workspace chosen.
  "POST /api/auth/set-active-organization": { roles: EVERYONE, beforeTwoFactorSetup: true },
  // Two-factor sign-in of the caller's own account (dashboard sessions only).
  "GET /api/auth/two-factor": { roles: EVERYONE, beforeTwoFactorSetup: true },
  "POST /api/auth/two-factor/setup": { roles: EVERYONE, beforeTwoFactorSetup: true },
  "POST /api/auth/two-factor/enable": { roles: EVERYONE, beforeTwoFactorSetup: true },
  "POST /api/auth/two-factor/disable": { roles: EVERYONE, beforeTwoFactorSetup: true },
  // Whether the workspace's members must sign in with two factors.
  "PUT /api/organization/two-factor-requirement": { roles: OWNERS },
  // A caller only ever reaches their own keys here (others' are 404).
  "GET /api/api-keys/": { roles: EVERYONE },
  "POST /api/api-keys/": { roles: EVERYONE },
  "PUT /api/api-keys/:keyId": { roles: EVERYONE },
  "DELETE /api/api-keys/:keyId": { roles: EVERYONE },

  // The workspace: members, invitations, every key, the audit log.
  "GET /api/organization/members": { roles: EVERYONE },
  // Mixed: admins change and remove members, but only an owner grants, takes or removes `owner` (service).
  "PATCH /api/organization/members/:userId": { roles: MANAGERS },
  "DELETE /api/organization/members/:userId": { roles: MANAGERS },
  "GET /api/organization/invitations": { roles: MANAGERS },
  "POST /api/organization/invitations": { roles: MANAGERS },
  "DELETE /api/organization/invitations/:invitationId": { roles: MANAGERS },
  "GET /api/organization/api-keys": { roles: MANAGERS },
  "DELETE /api/organization/api-keys/:keyId": { roles: MANAGERS },
  "GET /api/organization/audit-log": { roles: MANAGERS },
  "GET /api/organization/usage": { roles: EVERYONE },
  "DELETE /api/organization/": { roles: OWNERS },

  // GitHub App installations: connecting one lets the workspace's apps read the repositories it grants.
  "GET /api/github-app/installations": { roles: EVERYONE },
  "POST /api/github-app/install-link": { roles: MANAGERS },
  "GET /api/github-app/setup": { roles: MANAGERS },

  // Machines and the platform's own status.
  "GET /api/platform/status": { roles: EVERYONE },
  "GET /api/machines/": { roles: EVERYONE },
  "GET /api/machines/:machineId": { roles: EVERYONE },

  // Apps. Members may delete apps: an app is redeployed from its ZIP, a database's data is gone for good.
  "GET /api/apps/": { roles: EVERYONE },
  "POST /api/apps/deploy": { roles: OPERATORS, audit: "app.deployed" },
  "POST /api/apps/deploy-from-repo": { roles: OPERATORS, audit: "app.deployed" },
  "POST /api/apps/deploy-image": { roles: OPERATORS, audit: "app.deployed" },
  "POST /api/apps/inspect-env": { roles: OPERATORS },
  "GET /api/apps/:appId": { roles: EVERYONE },
  "POST /api/apps/:appId/start": { roles: OPERATORS, audit: "app.started" },
  "POST /api/apps/:appId/stop": { roles: OPERATORS, audit: "app.stopped" },
  "POST /api/apps/:appId/restart": { roles: OPERATORS, audit: "app.restarted" },
  "DELETE /api/apps/:appId": { roles: OPERATORS, audit: "app.deleted" },
  "GET /api/apps/:appId/logs": { roles: EVERYONE },
  "GET /api/apps/:appId/traffic": { roles: EVERYONE },
  "GET /api/apps/:appId/health": { roles: EVERYONE },
  // Viewers get the names with the values masked.
  "GET /api/apps/:appId/env": { roles: EVERYONE },
  "PUT /api/apps/:appId/env": { roles: OPERATORS, audit: "app.env_changed" },
  "DELETE /api/apps/:appId/env/:name": { roles: OPERATORS, audit: "app.env_changed" },
  "PUT /api/apps/:appId/settings": { roles: OPERATORS, audit: "app.settings_changed" },
  "GET /api/apps/:appId/builds": { roles: EVERYONE },
  "GET /api/apps/:appId/builds/:buildId": { roles: EVERYONE },
  "GET /api/apps/:appId/builds/:buildId/log": { roles: EVERYONE },
  "POST /api/apps/:appId/builds/:buildId/cancel": { roles: OPERATORS, audit: "build.canceled" },
  "POST /api/apps/:appId/builds/:buildId/rollback": { roles: OPERATORS, audit: "app.rolled_back" },
  "POST /api/apps/:appId/redeploy": { roles: OPERATORS, audit: "app.redeployed" },
  // The deploy-hook URL deploys the app when anyone holding it POSTs to it: a secret, as env values are.
  "GET /api/apps/:appId/domains": { roles: EVERYONE },
  "POST /api/apps/:appId/domains": { roles: OPERATORS, audit: "app.domain_added" },
  "DELETE /api/apps/:appId/domains/:domainId": { roles: OPERATORS, audit: "app.domain_removed" },
  "GET /api/apps/:appId/domains/:domainId": { roles: EVERYONE },
  "POST /api/apps/:appId/domains/:domainId/verify": { roles: OPERATORS },
  "PUT /api/apps/:appId/domains/:domainId/certificate": { roles: OPERATORS, audit: "app.certificate_uploaded" },
  "DELETE /api/apps/:appId/domains/:domainId/certificate": { roles: OPERATORS, audit: "app.certificate_removed" },
  "GET /api/apps/:appId/deploy-hook": { roles: OPERATORS, audit: "app.deploy_hook_read" },
  "POST /api/apps/:appId/deploy-hook": { roles: OPERATORS, audit: "app.deploy_hook_rotated" },
  // The app's webhook secret signs pushes that deploy it: a secret, as the deploy-hook URL is.
  "GET /api/apps/:appId/webhook": { roles: OPERATORS, audit: "app.webhook_secret_read" },
  "POST /api/apps/:appId/webhook": { roles: OPERATORS, audit: "app.webhook_secret_rotated" },
  // App files. A source tree may hold secrets (an .env file): as for env values, viewers list names only.
  "GET /api/apps/:appId/fs/list": { roles: EVERYONE },
  "GET /api/apps/:appId/fs/history": { roles: EVERYONE },
  "GET /api/apps/:appId/history": { roles: EVERYONE },
  "GET /api/apps/:appId/fs/file": { roles: OPERATORS },
  "GET /api/apps/:appId/fs/archive": { roles: OPERATORS },
  "POST /api/apps/:appId/fs/file": { roles: OPERATORS, audit: "app.files_changed" },
  "PUT /api/apps/:appId/fs/file": { roles: OPERATORS, audit: "app.files_changed" },
  "POST /api/apps/:appId/fs/folder": { roles: OPERATORS, audit: "app.files_changed" },
  "POST /api/apps/:appId/fs/move": { roles: OPERATORS, audit: "app.files_changed" },
  "POST /api/apps/:appId/fs/delete": { roles: OPERATORS, audit: "app.files_changed" },
  "POST /api/apps/:appId/fs/bulk-rename/preview": { roles: OPERATORS },
  "POST /api/apps/:appId/fs/bulk-rename/apply": { roles: OPERATORS, audit: "app.files_changed" },

  // Registry credentials: everyone sees which hosts and users, nobody the passwords; those who deploy manage them.
  "GET /api/registries/": { roles: EVERYONE },
  "POST /api/registries/": { roles: OPERATORS, audit: "registry.added" },
  "POST /api/registries/:registryId/test": { roles: OPERATORS },
  "DELETE /api/registries/:registryId": { roles: OPERATORS, audit: "registry.deleted" },

  // Databases. Viewers get connection strings masked.
  // Volumes: reading is everyone's; attaching is an app change; deleting loses data, as a database delete does.
  "GET /api/volumes/": { roles: EVERYONE },
  "GET /api/volumes/:volumeId": { roles: EVERYONE },
  "POST /api/volumes/:volumeId/attach": { roles: OPERATORS, audit: "volume.attached" },
  "DELETE /api/volumes/:volumeId": { roles: MANAGERS, audit: "volume.deleted" },
  "GET /api/databases/": { roles: EVERYONE },
  "POST /api/databases/": { roles: OPERATORS, audit: "database.created" },
  "GET /api/databases/:databaseId": { roles: EVERYONE },
  "PATCH /api/databases/:databaseId/settings": { roles: OPERATORS, audit: "database.settings_changed" },
  "GET /api/databases/:databaseId/stats": { roles: EVERYONE },
  "GET /api/databases/:databaseId/logs": { roles: EVERYONE },
  "POST /api/databases/:databaseId/start": { roles: OPERATORS, audit: "database.started" },
  "POST /api/databases/:databaseId/stop": { roles: OPERATORS, audit: "database.stopped" },
  "DELETE /api/databases/:databaseId": { roles: MANAGERS, audit: "database.deleted" },
  "POST /api/databases/:databaseId/rotate-password": { roles: OPERATORS, audit: "database.password_rotated" },
  "GET /api/databases/:databaseId/operations": { roles: EVERYONE },
  "POST /api/databases/:databaseId/backups": { roles: OPERATORS, audit: "database.backup_started" },
  "GET /api/databases/:databaseId/backups": { roles: EVERYONE },
  "GET /api/databases/:databaseId/backups/:backupId": { roles: EVERYONE },
  "POST /api/databases/:databaseId/backups/upload": { roles: OPERATORS, audit: "database.backup_uploaded" },
  // Deleting a backup can lose the only copy of some data: as for deleting the database, owners and admins.
  "DELETE /api/databases/:databaseId/backups/:backupId": { roles: MANAGERS, audit: "database.backup_deleted" },
  // A backup holds the data and every secret in it: viewers, who do not read connection strings, do not download it.
  "GET /api/databases/:databaseId/backups/:backupId/download": { roles: OPERATORS },
  // A restore replaces all the data: as for deleting the database, owners and admins.
  "POST /api/databases/:databaseId/restore": { roles: MANAGERS, audit: "database.restored" },
  // A verify changes nothing (a throwaway copy is restored and counted): whoever may back up may verify.
  "POST /api/databases/:databaseId/backups/:backupId/verify": { roles: OPERATORS, audit: "database.backup_verified" },
  "GET /api/databases/:databaseId/backup-schedule": { roles: EVERYONE },
  // A schedule's retention deletes older scheduled backups: as for deleting a backup, owners and admins.
  "PUT /api/databases/:databaseId/backup-schedule": { roles: MANAGERS, audit: "database.backup_schedule_set" },
  "DELETE /api/databases/:databaseId/backup-schedule": { roles: MANAGERS, audit: "database.backup_schedule_cleared" },

  // Volume backups: the same rules as database backups.
  "POST /api/volumes/:volumeId/backups": { roles: OPERATORS, audit: "volume.backup_started" },
  "GET /api/volumes/:volumeId/backups": { roles: EVERYONE },
  "GET /api/volumes/:volumeId/backups/:backupId": { roles: EVERYONE },
  "DELETE /api/volumes/:volumeId/backups/:backupId": { roles: MANAGERS, audit: "volume.backup_deleted" },
  // A volume's files may hold secrets (keys, the app's database): viewers do not download them.
  "GET /api/volumes/:volumeId/backups/:backupId/download": { roles: OPERATORS },
  "POST /api/volumes/:volumeId/backups/:backupId/verify": { roles: OPERATORS, audit: "volume.backup_verified" },
  // A restore replaces all the volume's content: owners and admins.
  "POST /api/volumes/:volumeId/restore": { roles: MANAGERS, audit: "volume.restored" },
  "GET /api/volumes/:volumeId/restores": { roles: EVERYONE },
  "GET /api/volumes/:volumeId/restores/:restoreId": { roles: EVERYONE },
  "GET /api/volumes/:volumeId/backup-schedule": { roles: EVERYONE },
  "PUT /api/volumes/:volumeId/backup-schedule": { roles: MANAGERS, audit: "volume.backup_schedule_set" },
  "DELETE /api/volumes/:volumeId/backup-schedule": { roles: MANAGERS, audit: "volume.backup_schedule_cleared" },
};

/**
 * The routes `role` may call, in the OpenAPI document's form (`POST /api/apps/{appId}/stop`): what
 * GET /api/auth/session tells a client, so that it offers only what would not be refused.
 */
export function permittedRoutes(role: Role): string[] {
  return Object.keys(PERMISSIONS)
    .filter((key) => PERMISSIONS[key]!.roles.includes(role))
    .map((key) => key.replace(/:([A-Za-z]+)/g, "{$1}"));
}

/** Env var values and connection strings: every role but viewer reads them. */
export function mayReadSecrets(role: Role): boolean {
  return role !== "viewer";
}

const patterns = new Map<string, RegExp>();

/** The table's key for a request, from Elysia's route pattern or, failing that, by matching the path. */
export function routeKeyOf(method: string, route: string | undefined, pathname: string): string | undefined {
  const verb = method === "HEAD" ? "GET" : method;
  if (route && `${verb} ${route}` in PERMISSIONS) return `${verb} ${route}`;
  for (const key of Object.keys(PERMISSIONS)) {
    if (!key.startsWith(`${verb} `)) continue;
    let pattern = patterns.get(key);
    if (!pattern) {
      const path = key.slice(verb.length + 1).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      pattern = new RegExp(`^${path.replace(/:[A-Za-z]+/g, "[^/]+")}$`);
      patterns.set(key, pattern);
    }
    if (pattern.test(pathname)) return key;
  }
  return undefined;
}

/** The route's permission when `role` may call it; 403 `FORBIDDEN` naming the roles needed otherwise. */
export function assertPermitted(role: Role, routeKey: string | undefined): RoutePermission {
  const permission = routeKey === undefined ? undefined : PERMISSIONS[routeKey];
  if (!permission) throw new ApiError("FORBIDDEN", "This route has no entry in the permission matrix, so no role may call it");
  if (!permission.roles.includes(role)) {
    throw new ApiError("FORBIDDEN", `This needs the ${permission.roles.join(" or ")} role in the workspace; yours is ${role}`);
  }
  return permission;
}
