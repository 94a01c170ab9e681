// The deploy pipeline of one app, run in the background and one at a time per app: build an image
// from the kept source tree (when asked), start a new container, wait until it accepts TCP on its
// port, point the proxy at it, then retire the previous container. Until the new one listens the
// old one keeps serving, so a redeploy is zero-downtime and a failed one changes nothing.
import { and, eq } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { apps, builds } from "../db/schema";
import type { Config } from "../config";
import { pauseForTest } from "../config/test-pause";
import type { SecretBox } from "../crypto/secrets";
import type { Machines } from "../machines/service";
import type { ProxyRoutes } from "../proxy/routes";
import type { Certificates } from "../certificates/service";
import type { DnsChecker } from "../certificates/dns-check";
import type { PlatformEvents } from "../platform/events";
import type { DockerDriver } from "../docker/driver";
import { LABEL_APP, LABEL_BUILD, LABEL_MANAGED, LABEL_SETTINGS, LABEL_WORKSPACE } from "../docker/container-spec";
import { ensureWorkspaceNetwork, workspaceNetworkName } from "../docker/workspace-network";
import { ApiError } from "../http/errors";
import { randomBase62 } from "../crypto/tokens";
import { Builder, type BuildRoomCheck, type SourceFetch } from "./builder";
import { readEnvVars } from "./env-vars";
import type { AppStorage } from "./sources";
import type { BuildLogs } from "./build-logs";
import { drain, type InFlightCount } from "./health/drain";
import { waitUntilHealthy } from "./health/gate";
import { healthCheckOf } from "./health/settings";
import { DEFAULT_EXPOSE_PORT, type AppStatus } from "./model";
import { routePolicyOf } from "./rate-limits";
import { removeImagesBeyondRetention } from "./image-retention";
import { containerUserOf, imageAppSpec } from "./images/container";
import { appVolumeMounts, mountsDigested } from "../volumes/mounts";
import { releaseStrategyOf } from "../volumes/service";

export type AppRow = typeof apps.$inferSelect;

export interface AppsContext {
  db: PlatformDb;
  config: Config;
  machines: Machines;
  secrets: SecretBox;
  storage: AppStorage;
  buildLogs: BuildLogs;
  proxyRoutes: ProxyRoutes;
  certificates: Certificates;
  /** The DNS check of custom domains. */
  dns: DnsChecker;
  /** Platform events (an app turning unhealthy or crash-looping). */
  events: PlatformEvents;
}

/** An app keeps nothing in volumes: those its image's VOLUME lines made go with the container. */
export const APP_CONTAINER_REMOVAL = { withAnonymousVolumes: true };

class ReleaseFailed extends Error {}

/**
 * What an app container is made from besides its image: its env and limits, and a digest of them
 * (labelled on the container) so a start can tell a container made before an acknowledged change.
 */
export function containerSettings(ctx: AppsContext, app: AppRow) {
  const port = app.exposePort ?? DEFAULT_EXPOSE_PORT;
  const user = containerUserOf(ctx.config, app);
  const cpus = app.cpus ?? ctx.config.defaultCpus;
  const env: Record<string, string> = { ...(user && app.runtime !== "image" && { HOME: "/tmp" }), ...readEnvVars(ctx.db, ctx.secrets, app.id), PORT: String(port) };
  const mounts = mountsDigested(ctx.db, app.id);
  const digest = new Bun.CryptoHasher("sha256").update(JSON.stringify({ env, memoryMB: app.memoryMB, cpus, user: user ?? null, ...mounts })).digest("hex");
  return { port, user, cpus, env, digest };
}

function preemptedReason(signal: AbortSignal): string {
  return signal.reason instanceof Preempted ? signal.reason.message : "cancelled";
}

/** Why queued work ended early: a stop or delete preempted it. */
export class Preempted extends Error {}

