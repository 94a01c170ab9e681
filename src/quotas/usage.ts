// Per-workspace quotas, what is in use: counts and sums read from SQLite (cheap, so read inside
// the synchronous check-then-write step of a create), and the bytes on the platform's disk, which
// are measured asynchronously (an await-ing walk, never a synchronous one on the server thread).
import { and, eq, isNotNull, ne, sql } from "drizzle-orm";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { PlatformDb } from "../db";
import { apps, databases } from "../db/schema";

export interface WorkspaceUsage {
  apps: number;
  databases: number;
  /** Sum of the memoryMB of the workspace's apps and databases, stopped ones too: what they may take when started. */
  memoryMB: number;
  /** Databases holding a host port. */
  dbPorts: number;
}

/** Apps and databases being deleted are not counted: their removal is under way, and a DELETE answers before it ends. */
export function workspaceUsage(db: PlatformDb, workspaceId: string): WorkspaceUsage {
  const appTotals = db
    .select({ count: sql<number>`count(*)`, memoryMB: sql<number>`coalesce(sum(${apps.memoryMB}), 0)` })
    .from(apps)
    .where(and(eq(apps.workspaceId, workspaceId), ne(apps.status, "deleting")))
    .get();
  const databaseTotals = db
    .select({ count: sql<number>`count(*)`, memoryMB: sql<number>`coalesce(sum(${databases.memoryMB}), 0)` })
    .from(databases)
    .where(and(eq(databases.workspaceId, workspaceId), ne(databases.status, "deleting")))
    .get();
  const withPort = db
    .select({ count: sql<number>`count(*)` })
    .from(databases)
    .where(and(eq(databases.workspaceId, workspaceId), ne(databases.status, "deleting"), isNotNull(databases.hostPort)))
    .get();
  return {
    apps: appTotals?.count ?? 0,
    databases: databaseTotals?.count ?? 0,
    memoryMB: (appTotals?.memoryMB ?? 0) + (databaseTotals?.memoryMB ?? 0),
    dbPorts: withPort?.count ?? 0,
  };
}

/** Bytes a workspace keeps on the platform's disk, for one kind of thing (app sources, backups...). */
export type DiskUsageSource = (workspaceId: string, options: { exceptAppId?: string }) => Promise<number>;

/**
 * The disk quota's accounting: every kind of stored thing registers how to measure a workspace's
 * share. App sources register themselves (src/apps); backups plug in the same way when they exist.
 */
export class WorkspaceDisk {
  private readonly sources = new Map<string, DiskUsageSource>();
  /** Bytes of uploads checked against the quota and not yet recorded by their source, per workspace. */
  private readonly reserved = new Map<string, number>();

  register(kind: string, source: DiskUsageSource): void {
    this.sources.set(kind, source);
  }

  async bytesUsed(workspaceId: string, options: { exceptAppId?: string } = {}): Promise<number> {
    const sizes = await Promise.all([...this.sources.values()].map((source) => source(workspaceId, options)));
    return sizes.reduce((sum, size) => sum + size, this.reserved.get(workspaceId) ?? 0);
  }

  /**
   * Counts `bytes` as used from now until the returned function is called (once the source
   * records them): two uploads checked at the same time each see the other.
   */
  reserve(workspaceId: string, bytes: number): () => void {
    this.reserved.set(workspaceId, (this.reserved.get(workspaceId) ?? 0) + bytes);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.reserved.get(workspaceId) ?? 0) - bytes;
      if (left > 0) this.reserved.set(workspaceId, left);
      else this.reserved.delete(workspaceId);
    };
  }
}

/** Bytes of the regular files under `dir` (0 when it does not exist); symlinks are not followed. */
export async function treeBytes(dir: string): Promise<number> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  let total = 0;
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await treeBytes(path);
    else if (entry.isFile()) total += await lstat(path).then((stat) => stat.size, () => 0);
  }
  return total;
}
