// POST /api/apps/:appId/builds/:buildId/rollback: an earlier build released again, as a new build
// entry (trigger `rollback`, `rollbackOf` the earlier build). While the earlier build's image is
// kept (./image-retention.ts) the entry has that image at once and stays `building` while the
// Deployer releases it, zero-downtime, without building: `succeeded` once it serves, `failed` when
// the release fails, `canceled` when a stop or delete preempts it. Once the image is gone a
// repository build's commit is built again, an image build's digest pulled again, and a ZIP build
// cannot come back (its source is not kept).
import { and, eq } from "drizzle-orm";
import { apps, builds } from "../db/schema";
import { ApiError } from "../http/errors";
import type { AppRecords } from "./app-records";
import type { AppRow, AppsContext, Deployer } from "./deployer";
import { markImageRemoved } from "./image-retention";

export type BuildRow = typeof builds.$inferSelect;

/** A rollback entry still releasing a kept image: the Builder has no part in it (a build gets its image when it succeeds). */
export function releasesKeptImage(build: BuildRow): boolean {
  return build.trigger === "rollback" && build.status === "building" && build.image !== null;
}

/** Builds commit `from.commitSha` (or pulls `from.imageDigest`) again as the build `newBuildId` (queued), then releases it. */
export type RebuildCommit = (app: AppRow, from: BuildRow, newBuildId: string) => void;

export class AppRollbacks {
  constructor(
    private readonly ctx: AppsContext,
    private readonly deployer: Deployer,
    private readonly records: AppRecords,
    /** The workspace's app, or NOT_FOUND (AppsService.get). */
    private readonly getApp: (workspaceId: string, appId: string) => AppRow,
    private readonly rebuildCommit: RebuildCommit,
  ) {}

  private buildOf(app: AppRow, buildId: string): BuildRow {
    const build = this.ctx.db.select().from(builds).where(and(eq(builds.id, buildId), eq(builds.appId, app.id))).get();
    if (!build) throw new ApiError("NOT_FOUND", "Build not found");
    return build;
  }

  /**
   * Answers the app and the new build entry. Rolling back to the build already serving is allowed:
   * like a restart, it starts a fresh container of that image.
   */
  async rollback(workspaceId: string, appId: string, buildId: string): Promise<{ app: AppRow; build: BuildRow }> {
    let app = this.getApp(workspaceId, appId);
    let from = this.buildOf(app, buildId);
    if (from.status !== "succeeded" || !from.image) {
      throw new ApiError("BUILD_NOT_RELEASABLE", `Build ${from.id} is ${from.status}: only a succeeded build can be released again`);
    }
    const onEngine = from.imageRemovedAt === null && (await this.ctx.machines.get(app.machineId).hasImage(from.image));
    // Read again after the await: a delete, housekeeping or the image retention may have come in between.
    app = this.getApp(workspaceId, appId);
    from = this.buildOf(app, buildId);
    if (onEngine && from.imageRemovedAt === null) return this.releaseKeptImage(app, from, from.image!);
    markImageRemoved(this.ctx, app.id, from.image!);
    if (!from.commitSha && !from.imageDigest) {
      const lost = app.runtime === "image" ? "the registry named no digest for it to pull again" : "a ZIP deploy's source is not kept";
      throw new ApiError("ROLLBACK_UNAVAILABLE", `The image of build ${from.id} was removed and ${lost}; deploy it again`);
    }
    return this.rebuild(app, from);
  }

  private releaseKeptImage(app: AppRow, from: BuildRow, image: string) {
    const now = Date.now();
    const buildId = this.records.newBuild(app.id, "rollback", {
      rollbackOf: from.id,
      image,
      imageDigest: from.imageDigest,
      commitSha: from.commitSha,
      commitMessage: from.commitMessage,
      status: "building",
      startedAt: now,
    });
    const log = (line: string) => this.ctx.buildLogs.append(app.id, buildId, line);
    log(`==> Rollback to build ${from.id}: releasing its kept image ${image}, no build`);
    // As a restart: behind work in progress it waits its turn, and the status stays that work's.
    if (!this.deployer.busy(app.id)) {
      this.ctx.db.update(apps).set({ status: "starting", statusReason: null, updatedAt: now }).where(eq(apps.id, app.id)).run();
    }
    this.deployer.schedule(app.id, async (signal) => {
      try {
        if (signal.aborted) log(`==> Not released: ${preemptReason(signal)}`);
        // Succeeded at the switch, not seconds later once the old container is retired.
        else await this.deployer.release(app.id, buildId, image, log, signal, () => this.recordRelease(app.id, buildId, signal));
      } finally {
        this.recordRelease(app.id, buildId, signal);
        this.ctx.buildLogs.finish(buildId);
      }
    });
    return this.answer(app.id, buildId);
  }

  /** The entry's outcome once its release has ended: whether the app serves it now decides. */
  private recordRelease(appId: string, buildId: string, signal: AbortSignal) {
    const app = this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
    const outcome: Partial<BuildRow> =
      app?.currentBuildId === buildId
        ? { status: "succeeded" }
        : signal.aborted
          ? { status: "canceled", error: `not released: ${preemptReason(signal)}` }
          : { status: "failed", error: app?.statusReason ?? "not released" };
    this.ctx.db
      .update(builds)
      .set({ ...outcome, finishedAt: Date.now() })
      .where(and(eq(builds.id, buildId), eq(builds.status, "building")))
      .run();
  }

  private rebuild(app: AppRow, from: BuildRow) {
    // An image app's build is pulled again by its digest (src/apps/images/pull.ts reads it from the entry).
    const buildId = this.records.newBuild(app.id, "rollback", { rollbackOf: from.id, commitSha: from.commitSha, commitMessage: from.commitMessage, imageDigest: from.imageDigest });
    const again = from.commitSha ? `commit ${from.commitSha} is built again` : `${from.imageDigest} is pulled again`;
    this.ctx.buildLogs.append(app.id, buildId, `==> Rollback to build ${from.id}: its image was removed, so ${again}`);
    this.rebuildCommit(app, from, buildId);
    return this.answer(app.id, buildId);
  }

  private answer(appId: string, buildId: string) {
    const app = this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get()!;
    const build = this.ctx.db.select().from(builds).where(eq(builds.id, buildId)).get()!;
    return { app, build };
  }
}

function preemptReason(signal: AbortSignal): string {
  return signal.reason instanceof Error ? signal.reason.message : "canceled";
}
