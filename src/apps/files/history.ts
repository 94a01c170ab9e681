// The history of an app's source tree: every change made through the file system API (who, when,
// which paths), listed beside the app's builds. A bulk rename keeps its first paths and the count.
import { and, desc, eq, lt } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import type { PlatformDb } from "../../db";
import { appFileChanges } from "../../db/schema";
import { newId } from "../../crypto/tokens";
import type { FileChangeSchema, FileChangeAction } from "./model";

/** Paths kept per change: a bulk rename of thousands of names keeps the first ones and says how many. */
export const KEPT_PATHS = 100;

export interface ChangeActor {
  type: string;
  id: string | null;
}

export type FileChange = Static<typeof FileChangeSchema>;

export class FileHistory {
  constructor(private readonly db: PlatformDb) {}

  record(appId: string, action: FileChangeAction, paths: string[], actor: ChangeActor) {
    this.db
      .insert(appFileChanges)
      .values({
        id: newId("fc"),
        appId,
        action,
        paths: JSON.stringify(paths.slice(0, KEPT_PATHS)),
        pathCount: paths.length,
        actorType: actor.type,
        actorId: actor.id,
        createdAt: Date.now(),
      })
      .run();
  }

  /** Newest first; `before` (a change's createdAt, in ms) pages back. */
  list(appId: string, limit: number, before?: number): FileChange[] {
    return this.db
      .select()
      .from(appFileChanges)
      .where(before === undefined ? eq(appFileChanges.appId, appId) : and(eq(appFileChanges.appId, appId), lt(appFileChanges.createdAt, before)))
      .orderBy(desc(appFileChanges.createdAt), desc(appFileChanges.id))
      .limit(limit)
      .all()
      .map((row) => ({
        id: row.id,
        action: row.action as FileChangeAction,
        paths: JSON.parse(row.paths) as string[],
        pathCount: row.pathCount,
        actor: { type: row.actorType, id: row.actorId },
        createdAt: new Date(row.createdAt).toISOString(),
      }));
  }
}