/** One app's queue: the tail every new task waits for, and the signal its tasks share until preempted. */
interface Lane {
  tail: Promise<unknown>;
  controller: AbortController;
}

export class Deployer {
  private readonly lanes = new Map<string, Lane>();
  /** Per app, the names and ids of containers a release in progress is making or retiring: the reconciler leaves them alone. */
  private readonly containersInHand = new Map<string, Set<string>>();

  /** Runs builds: slots, timeout, cancel (./builder.ts). */
  readonly builder: Builder;
  /** Requests in flight through the public proxy to an address: the proxy's thread, once it runs (src/main.ts). */
  inFlight: InFlightCount = () => 0;

  constructor(
    private readonly ctx: AppsContext,
    checkBuildRoom: BuildRoomCheck,
  ) {
    this.builder = new Builder(ctx, checkBuildRoom);
  }

  /**
   * Runs `task` after every earlier task of the same app has finished; its outcome is the caller's.
   * The task gets the lane's signal: aborted when a later stop or delete preempts it.
   */
  enqueue<T>(appId: string, task: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const lane = this.lanes.get(appId) ?? { tail: Promise.resolve(), controller: new AbortController() };
    const signal = lane.controller.signal;
    const run = lane.tail.then(() => task(signal));
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    lane.tail = settled;
    this.lanes.set(appId, lane);
    void settled.then(() => {
      if (this.lanes.get(appId) === lane && lane.tail === settled) this.lanes.delete(appId);
    });
    return run;
  }

  /** Queues background work nobody waits for; a failure is logged (the task records its own status). */
  schedule(appId: string, task: (signal: AbortSignal) => Promise<unknown>): void {
    this.enqueue(appId, task).catch((error) => console.error(`[apps] ${appId}:`, error));
  }

  /**
   * Ends the app's queued and running work early: each task sees its signal aborted at its next
   * checkpoint (a build is cancelled, a release not yet switched removes its new container) and
   * leaves the app's status to the task that preempted it, which is queued after them.
   */
  preempt(appId: string, reason: string): void {
    const lane = this.lanes.get(appId);
    if (!lane) return;
    lane.controller.abort(new Preempted(reason));
    lane.controller = new AbortController();
  }

  busy(appId: string): boolean {
    return this.lanes.has(appId);
  }

  /** Whether a release in progress is making or retiring this container of the app. */
  inHand(appId: string, container: { id: string; name: string }): boolean {
    const held = this.containersInHand.get(appId);
    return !!held && (held.has(container.id) || held.has(container.name));
  }

  private app(appId: string): AppRow | undefined {
    return this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
  }

  private setStatus(appId: string, status: AppStatus, statusReason: string | null = null, extra: Partial<AppRow> = {}) {
    this.ctx.db.update(apps).set({ status, statusReason, updatedAt: Date.now(), ...extra }).where(eq(apps.id, appId)).run();
  }


  /**
   * Build from the kept source (first replaced by `newSource`, an accepted upload, when given; see
   * ./builder.ts), then release; a build that fails or is canceled leaves the serving container alone.
   */
  async buildAndRelease(appId: string, buildId: string, newSource?: string | SourceFetch, signal?: AbortSignal): Promise<void> {
    const built = await this.builder.build(appId, buildId, newSource, signal);
    if (!("image" in built)) {
      if (built.failure) await this.afterFailure(appId, built.failure);
      return;
    }
    let failure: string | null = "the release ended unexpectedly";
    try {
      if (signal?.aborted) built.log(`==> Not released: ${preemptedReason(signal)}`);
      else failure = await this.release(appId, buildId, built.image, built.log, signal);
    } finally {
      this.recordNotServed(appId, buildId, failure, signal);
      this.ctx.buildLogs.finish(buildId);
    }
  }

