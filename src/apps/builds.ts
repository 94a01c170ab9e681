// The build read side of /api/apps/:appId/builds: history, one build with a range of its log,
// cancelling, and following a log live. Builds themselves run in the Deployer's Builder.
import { and, desc, eq } from "drizzle-orm";
import { builds } from "../db/schema";
import { ApiError } from "../http/errors";
import type { AppRow, AppsContext, Deployer } from "./deployer";
import type { Static } from "@sinclair/typebox";
import { BuildSchema, type BuildStatus } from "./model";
import { releasesKeptImage } from "./rollback";

type BuildRow = typeof builds.$inferSelect;
const BUILD_HISTORY = 50;

export class AppBuilds {
  constructor(
    private readonly ctx: AppsContext,
    private readonly deployer: Deployer,
    /** The workspace's app, or NOT_FOUND (AppsService.get). */
    private readonly getApp: (workspaceId: string, appId: string) => AppRow,
  ) {}

  publicBuild(build: BuildRow): Static<typeof BuildSchema> {
    return {
      id: build.id,
      status: build.status as BuildStatus,
      /** Place in the line for a build slot (1: next), while the build waits for one. */
      queuePosition: build.status === "queued" ? this.deployer.builder.queuePosition(build.id) : null,
      trigger: build.trigger,
      image: build.image,
      imageDigest: build.imageDigest,
      imageKept: build.image !== null && build.imageRemovedAt === null,
      commitSha: build.commitSha,
      commitMessage: build.commitMessage,
      rollbackOf: build.rollbackOf,
      error: build.error,
      startedAt: new Date(build.startedAt).toISOString(),
      finishedAt: build.finishedAt ? new Date(build.finishedAt).toISOString() : null,
      durationMs: build.finishedAt ? build.finishedAt - build.startedAt : null,
    };
  }

  list(workspaceId: string, appId: string) {
    const app = this.getApp(workspaceId, appId);
    return this.ctx.db.select().from(builds).where(eq(builds.appId, app.id)).orderBy(desc(builds.startedAt)).limit(BUILD_HISTORY).all().map((build) => this.publicBuild(build));
  }

  private buildRow(workspaceId: string, appId: string, buildId: string) {
    const app = this.getApp(workspaceId, appId);
    const build = this.ctx.db.select().from(builds).where(and(eq(builds.id, buildId), eq(builds.appId, app.id))).get();
    if (!build) throw new ApiError("NOT_FOUND", "Build not found");
    return build;
  }

  /** A build and a byte range of its log (by default the last 256 KiB), never the whole file in memory. */
  withLog(workspaceId: string, appId: string, buildId: string, range: { offset?: number; limit?: number } = {}) {
    const build = this.buildRow(workspaceId, appId, buildId);
    const log = this.ctx.buildLogs.read(build.appId, build.id, range);
    return {
      build: this.publicBuild(build),
      log: log.text,
      logOffset: log.offset,
      logNextOffset: log.nextOffset,
      logBytes: log.totalBytes,
      logDroppedBytes: log.droppedBytes,
    };
  }

  /**
   * POST …/builds/:buildId/cancel: a queued build is dropped, a running one killed; the app keeps what
   * it serves. A rollback releasing a kept image builds nothing and is refused: a stop ends it.
   */
  async cancel(workspaceId: string, appId: string, buildId: string) {
    const build = this.buildRow(workspaceId, appId, buildId);
    if (releasesKeptImage(build)) {
      throw new ApiError(
        "BUILD_FINISHED",
        `Build ${build.id} builds nothing: it releases the kept image of build ${build.rollbackOf}, which cannot be canceled; it ends once that release serves or fails, and stopping the app ends it at once`,
      );
    }
    const canceled = await this.deployer.builder.cancel(build.appId, build.id, "canceled by a user");
    if (!canceled) throw new ApiError("BUILD_FINISHED", `Build ${build.id} has already ${build.status === "canceled" ? "been canceled" : "finished"}`);
    return this.publicBuild(this.buildRow(workspaceId, appId, buildId));
  }

  followLog(workspaceId: string, appId: string, buildId: string, signal: AbortSignal) {
    const build = this.buildRow(workspaceId, appId, buildId);
    return this.ctx.buildLogs.follow(build.appId, build.id, signal);
  }
}
