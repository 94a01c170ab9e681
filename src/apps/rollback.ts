// POST /api/apps/:appId/builds/:buildId/rollback: an earlier build released again, as a new build
// entry (trigger `rollback`, `rollbackOf` the earlier build). While the earlier build's image is
// kept (./image-retention.ts) the entry is `succeeded` at once with that image and the Deployer
// releases it, zero-downtime, without building; once the image is gone a repository build's commit
// is built again, and a ZIP build cannot come back (its source is not kept).
import { and, eq } from "drizzle-orm";
import { apps, builds } from "../db/schema";
import { ApiError } from "../http/errors";
import type { AppRecords } from "./app-records";
import type { AppRow, AppsContext, Deployer } from "./deployer";
import { markImageRemoved } from "./image-retention";

export type BuildRow = typeof builds.$inferSelect;

/** Builds commit `from.commitSha` again as the build `newBuildId` (queued), then releases it. */
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
    if (!from.commitSha) {
      throw new ApiError("ROLLBACK_UNAVAILABLE", `The image of build ${from.id} was removed and a ZIP deploy's source is not kept; deploy it again`);
    }
    return this.rebuild(app, from);
  }

  private releaseKeptImage(app: AppRow, from: BuildRow, image: string) {
    const now = Date.now();
    const buildId = this.records.newBuild(app.id, "rollback", {
      rollbackOf: from.id,
      image,
      commitSha: from.commitSha,
      commitMessage: from.commitMessage,
      status: "succeeded",
      startedAt: now,
      finishedAt: now,
    });
    const log = (line: string) => this.ctx.buildLogs.append(app.id, buildId, line);
    log(`==> Rollback to build ${from.id}: releasing its kept image ${image}, no build`);
    // As a restart: behind work in progress it waits its turn, and the status stays that work's.
    if (!this.deployer.busy(app.id)) {
      this.ctx.db.update(apps).set({ status: "starting", statusReason: null, updatedAt: now }).where(eq(apps.id, app.id)).run();
    }
    this.deployer.schedule(app.id, async (signal) => {
      try {
        if (signal.aborted) return log(`==> Not released: ${(signal.reason as Error).message}`);
        await this.deployer.release(app.id, buildId, image, log, signal);
      } finally {
        this.ctx.buildLogs.finish(buildId);
      }
    });
    return this.answer(app.id, buildId);
  }

  private rebuild(app: AppRow, from: BuildRow) {
    const buildId = this.records.newBuild(app.id, "rollback", { rollbackOf: from.id, commitSha: from.commitSha, commitMessage: from.commitMessage });
    this.ctx.buildLogs.append(app.id, buildId, `==> Rollback to build ${from.id}: its image was removed, so commit ${from.commitSha} is built again`);
    this.rebuildCommit(app, from, buildId);
    return this.answer(app.id, buildId);
  }

  private answer(appId: string, buildId: string) {
    const app = this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get()!;
    const build = this.ctx.db.select().from(builds).where(eq(builds.id, buildId)).get()!;
    return { app, build };
  }
}