  /**
   * A build whose release was preempted or failed never served: it is no rollback target, so it
   * ends canceled or failed ("not released: …"), as the recovery records one a crash interrupted.
   */
  private recordNotServed(appId: string, buildId: string, failure: string | null, signal?: AbortSignal) {
    if (this.app(appId)?.currentBuildId === buildId) return;
    const outcome = signal?.aborted
      ? { status: "canceled", error: `not released: ${preemptedReason(signal)}` }
      : { status: "failed", error: `not released: ${failure ?? "the release failed"}` };
    this.ctx.db
      .update(builds)
      .set({ ...outcome, finishedAt: Date.now() })
      .where(and(eq(builds.id, buildId), eq(builds.status, "succeeded")))
      .run();
  }

  /**
   * Starts a container of `image` and switches to it once it listens. Until the switch a preempting
   * stop or delete (`signal`) ends it: the new container is removed and the status is left alone.
   * The switch records the port the container really serves on (`servingPort`) and routes the
   * subdomain the app has at that moment, not the one it had when the release began. `onServing`
   * is told at the switch, before the old container is retired. Answers why it did not switch
   * (null once it has).
   */
  async release(
    appId: string,
    buildId: string,
    image: string,
    log: (line: string) => void = () => {},
    signal?: AbortSignal,
    onServing?: () => void,
  ): Promise<string | null> {
    const app = this.app(appId);
    if (signal?.aborted) return preemptedReason(signal);
    if (!app || app.status === "deleting") return "the app was deleted";
    const driver = this.ctx.machines.get(app.machineId);
    this.setStatus(appId, "starting", null, { releasingBuildId: buildId });
    const held = new Set<string>();
    this.containersInHand.set(appId, held);
    let containerId: string | null = null;
    // stop-first (apps with volumes, by default): the old container stops before the new one starts, and starts again if the new one fails.
    const stopFirst = app.containerId !== null && releaseStrategyOf(this.ctx.db, app) === "stop-first";
    const stoppedFirst = stopFirst && (await driver.inspectContainer(app.containerId!).then((state) => state.running, () => false)) ? app.containerId : null;
    try {
      if (stoppedFirst) {
        log(`==> Stopping container ${stoppedFirst.slice(0, 12)} first (releaseStrategy stop-first)`);
        // Until the switch the proxy answers 503 with Retry-After, as for a stopped app, rather than 502.
        const { subdomain } = this.app(appId) ?? app;
        const route = subdomain ? this.ctx.proxyRoutes.get(subdomain) : undefined;
        if (subdomain) this.ctx.proxyRoutes.delete(subdomain);
        if (route) await this.drainRetired(route, log, signal);
        await driver.stopContainer(stoppedFirst, 10);
      }
      containerId = await this.startContainer(driver, app, buildId, image, log, held);
      await pauseForTest("release.started");
      const upstream = await this.waitForContainer(driver, app, containerId, log, signal);
      const hostPort = (await driver.inspectContainer(containerId)).ports[upstream.port] ?? null;
      // From this check to the switch nothing awaits: a stop or delete either came before it or queues after it.
      if (signal?.aborted) throw signal.reason;
      const previous = this.app(appId);
      if (!previous || previous.status === "deleting") throw new ReleaseFailed("the app was deleted during the deploy");
      // Retired by this release after the drain, not by a reconciliation meanwhile.
      if (previous.containerId) held.add(previous.containerId);
      this.setStatus(appId, "running", null, { containerId, hostPort, servingPort: upstream.port, currentBuildId: buildId, releasingBuildId: null });
      // The route the previous container served by: its requests in flight are waited for before it stops.
      const retiredUpstream = previous.subdomain ? this.ctx.proxyRoutes.get(previous.subdomain) : undefined;
      if (previous.subdomain) {
        this.ctx.proxyRoutes.set(previous.subdomain, { ...upstream, ...routePolicyOf(previous, this.ctx.config.proxyRateLimits) });
        // A first release: its host gets a certificate now rather than at the next scheduled check.
        this.ctx.certificates.hostsChanged();
      }
      log(`==> Serving from container ${containerId.slice(0, 12)} on port ${upstream.port}`);
      onServing?.();
      await pauseForTest("release.switched");
      if (previous.containerId && previous.containerId !== containerId) {
        const old = previous.containerId;
        if (retiredUpstream) await this.drainRetired(retiredUpstream, log, signal);
        await driver.stopContainer(old, 10).catch(() => {});
        await driver.removeContainer(old, APP_CONTAINER_REMOVAL).catch(() => {});
      }
      await removeImagesBeyondRetention(this.ctx, appId, log);
      return null;
    } catch (error) {
      if (signal?.aborted) {
        log(`==> Release cancelled: ${preemptedReason(signal)}`);
        if (containerId) await driver.removeContainer(containerId, APP_CONTAINER_REMOVAL).catch(() => {});
        return preemptedReason(signal);
      }
      const reason = error instanceof ReleaseFailed || error instanceof ApiError ? error.message : "internal error";
      if (reason === "internal error") console.error(`[apps] release of ${appId}:`, error);
      log(`==> Release failed: ${reason}`);
      if (containerId) await driver.removeContainer(containerId, APP_CONTAINER_REMOVAL).catch(() => {});
      if (stoppedFirst) await this.restartStoppedFirst(driver, app, stoppedFirst, log);
      await this.afterFailure(appId, `Deploy of build ${buildId} failed: ${reason}`);
      return reason;
    } finally {
      this.containersInHand.delete(appId);
      this.ctx.db.update(apps).set({ releasingBuildId: null }).where(eq(apps.id, appId)).run();
    }
  }

