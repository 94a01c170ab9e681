// Lifecycle steps of an app that run on its Deployer queue: bringing its current build up again,
// stopping its container, and removing everything it has on delete (or restoring its status when that fails).
import { eq } from "drizzle-orm";
import { apps, builds } from "../db/schema";
import { LABEL_APP } from "../docker/container-spec";
import { releaseWorkspaceNetwork } from "../docker/workspace-network";
import { APP_CONTAINER_REMOVAL, type AppRow, type AppsContext, type Deployer } from "./deployer";
import { removePulledImageNames } from "./images/pull";
import type { AppDomains } from "./domains/service";
import type { HealthHistory } from "./health/history";
import type { AppSourceDisk } from "./source-disk";
import type { Volumes } from "../volumes/service";

/** Releases the app's current build again; answers why it did not serve (null once it does). */
export async function releaseCurrentBuild(ctx: AppsContext, deployer: Deployer, appId: string, signal: AbortSignal): Promise<string | null> {
  const app = ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
  if (!app || app.status === "deleting") return "the app was deleted";
  const image = app.currentBuildId ? ctx.db.select().from(builds).where(eq(builds.id, app.currentBuildId)).get()?.image : undefined;
  if (!image) {
    const reason = "The app has no successful build to start; deploy it first";
    await deployer.afterFailure(appId, reason);
    return reason;
  }
  return deployer.release(appId, app.currentBuildId!, image, undefined, signal);
}

/**
 * Stops the app's container (its route goes first); false when that failed: the app's status says
 * why, and `afterFailure` puts its route back if it still runs.
 */
export async function stopContainer(ctx: AppsContext, deployer: Deployer, app: AppRow, signal: AbortSignal, afterFailure: () => void): Promise<boolean> {
  if (app.subdomain) ctx.proxyRoutes.delete(app.subdomain);
  try {
    if (app.containerId) await ctx.machines.get(app.machineId).stopContainer(app.containerId, 10);
  } catch (error) {
    if (!signal.aborted) await deployer.afterFailure(app.id, `Stop failed: ${(error as Error).message}; send stop again`);
    afterFailure();
    return false;
  }
  return true;
}

/** After a delete failed: whether the app's container still serves, and the status the app gets back. */
export async function statusAfterFailedDelete(ctx: AppsContext, app: AppRow, current: AppRow) {
  const serving = current.containerId
    ? await ctx.machines.get(app.machineId).inspectContainer(current.containerId).then((state) => state.running, () => false)
    : false;
  const status = serving ? "running" : app.status === "stopped" ? "stopped" : "failed";
  return { serving, status } as const;
}

/** The parts of the apps service that keep something of each app. */
export interface AppParts {
  volumes: Volumes;
  domains: AppDomains;
  sourceDisk: AppSourceDisk;
  health: HealthHistory;
}

/**
 * Containers, images (the build stages too: they carry the labels), network if last, files, rows.
 * Volumes stay (detached) unless `deleteVolumes`, recorded on the app when its delete began (so a resumed delete does as asked).
 */
export async function removeEverything(ctx: AppsContext, parts: AppParts, app: AppRow, deleteVolumes: boolean) {
  const driver = ctx.machines.get(app.machineId);
  for (const container of await driver.listContainers({ [LABEL_APP]: app.id })) await driver.removeContainer(container.id, APP_CONTAINER_REMOVAL);
  if (deleteVolumes) await parts.volumes.deleteOfApp(app.id);
  else parts.volumes.detachAll(app.id);
  for (const image of await driver.listImages({ [LABEL_APP]: app.id })) await driver.removeImage(image.id);
  await removePulledImageNames(ctx, app);
  await releaseWorkspaceNetwork(driver, app.workspaceId);
  parts.domains.unroute(app.id);
  ctx.db.delete(apps).where(eq(apps.id, app.id)).run();
  await ctx.storage.removeApp(app.id);
  parts.sourceDisk.forgetApp(app.id);
  ctx.buildLogs.forgetApp(app.id);
  parts.health.forget(app.id);
  // Its hosts' certificates go.
  ctx.certificates.hostsChanged();
}
