// Keeps the images rollbacks release again (PLATFORM_APP_IMAGES_KEPT): after a release switches,
// an app keeps the images of its newest few successful builds, the one it serves and those of
// builds still running; older ones are removed from the engine and their builds marked so
// (`imageKept: false`), which makes a rollback to them a rebuild, or impossible for a ZIP deploy.
import { and, eq, inArray, isNull } from "drizzle-orm";
import { apps, builds } from "../db/schema";
import { UNFINISHED_BUILD_STATUSES } from "./model";
import type { AppsContext } from "./deployer";

type BuildRow = typeof builds.$inferSelect;

const UNFINISHED = new Set<string>(UNFINISHED_BUILD_STATUSES);

/**
 * The images of `history` (one app's builds) to remove: all still on hand but the `kept` newest
 * distinct images of succeeded builds, the current build's and any unfinished build's. A rollback
 * entry shares its source build's image, so the image is kept as long as either needs it.
 */
export function imagesBeyondRetention(history: BuildRow[], currentBuildId: string | null, kept: number): string[] {
  const onHand = history.filter((build) => build.image !== null && build.imageRemovedAt === null);
  const keep = new Set<string>();
  for (const build of onHand) {
    if (build.id === currentBuildId || UNFINISHED.has(build.status)) keep.add(build.image!);
  }
  const newestFirst = onHand.filter((build) => build.status === "succeeded").sort((a, b) => b.startedAt - a.startedAt);
  const newest = new Set<string>();
  for (const build of newestFirst) {
    if (newest.size === kept) break;
    newest.add(build.image!);
  }
  const remove = new Set<string>();
  for (const build of onHand) if (!keep.has(build.image!) && !newest.has(build.image!)) remove.add(build.image!);
  return [...remove];
}

/**
 * Removes the app's images past its retention. Every build that had one is marked first, in the
 * same synchronous step as the choice, so a rollback reading the builds meanwhile never releases an
 * image on its way out. Never throws (the release that calls it has switched already): an image the
 * engine will not remove now is marked kept again and tried after the next release.
 */
export async function removeImagesBeyondRetention(ctx: Pick<AppsContext, "db" | "machines" | "config">, appId: string, log: (line: string) => void): Promise<void> {
  const app = ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
  if (!app) return;
  const history = ctx.db.select().from(builds).where(eq(builds.appId, appId)).all();
  const kept = ctx.config.appImagesKept;
  const removals = imagesBeyondRetention(history, app.currentBuildId, kept).map((image) => ({ image, marked: markImageRemoved(ctx, appId, image) }));
  for (const { image, marked } of removals) {
    try {
      await ctx.machines.get(app.machineId).removeImage(image);
    } catch (error) {
      console.error(`[apps] ${appId}: removing the older image ${image} failed: ${(error as Error).message}`);
      ctx.db.update(builds).set({ imageRemovedAt: null }).where(inArray(builds.id, marked)).run();
      continue;
    }
    log(`==> Removed the older image ${image}: the images of the newest ${kept} builds are kept for rollbacks (PLATFORM_APP_IMAGES_KEPT)`);
  }
}

/** Marks `image` gone for every build of the app that has it (removed here, or lost by the engine); answers the builds marked now. */
export function markImageRemoved(ctx: Pick<AppsContext, "db">, appId: string, image: string): string[] {
  return ctx.db
    .update(builds)
    .set({ imageRemovedAt: Date.now() })
    .where(and(eq(builds.appId, appId), eq(builds.image, image), isNull(builds.imageRemovedAt)))
    .returning({ id: builds.id })
    .all()
    .map((build) => build.id);
}