  /** Waits (PLATFORM_RELEASE_DRAIN_SECONDS at most, and no longer than a preempting stop or delete) until the proxy has no request in flight to the retired container. */
  private async drainRetired(upstream: { host: string; port: number }, log: (line: string) => void, signal?: AbortSignal) {
    const limitSeconds = this.ctx.config.health.releaseDrainSeconds;
    const inFlight = this.inFlight(upstream.host, upstream.port);
    if (inFlight === 0) return;
    log(`==> Waiting for ${inFlight} request(s) in flight to the previous container (at most ${limitSeconds} s)`);
    const left = await drain(this.inFlight, upstream, limitSeconds * 1000, signal);
    if (left === 0) return;
    if (signal?.aborted) log(`==> Not waiting for ${left} request(s) in flight any more: ${preemptedReason(signal)}`);
    else log(`==> ${left} request(s) still in flight after ${limitSeconds} s: stopping the previous container anyway`);
  }

  /** stop-first: the previous container, stopped for a release that failed, serves again (at the address it has now). */
  private async restartStoppedFirst(driver: DockerDriver, app: AppRow, containerId: string, log: (line: string) => void) {
    log(`==> Starting the previous container ${containerId.slice(0, 12)} again`);
    try {
      await driver.startContainer(containerId);
      const port = app.servingPort ?? app.exposePort ?? DEFAULT_EXPOSE_PORT;
      const { host, gate } = await this.healthGate(driver, app, containerId, port, log);
      if (!host || gate?.outcome !== "ready") throw new Error("it did not pass its health check again");
      const current = this.app(app.id);
      if (current?.subdomain && current.containerId === containerId) {
        this.ctx.proxyRoutes.set(current.subdomain, { host, port, ...routePolicyOf(current, this.ctx.config.proxyRateLimits) });
      }
    } catch (error) {
      log(`==> The previous container did not serve again: ${(error as Error).message}`);
    }
  }

