// Per-workspace quotas, what is in use: counts and sums read from SQLite (cheap, so read inside
// the synchronous check-then-write step of a create), and the bytes on the platform's disk, which
// are measured asynchronously (an await-ing walk, never a synchronous one on the server thread).
import { and, eq, isNotNull, ne, sql } from "drizzle-orm";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { PlatformDb } from "../db";
import { apps, databases } from "../db/schema";
import { ApiError } from "../http/errors";
import { assertWithinQuota, bytesToMB, quotaRefusal } from "./limits";

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

/**
 * What one entry of a tree costs on disk at least (a block, and an inode): an empty file or a
 * folder is counted this much, so that thousands of them (a folder bomb) are not free.
 */
export const MIN_ENTRY_BYTES = 4096;

/** What a file of `size` bytes (or any other entry, with 0) is counted on disk. */
export function entryCharge(size = 0): number {
  return Math.max(size, MIN_ENTRY_BYTES);
}

/** The kinds of things a workspace keeps on the platform's disk. */
export type DiskKind = "appSources" | "buildLogs" | "backups" | "volumes";

/** Bytes a workspace keeps on the platform's disk, for one kind of thing. */
export type DiskUsageSource = (workspaceId: string, options: { exceptAppId?: string }) => Promise<number>;

/** A write of unknown size under way, counted against the disk quota as it goes (WorkspaceDisk.openWrite). */
export interface DiskWrite {
  /** Counts `bytes` more as written; throws 409 QUOTA_EXCEEDED once they would pass the quota. */
  add(bytes: number): void;
  /** The refusal `add` threw, if it did: the reason the write stopped, whatever else failed with it. */
  readonly refusal: ApiError | null;
  /** The bytes are recorded by their source now, or the write was given up. */
  release(): void;
}

/**
 * The disk quota's accounting: every kind of stored thing registers how to measure a workspace's
 * share (app sources and build logs in src/apps, backups in src/databases and src/volumes). A kind
 * may have several sources, named apart, whose shares add up.
 */
export class WorkspaceDisk {
  private readonly sources = new Map<string, { kind: DiskKind; source: DiskUsageSource }>();
  /** Bytes of uploads checked against the quota and not yet recorded by their source, per workspace. */
  private readonly reserved = new Map<string, number>();

  /** Registers (or replaces) the source named `name`, which counts for `kind`. */
  register(kind: DiskKind, source: DiskUsageSource, name: string = kind): void {
    this.sources.set(name, { kind, source });
  }

  async bytesUsed(workspaceId: string, options: { exceptAppId?: string } = {}): Promise<number> {
    const sizes = await Promise.all([...this.sources.values()].map(({ source }) => source(workspaceId, options)));
    return sizes.reduce((sum, size) => sum + size, this.reserved.get(workspaceId) ?? 0);
  }

  /** Bytes used by each kind (0 for one not registered), and those reserved by writes under way. */
  async bytesByKind(workspaceId: string): Promise<Record<DiskKind | "inProgress", number>> {
    const measure = async (kind: DiskKind) => {
      const sizes = await Promise.all([...this.sources.values()].filter((entry) => entry.kind === kind).map(({ source }) => source(workspaceId, {})));
      return sizes.reduce((sum, size) => sum + size, 0);
    };
    const [appSources, buildLogs, backups, volumes] = await Promise.all([measure("appSources"), measure("buildLogs"), measure("backups"), measure("volumes")]);
    return { appSources, buildLogs, backups, volumes, inProgress: this.reserved.get(workspaceId) ?? 0 };
  }

  /**
   * Counts `bytes` as used from now until the returned function is called (once the source
   * records them): two uploads checked at the same time each see the other.
   */
  reserve(workspaceId: string, bytes: number): () => void {
    this.adjust(workspaceId, bytes);
    let released = false;
    return () => {
      if (!released) this.adjust(workspaceId, -bytes);
      released = true;
    };
  }

  /**
   * Room for a write whose size is known only as it is written (a backup's file): 409
   * QUOTA_EXCEEDED at once when the workspace has no room left for one entry; then `add` counts
   * each written chunk as reserved and throws the same refusal once the workspace would pass
   * `limitMB`. `release` once the source records the bytes, or the write is given up.
   */
  async openWrite(workspaceId: string, limitMB: number): Promise<DiskWrite> {
    let written = 0;
    let reserved = MIN_ENTRY_BYTES;
    this.adjust(workspaceId, reserved);
    let open = true;
    const release = () => {
      if (open) this.adjust(workspaceId, -reserved);
      open = false;
    };
    try {
      const used = await this.bytesUsed(workspaceId);
      assertWithinQuota("diskMB", bytesToMB(used - reserved), bytesToMB(reserved), limitMB);
      // What the sources had recorded when the write began; reservations (this write's, and others') are read live.
      const recorded = used - (this.reserved.get(workspaceId) ?? 0);
      const write: DiskWrite = {
        refusal: null,
        add: (bytes) => {
          written += bytes;
          const growth = entryCharge(written) - reserved;
          if (!open || growth <= 0) return;
          this.adjust(workspaceId, growth);
          reserved += growth;
          const total = recorded + (this.reserved.get(workspaceId) ?? 0);
          const refusal = quotaRefusal("diskMB", bytesToMB(total - growth), bytesToMB(growth), limitMB);
          if (!refusal) return;
          (write as { refusal: ApiError }).refusal = new ApiError("QUOTA_EXCEEDED", refusal);
          throw write.refusal;
        },
        release,
      };
      return write;
    } catch (error) {
      release();
      throw error;
    }
  }

  private adjust(workspaceId: string, bytes: number) {
    const total = (this.reserved.get(workspaceId) ?? 0) + bytes;
    if (total > 0) this.reserved.set(workspaceId, total);
    else this.reserved.delete(workspaceId);
  }
}

/**
 * What the tree under `dir` is counted on disk (0 when it does not exist): every entry in it
 * (file, folder, link) its size but at least MIN_ENTRY_BYTES. Links are not followed.
 */
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
    if (entry.isDirectory()) total += entryCharge() + (await treeBytes(path));
    else if (entry.isFile()) total += entryCharge(await lstat(path).then((stat) => stat.size, () => 0));
    else total += entryCharge();
  }
  return total;
}
