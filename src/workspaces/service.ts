// Users, workspaces and who belongs where. A workspace is what the API calls an organization.
import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { memberships, users, workspaces } from "../db/schema";
import { newId } from "../crypto/tokens";
import { preparedStatement } from "../db/prepared";

export type Role = "owner" | "admin" | "member" | "viewer";

export function findWorkspaceByName(db: PlatformDb, name: string) {
  return db.select().from(workspaces).where(eq(workspaces.name, name)).get();
}

export function createWorkspace(db: PlatformDb, name: string, now = Date.now()) {
  const workspace = { id: newId("ws"), name, createdAt: now };
  db.insert(workspaces).values(workspace).run();
  return workspace;
}

export function createUser(db: PlatformDb, email: string, passwordHash: string | null, now = Date.now()) {
  const user = { id: newId("usr"), email: email.toLowerCase(), passwordHash, createdAt: now };
  db.insert(users).values(user).run();
  return user;
}

export function findUserByEmail(db: PlatformDb, email: string) {
  return db.select().from(users).where(eq(users.email, email.toLowerCase())).get();
}

export function findUserById(db: PlatformDb, id: string) {
  return db.select().from(users).where(eq(users.id, id)).get();
}

export function addMember(db: PlatformDb, workspaceId: string, userId: string, role: Role, now = Date.now()) {
  db.insert(memberships).values({ workspaceId, userId, role, createdAt: now }).run();
}

const membershipRole = preparedStatement((db) =>
  db
    .select({ role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.workspaceId, sql.placeholder("workspaceId")), eq(memberships.userId, sql.placeholder("userId"))))
    .prepare(),
);

export function roleIn(db: PlatformDb, workspaceId: string, userId: string): Role | undefined {
  return membershipRole(db).get({ workspaceId, userId })?.role;
}

export function workspacesOf(db: PlatformDb, userId: string) {
  return db
    .select({ id: workspaces.id, name: workspaces.name, role: memberships.role, createdAt: workspaces.createdAt })
    .from(memberships)
    .innerJoin(workspaces, eq(workspaces.id, memberships.workspaceId))
    .where(eq(memberships.userId, userId))
    .orderBy(memberships.createdAt)
    .all();
}

export function membersOf(db: PlatformDb, workspaceId: string) {
  return db
    .select({ userId: users.id, email: users.email, role: memberships.role, joinedAt: memberships.createdAt })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(eq(memberships.workspaceId, workspaceId))
    .all();
}

/** The owner made by `platform keys create` before anyone set a password, if there is one. */
export function passwordlessOwner(db: PlatformDb) {
  return db
    .select({ id: users.id, email: users.email })
    .from(users)
    .innerJoin(memberships, eq(memberships.userId, users.id))
    .where(and(eq(memberships.role, "owner"), isNull(users.passwordHash)))
    .get();
}

/** Works inside a transaction too, where drizzle's `tx` has no `$client`. */
export function hasAccountWithPassword(db: PlatformDb): boolean {
  return db.select({ id: users.id }).from(users).where(isNotNull(users.passwordHash)).limit(1).get() !== undefined;
}

/**
 * The workspace and owner that `platform keys create --workspace NAME` works in: made on first use.
 * On an empty instance the owner is a placeholder account that the dashboard's first-visit setup
 * claims, so the keys made from the command line belong to the person who later logs in.
 */
export function ensureWorkspaceWithOwner(db: PlatformDb, name: string, now = Date.now()) {
  return db.transaction(() => {
    const existing = findWorkspaceByName(db, name);
    const workspace = existing ?? createWorkspace(db, name, now);
    const owner = db
      .select({ id: users.id })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(and(eq(memberships.workspaceId, workspace.id), eq(memberships.role, "owner")))
      .get();
    if (owner) return { workspace, ownerId: owner.id };
    const anyOwner = db.select({ userId: memberships.userId }).from(memberships).where(eq(memberships.role, "owner")).get();
    const ownerId = anyOwner?.userId ?? createUser(db, "owner@localhost", null, now).id;
    addMember(db, workspace.id, ownerId, "owner", now);
    return { workspace, ownerId };
  });
}