  /** `held` gets the container's name before the engine is asked to create it: the reconciler may list it before the answer. */
  private async startContainer(driver: DockerDriver, app: AppRow, buildId: string, image: string, log: (line: string) => void, held: Set<string>) {
    // Non-root by default (PLATFORM_APP_USER): /app stays root-owned and readable, HOME is writable.
    const { port, user, cpus, env, digest } = containerSettings(this.ctx, app);
    const labels = { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: app.workspaceId, [LABEL_APP]: app.id, [LABEL_BUILD]: buildId, [LABEL_SETTINGS]: digest };
    const network = await ensureWorkspaceNetwork(driver, app.workspaceId);
    const name = `app-${app.id.toLowerCase()}-${randomBase62(6).toLowerCase()}`;
    held.add(name);
    const containerId = await driver.createContainer({
      name,
      image,
      env,
      labels,
      memoryMB: app.memoryMB,
      cpus,
      user,
      // A capability does not reach a non-root process; the namespaced sysctl lets it bind a low port.
      capabilities: port < 1024 && !user ? ["NET_BIND_SERVICE"] : [],
      sysctls: port < 1024 && user ? { "net.ipv4.ip_unprivileged_port_start": "0" } : undefined,
      network: { name: network, aliases: [app.name] },
      publish: { containerPort: port, hostIp: "127.0.0.1" },
      volumes: await appVolumeMounts(this.ctx.db, driver, app, image, user),
      // Never the engine's: the platform restarts app containers itself (./health/supervisor.ts).
      restartPolicy: "no",
      init: true,
      ...(await imageAppSpec(driver, app, image)),
    });
    log(`==> Starting container ${containerId.slice(0, 12)} (${app.memoryMB} MB, ${cpus} CPU, port ${port}, user ${user ?? "of the image"})`);
    await driver.startContainer(containerId);
    return containerId;
  }

  /**
   * The container at its workspace address, once it passes the app's health check (or exits, or
   * gives up); `gate` null when it got no address and still runs. A preempted release stops waiting
   * at once; its caller sees the aborted signal.
   */
  private async healthGate(driver: DockerDriver, app: AppRow, containerId: string, port: number, log: (line: string) => void, signal?: AbortSignal) {
    const stillRunning = async () => !signal?.aborted && (await driver.inspectContainer(containerId)).running;
    const host = (await driver.inspectContainer(containerId)).networks[workspaceNetworkName(app.workspaceId)];
    const hostHeader = app.subdomain ? `${app.subdomain}.${this.ctx.config.domain}` : app.name;
    const gate = host
      ? await waitUntilHealthy({ host, port, check: healthCheckOf(app), hostHeader, stillRunning, log })
      : (await stillRunning())
        ? null
        : { outcome: "exited" as const };
    return { host, gate };
  }

  private async waitForContainer(driver: DockerDriver, app: AppRow, containerId: string, log: (line: string) => void, signal?: AbortSignal) {
    const port = app.exposePort ?? DEFAULT_EXPOSE_PORT;
    const { host, gate } = await this.healthGate(driver, app, containerId, port, log, signal);
    if (gate === null) throw new ReleaseFailed("the container got no address on the workspace network");
    if (gate.outcome === "ready") return { host: host!, port };
    if (signal?.aborted) throw signal.reason;
    const lines = await driver.logs(containerId, { tail: 20, timestamps: false }).catch(() => []);
    if (lines.length) log("==> Last lines of the app's output:");
    for (const line of lines) log(`    ${line.text}`);
    if (gate.outcome === "exited") {
      const { exitCode } = await driver.inspectContainer(containerId);
      throw new ReleaseFailed(`the app exited with code ${exitCode} before listening on port ${port}`);
    }
    throw new ReleaseFailed(gate.reason);
  }

  /** After a failed build or release: `running` (with the reason) while the previous container serves, else `failed`. */
  async afterFailure(appId: string, reason: string) {
    const app = this.app(appId);
    if (!app || app.status === "deleting") return;
    const serving = app.containerId
      ? await this.ctx.machines.get(app.machineId).inspectContainer(app.containerId).then((state) => state.running, () => false)
      : false;
    if (serving) this.setStatus(appId, "running", `${reason}; still serving build ${app.currentBuildId}`);
    else this.setStatus(appId, "failed", reason);
  }

}
