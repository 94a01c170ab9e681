// Housekeeping on a croner schedule (PLATFORM_HOUSEKEEPING_SCHEDULE): prunes expired sessions
// and the builds past PLATFORM_BUILD_RETENTION per app, with their log files and images (unless a
// remaining build, such as a rollback entry, still has the image), so the database, the data dir
// and the engine's disk do not grow with every deploy and login; and measures volume sizes again.
import { Cron } from "croner";
import type { PlatformDb } from "../db";
import type { Machines } from "../machines/service";
import { imageStillReferenced, pruneExpiredSessions, pruneOldBuilds } from "./prune";

export interface HousekeepingContext {
  db: PlatformDb;
  machines: Machines;
  buildRetention: number;
  /** Deletes a pruned build's log file. */
  removeBuildLog: (appId: string, buildId: string) => void;
  /** Measures the volumes again once their last measure is stale (src/volumes/sizes.ts). */
  refreshVolumeSizes?: () => Promise<void>;
  now?: () => number;
}

export interface HousekeepingReport {
  sessions: number;
  builds: number;
  images: number;
}

export async function runHousekeeping(ctx: HousekeepingContext): Promise<HousekeepingReport> {
  const sessions = pruneExpiredSessions(ctx.db, (ctx.now ?? Date.now)());
  const pruned = pruneOldBuilds(ctx.db, ctx.buildRetention, ctx.removeBuildLog);
  let images = 0;
  for (const { build, machineId } of pruned) {
    if (!build.image || build.imageRemovedAt !== null || imageStillReferenced(ctx.db, build.appId, build.image)) continue;
    // Only platform-labelled images are ever removed, and the engine refuses one a running container uses.
    const removed = await ctx.machines.get(machineId).removeImage(build.image).catch(() => false);
    if (removed) images++;
  }
  // Sizes are read from their records by the usage route, uploads and backups: kept fresh even when no one lists volumes.
  await ctx.refreshVolumeSizes?.();
  return { sessions, builds: pruned.length, images };
}

/** Runs on the schedule; overlapping runs are skipped. Answers the job, to stop it at shutdown. */
export function startHousekeeping(ctx: HousekeepingContext, schedule: string): Cron {
  return new Cron(schedule, { protect: true }, async () => {
    try {
      const report = await runHousekeeping(ctx);
      if (report.sessions + report.builds > 0) console.log(`[housekeeping] pruned ${report.sessions} sessions, ${report.builds} builds, ${report.images} images`);
    } catch (error) {
      console.error("[housekeeping]", error);
    }
  });
}
