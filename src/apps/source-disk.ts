// The disk quota's accounting for apps: each app's source tree and build logs, and the room a new tree needs.
import { and, eq, ne } from "drizzle-orm";
import { apps, builds } from "../db/schema";
import { assertWithinQuota, bytesToMB } from "../quotas/limits";
import { treeBytes, type WorkspaceDisk } from "../quotas/usage";
import type { AppRow, AppsContext } from "./deployer";

export class AppSourceDisk {
  /** Bytes of each app's source tree: measured once, asynchronously, then known from each accepted upload. */
  private readonly sourceBytes = new Map<string, Promise<number>>();

  constructor(
    private readonly ctx: AppsContext,
    private readonly disk: WorkspaceDisk,
    listApps: (workspaceId: string) => AppRow[],
  ) {
    this.disk.register("appSources", async (workspaceId, { exceptAppId }) => {
      const others = listApps(workspaceId).filter((app) => app.id !== exceptAppId && app.status !== "deleting");
      const sizes = await Promise.all(others.map((app) => this.sourceBytesOf(app.id)));
      return sizes.reduce((sum, size) => sum + size, 0);
    });
    // The builds' rows name the log files (retention deletes both); their sizes are kept by BuildLogs.
    this.disk.register("buildLogs", (workspaceId) => {
      const logs = this.ctx.db
        .select({ appId: builds.appId, buildId: builds.id })
        .from(builds)
        .innerJoin(apps, eq(apps.id, builds.appId))
        .where(and(eq(apps.workspaceId, workspaceId), ne(apps.status, "deleting")))
        .all();
      return this.ctx.buildLogs.diskBytes(logs);
    });
  }

  /** The new source tree (`newBytes`) beside everything else the workspace keeps; a redeploy's old tree is replaced, so not counted. */
  async reserveRoom(workspaceId: string, replacedAppId: string | undefined, newBytes: number): Promise<() => void> {
    // Reserved before the await, so a second upload checked meanwhile counts this one.
    const release = this.disk.reserve(workspaceId, newBytes);
    try {
      const used = await this.disk.bytesUsed(workspaceId, { exceptAppId: replacedAppId });
      assertWithinQuota("diskMB", bytesToMB(used - newBytes), bytesToMB(newBytes), this.ctx.config.quotas.diskMB);
      return release;
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * The source tree was edited: the app says so until a build reads it. Its recorded size moves by
   * `deltaBytes` when the edit knows it, else it is measured again when next needed.
   */
  sourceChanged(appId: string, deltaBytes?: number) {
    this.ctx.db.update(apps).set({ filesChangedAt: Date.now() }).where(eq(apps.id, appId)).run();
    const known = this.sourceBytes.get(appId);
    if (known && deltaBytes !== undefined) this.sourceBytes.set(appId, known.then((bytes) => bytes + deltaBytes));
    else this.sourceBytes.delete(appId);
  }

  /** The app's source tree was replaced by one of `bytes` (an upload or a repository checkout). */
  sourceReplaced(appId: string, bytes: number) {
    this.sourceBytes.set(appId, Promise.resolve(bytes));
  }

  /** The app is deleted: its size is no longer known. */
  forgetApp(appId: string) {
    this.sourceBytes.delete(appId);
  }

  private sourceBytesOf(appId: string): Promise<number> {
    let known = this.sourceBytes.get(appId);
    if (!known) {
      known = treeBytes(this.ctx.storage.sourceDir(appId));
      this.sourceBytes.set(appId, known);
    }
    return known;
  }
}
