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

/** An owner made by `platform keys create` that nobody has claimed with a password yet, if there is one. */
export function passwordlessOwner(db: PlatformDb) {
  return db
    .select({ id: users.id, email: users.email })
    .from(users)
    .innerJoin(memberships, eq(memberships.userId, users.id))
    .where(and(eq(memberships.role, "owner"), isNull(users.passwordHash)))
    .get();
}

/** The user, when it is such an unclaimed owner. */
export function isPasswordlessOwner(db: PlatformDb, userId: string): boolean {
  return (
    db
      .select({ id: users.id })
      .from(users)
      .innerJoin(memberships, eq(memberships.userId, users.id))
      .where(and(eq(users.id, userId), eq(memberships.role, "owner"), isNull(users.passwordHash)))
      .get() !== undefined
  );
}

/** Works inside a transaction too, where drizzle's `tx` has no `$client`. */
export function hasAccountWithPassword(db: PlatformDb): boolean {
  return db.select({ id: users.id }).from(users).where(isNotNull(users.passwordHash)).limit(1).get() !== undefined;
}

/** `owner+<workspace-slug>@localhost`, with a number added when another workspace's slug took it. */
function placeholderEmail(db: PlatformDb, workspaceName: string): string {
  const slug = workspaceName.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") || "workspace";
  for (let suffix = 1; ; suffix++) {
    const email = `owner+${slug}${suffix === 1 ? "" : `-${suffix}`}@localhost`;
    if (!findUserByEmail(db, email)) return email;
  }
}

/**
 * The workspace and owner that `platform keys create --workspace NAME` works in: made on first use.
 * Each new workspace gets its own passwordless placeholder owner, so a key made for one workspace
 * never belongs to the owner of another; the dashboard's owner setup or `POST /api/auth/claim`
 * later claims a placeholder with one of its keys, so those keys belong to whoever logs in.
 */
export function ensureWorkspaceWithOwner(db: PlatformDb, name: string, now = Date.now()) {
  // Immediate: the CLI runs this beside a live server, and a read lock upgraded later fails at once.
  return db.transaction((tx) => {
    const txDb = tx as unknown as PlatformDb;
    const existing = findWorkspaceByName(txDb, name);
    const workspace = existing ?? createWorkspace(txDb, name, now);
    const owner = tx
      .select({ id: users.id })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(and(eq(memberships.workspaceId, workspace.id), eq(memberships.role, "owner")))
      .orderBy(memberships.createdAt)
      .get();
    if (owner) return { workspace, ownerId: owner.id };
    const ownerId = createUser(txDb, placeholderEmail(txDb, name), null, now).id;
    addMember(txDb, workspace.id, ownerId, "owner", now);
    return { workspace, ownerId };
  }, { behavior: "immediate" });
}
