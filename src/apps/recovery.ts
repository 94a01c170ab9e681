// Keeping apps and the engine in step: the reconciler's owner of app containers (a container that
// stopped on its own is recorded; one the app's state does not name is removed), the proxy route of
// a serving container, and the recovery of builds, releases, env changes, stops and deletions a
// platform restart interrupted.
import { and, eq, inArray, isNotNull, ne, notInArray } from "drizzle-orm";
import { apps, builds } from "../db/schema";
import { LABEL_APP, LABEL_BUILD, LABEL_SETTINGS } from "../docker/container-spec";
import { DockerNotFound } from "../docker/driver";
import { workspaceNetworkName } from "../docker/workspace-network";
import type { ContainerOwner, ManagedContainer } from "../machines/reconciler";
import { APP_CONTAINER_REMOVAL, containerSettings, type AppRow, type AppsContext, type Deployer } from "./deployer";
import { AppTree } from "./files/tree";
import { SUPERVISED_STATUSES } from "./health/supervisor";
import { DEFAULT_EXPOSE_PORT, SERVING_STATUSES, UNFINISHED_BUILD_STATUSES, type BuildStatus } from "./model";
import { routePolicyOf } from "./rate-limits";
import { volumesLeaving } from "../volumes/service";

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
      // The supervisor starts these again itself (./health/supervisor.ts).
      if (!app.containerId || this.deployer.busy(app.id) || (app.autoRestart && SUPERVISED_STATUSES.includes(app.status))) continue;
      const container = containers.find((candidate) => candidate.id === app.containerId);
      const running = container?.state === "running";
      if (SUPERVISED_STATUSES.includes(app.status) && !running) {
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
   * Reconciler: an app has its serving container, plus the one a release in progress is making;
   * every other container labelled for it (a release or restart the platform was killed in left
   * it) is stopped and removed. A build's own container is left to its build (or to the recovery
   * after a restart). Returns the containers removed.
   */
  async retire(containers: ManagedContainer[]): Promise<ManagedContainer[]> {
    const removed: ManagedContainer[] = [];
    for (const container of containers) {
      const app = this.row(container.labels[LABEL_APP]!);
      if (!app || app.status === "deleting" || container.id === app.containerId || this.deployer.inHand(app.id, container)) continue;
      const buildId = container.labels[LABEL_BUILD];
      const build = buildId ? this.ctx.db.select({ status: builds.status }).from(builds).where(eq(builds.id, buildId)).get() : undefined;
      if (build && UNFINISHED_BUILD_STATUSES.includes(build.status as BuildStatus)) continue;
      try {
        const driver = this.ctx.machines.get(container.machineId);
        await driver.stopContainer(container.id, 10).catch(() => {});
        await driver.removeContainer(container.id, APP_CONTAINER_REMOVAL);
        removed.push(container);
        console.warn(`[apps] removed container ${container.name} (${container.id.slice(0, 12)}) of ${app.id}: not the one it serves from`);
      } catch (error) {
        if (!(error instanceof DockerNotFound)) console.warn(`[apps] could not remove container ${container.id.slice(0, 12)} of ${app.id}: ${(error as Error).message}`);
      }
    }
    return removed;
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
   * After the platform restarts: builds it was running, and built ones whose release it was
   * starting, are marked failed, apps it was deploying get the status their containers really
   * have, deletions it was doing are finished, leftover uploads and the temp files of interrupted
   * file writes are removed, an app serving from a container made before its last env or limits
   * change is restarted, and the proxy routes are restored. (The reconciliation that follows removes the containers nothing serves from.)
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
    // Built, but its release never switched: it never served.
    const releasing = this.ctx.db.select({ id: apps.releasingBuildId }).from(apps);
    const served = this.ctx.db.select({ id: apps.currentBuildId }).from(apps).where(isNotNull(apps.currentBuildId));
    const interruptedReleases = this.ctx.db
      .update(builds)
      .set({ status: "failed", error: "interrupted by a platform restart", finishedAt: now })
      .where(and(eq(builds.status, "succeeded"), inArray(builds.id, releasing), notInArray(builds.id, served)))
      .returning()
      .all();
    this.ctx.db.update(apps).set({ releasingBuildId: null }).where(isNotNull(apps.releasingBuildId)).run();
    const interruptedBuilds = this.ctx.db
      .update(builds)
      .set({ status: "failed", error: "interrupted by a platform restart", finishedAt: now })
      .where(unfinished)
      .returning()
      .all();
    // An interrupted release's container is removed by the reconciliation (and listed in its report); its image goes with the next release's retention.
    for (const build of interruptedReleases) {
      this.ctx.buildLogs.append(build.appId, build.id, "==> Not released: interrupted by a platform restart");
      this.ctx.buildLogs.finish(build.id);
    }
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
        if (app.stoppedFirstContainerId && app.stoppedFirstContainerId === app.containerId) await this.startStoppedFirst(app, app.containerId);
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
    for (const app of this.ctx.db.select({ id: apps.id }).from(apps).where(ne(apps.status, "deleting")).all()) {
      await new AppTree(this.ctx.storage.sourceDir(app.id))
        .removeWriteLeftovers(this.ctx.config.uploads.maxArchiveEntries)
        .catch((error) => console.warn(`[apps] could not look for interrupted file writes of ${app.id}: ${(error as Error).message}`));
    }
    for (const app of this.ctx.db.select().from(apps).where(inArray(apps.status, SUPERVISED_STATUSES)).all()) {
      await this.restoreRoute(app.id);
      await this.restartIfSettingsChanged(app);
    }
  }

  /**
   * A stop-first release stopped the serving container and was killed before its switch: that
   * container serves again, unless it mounts a volume the app no longer has (another app may have it now).
   */
  private async startStoppedFirst(app: AppRow, containerId: string) {
    const driver = this.ctx.machines.get(app.machineId);
    const state = await driver.inspectContainer(containerId).catch(() => null);
    this.ctx.db.update(apps).set({ stoppedFirstContainerId: null }).where(eq(apps.id, app.id)).run();
    if (!state || state.running || volumesLeaving(this.ctx.db, app.id, state.volumeNames).length) return;
    console.log(`[apps] ${app.id}: starting again the container a stop-first release stopped before the platform stopped`);
    await driver.startContainer(containerId).catch((error) => console.warn(`[apps] could not start ${containerId} of ${app.id} again: ${(error as Error).message}`));
  }

  /**
   * An env or limits change is acknowledged before the restart that applies it: one the platform
   * was killed before finishing would leave the app serving the old settings. A container without
   * the label was made before labels existed and is left as it is.
   */
  private async restartIfSettingsChanged(app: AppRow) {
    if (!app.containerId || !app.currentBuildId) return;
    const made = await this.ctx.machines
      .get(app.machineId)
      .inspectContainer(app.containerId)
      .then((state) => state.labels[LABEL_SETTINGS], () => undefined);
    const image = this.ctx.db.select({ image: builds.image }).from(builds).where(eq(builds.id, app.currentBuildId)).get()?.image;
    if (!made || !image || made === containerSettings(this.ctx, app).digest) return;
    console.log(`[apps] ${app.id} serves from a container made before its last env or limits change: restarting it`);
    const buildId = app.currentBuildId;
    this.deployer.schedule(app.id, (signal) => this.deployer.release(app.id, buildId, image, undefined, signal));
  }
}
