// Keeping apps and the engine in step: the reconciler's owner of app containers (a container that
// stopped on its own is recorded), the proxy route of a serving container, and the recovery of
// builds, deploys, stops and deletions a platform restart interrupted.
import { and, eq, inArray, isNotNull } from "drizzle-orm";
import { apps, builds } from "../db/schema";
import { LABEL_APP } from "../docker/container-spec";
import { DockerNotFound } from "../docker/driver";
import { workspaceNetworkName } from "../docker/workspace-network";
import type { ContainerOwner, ManagedContainer } from "../machines/reconciler";
import type { AppRow, AppsContext, Deployer } from "./deployer";
import { DEFAULT_EXPOSE_PORT, SERVING_STATUSES, UNFINISHED_BUILD_STATUSES } from "./model";
import { routePolicyOf } from "./rate-limits";

export class AppRecovery implements ContainerOwner {
  readonly label = LABEL_APP;

  constructor(
    private readonly ctx: AppsContext,
    private readonly deployer: Deployer,
    /** Removes an app's containers, images, files and rows (AppsService's own): finishes a deletion a restart interrupted. */
    private readonly removeEverything: (app: AppRow) => Promise<void>,
  ) {}

  private row(appId: string): AppRow | undefined {
    return this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
  }

  /** Reconciler: records containers that stopped on their own; claims every app it knows. */
  async sync(containers: ManagedContainer[]): Promise<Set<string>> {
    const known = new Set<string>();
    for (const app of this.ctx.db.select().from(apps).all()) {
      known.add(app.id);
      if (!app.containerId || this.deployer.busy(app.id)) continue;
      const container = containers.find((candidate) => candidate.id === app.containerId);
      const running = container?.state === "running";
      if (app.status === "running" && !running) {
        this.ctx.db.update(apps).set({ status: "crashed", statusReason: `container is ${container?.state ?? "gone"}`, updatedAt: Date.now() }).where(eq(apps.id, app.id)).run();
        if (app.subdomain) this.ctx.proxyRoutes.delete(app.subdomain);
      } else if (app.status === "crashed" && running) {
        this.ctx.db.update(apps).set({ status: "running", statusReason: null, updatedAt: Date.now() }).where(eq(apps.id, app.id)).run();
        void this.restoreRoute(app.id);
      }
    }
    return known;
  }

  /**
   * Points the proxy at the app's serving container again (at start, after a restart by the engine,
   * after a subdomain change), on the port that container really serves on. The row is read again
   * after the engine answers: a release that switched meanwhile has routed the new container itself.
   */
  async restoreRoute(appId: string) {
    const app = this.row(appId);
    if (!app?.subdomain || !app.containerId) return;
    try {
      const inspected = await this.ctx.machines.get(app.machineId).inspectContainer(app.containerId);
      const host = inspected.networks[workspaceNetworkName(app.workspaceId)];
      const now = this.row(appId);
      if (!inspected.running || !host || !now?.subdomain || now.containerId !== app.containerId || !SERVING_STATUSES.has(now.status)) return;
      this.ctx.proxyRoutes.set(now.subdomain, {
        host,
        port: now.servingPort ?? now.exposePort ?? DEFAULT_EXPOSE_PORT,
        ...routePolicyOf(now, this.ctx.config.proxyRateLimits),
      });
    } catch (error) {
      console.warn(`[apps] could not restore the route of ${app.id}: ${(error as Error).message}`);
    }
  }

  /**
   * After the platform restarts: builds it was running are marked failed, apps it was deploying
   * get the status their containers really have, deletions it was doing are finished, leftover
   * uploads are removed, and the proxy routes are restored.
   */
  async recoverAfterRestart() {
    // Moved aside before the first await: a deploy accepted meanwhile must keep its fresh upload.
    const leftoversRemoved = this.ctx.storage.removeLeftoverUploads();
    const now = Date.now();
    const unfinished = inArray(builds.status, UNFINISHED_BUILD_STATUSES);
    // A rollback entry the app serves had switched before the restart: its release succeeded.
    const switched = this.ctx.db.select({ id: apps.currentBuildId }).from(apps);
    this.ctx.db.update(builds).set({ status: "succeeded", finishedAt: now }).where(and(unfinished, inArray(builds.id, switched))).run();
    const interruptedRollbacks = this.ctx.db
      .update(builds)
      .set({ status: "failed", error: "not released: interrupted by a platform restart", finishedAt: now })
      .where(and(unfinished, eq(builds.trigger, "rollback"), isNotNull(builds.image)))
      .returning()
      .all();
    const interruptedBuilds = this.ctx.db
      .update(builds)
      .set({ status: "failed", error: "interrupted by a platform restart", finishedAt: now })
      .where(unfinished)
      .returning()
      .all();
    for (const build of [...interruptedRollbacks, ...interruptedBuilds]) {
      this.ctx.buildLogs.append(build.appId, build.id, "==> Interrupted by a platform restart");
      this.ctx.buildLogs.finish(build.id);
      const app = this.row(build.appId);
      // A build container, or a rollback's container that never served, outlives the platform's process: removed now.
      if (app) await this.deployer.builder.removeLeftovers(app, build.id).catch((error) => console.warn(`[apps] leftovers of build ${build.id}: ${(error as Error).message}`));
    }
    for (const app of this.ctx.db.select().from(apps).where(inArray(apps.status, ["building", "starting", "stopping", "deleting"])).all()) {
      try {
        if (app.status === "deleting") {
          await this.removeEverything(app);
          continue;
        }
        if (app.status === "stopping") {
          if (app.containerId) await this.ctx.machines.get(app.machineId).stopContainer(app.containerId, 10).catch((error) => {
            if (!(error instanceof DockerNotFound)) throw error;
          });
          this.ctx.db.update(apps).set({ status: "stopped", statusReason: null, updatedAt: now }).where(eq(apps.id, app.id)).run();
          continue;
        }
        const serving = app.containerId
          ? await this.ctx.machines.get(app.machineId).inspectContainer(app.containerId).then((state) => state.running, () => false)
          : false;
        const reason = `A deploy was interrupted by a platform restart${serving ? `; still serving build ${app.currentBuildId}` : ""}`;
        this.ctx.db.update(apps).set({ status: serving ? "running" : "failed", statusReason: reason, updatedAt: now }).where(eq(apps.id, app.id)).run();
      } catch (error) {
        console.warn(`[apps] could not recover ${app.id}: ${(error as Error).message}`);
      }
    }
    await leftoversRemoved;
    for (const app of this.ctx.db.select().from(apps).where(eq(apps.status, "running")).all()) await this.restoreRoute(app.id);
  }
}
