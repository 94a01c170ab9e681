// What housekeeping removes, as plain functions over the database and the data dir (so a test
// can run them on a temp dir): sessions past their expiry, and builds beyond the retention of
// each app with their log files (and images, through the caller). A build still queued or
// running, and the build an app runs (its current build), are always kept.
import { and, desc, eq, lt } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { apps, builds, sessions } from "../db/schema";
import { UNFINISHED_BUILD_STATUSES } from "../apps/model";

export type BuildRow = typeof builds.$inferSelect;

/** Never pruned: their work may still be going on. */
const UNFINISHED = new Set<string>(UNFINISHED_BUILD_STATUSES);

export function pruneExpiredSessions(db: PlatformDb, now: number): number {
  return db.delete(sessions).where(lt(sessions.expiresAt, now)).returning({ tokenHash: sessions.tokenHash }).all().length;
}

/**
 * Keeps each app's `keepPerApp` newest builds, its current build and any unfinished one; deletes
 * the other rows and their log files. Answers the deleted rows with their app's machine, for the
 * caller to remove their images.
 */
export function pruneOldBuilds(
  db: PlatformDb,
  keepPerApp: number,
  removeLog: (appId: string, buildId: string) => void,
): { build: BuildRow; machineId: string }[] {
  const pruned: { build: BuildRow; machineId: string }[] = [];
  for (const app of db.select({ id: apps.id, machineId: apps.machineId, currentBuildId: apps.currentBuildId }).from(apps).all()) {
    const history = db.select().from(builds).where(eq(builds.appId, app.id)).orderBy(desc(builds.startedAt)).all();
    const old = history.slice(keepPerApp).filter((build) => build.id !== app.currentBuildId && !UNFINISHED.has(build.status));
    for (const build of old) {
      db.delete(builds).where(and(eq(builds.id, build.id), eq(builds.appId, app.id))).run();
      removeLog(app.id, build.id);
      pruned.push({ build, machineId: app.machineId });
    }
  }
  return pruned;
}

/** Another build of the app still has the image: a rollback entry shares its source build's. */
export function imageStillReferenced(db: PlatformDb, appId: string, image: string): boolean {
  return db.select({ id: builds.id }).from(builds).where(and(eq(builds.appId, appId), eq(builds.image, image))).get() !== undefined;
}
