// The deploy pipeline of one app, run in the background and one at a time per app: build an image
// from the kept source tree (when asked), start a new container, wait until it accepts TCP on its
// port, point the proxy at it, then retire the previous container. Until the new one listens the
// old one keeps serving, so a redeploy is zero-downtime and a failed one changes nothing.
import { readFileSync } from "node:fs";
import { eq } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { apps, builds } from "../db/schema";
import type { Config } from "../config";
import type { SecretBox } from "../crypto/secrets";
import type { Machines } from "../machines/service";
import type { ProxyRoutes } from "../proxy/routes";
import { BuildFailed, type DockerDriver } from "../docker/driver";
import { LABEL_APP, LABEL_BUILD, LABEL_MANAGED, LABEL_WORKSPACE } from "../docker/container-spec";
import { tarStream } from "../docker/tar";
import { workspaceNetworkLabels, workspaceNetworkName } from "../docker/workspace-network";
import { ApiError } from "../http/errors";
import { randomBase62 } from "../crypto/tokens";
import { redact } from "../crypto/redact";
import { DetectionFailed, planWithCommand } from "./detect";
import { BUILD_TIME_ENV_PREFIXES, generateDockerfile, platformContextFiles } from "./dockerfile";
import { readEnvVars } from "./env-vars";
import { contextEntries, sourceFiles, type AppStorage } from "./sources";
import type { BuildLogs } from "./build-logs";
import { waitUntilListening } from "./readiness";
import { DEFAULT_EXPOSE_PORT, type AppStatus } from "./model";

export type AppRow = typeof apps.$inferSelect;

export interface AppsContext {
  db: PlatformDb;
  config: Config;
  machines: Machines;
  secrets: SecretBox;
  storage: AppStorage;
  buildLogs: BuildLogs;
  proxyRoutes: ProxyRoutes;
}

const START_TIMEOUT_MS = 60_000;
/** Time the previous container keeps answering requests already sent to it after the switch. */
const DRAIN_MS = 1_000;

export const imageTag = (appId: string, buildId: string) => `platform-app-${appId.toLowerCase()}:${buildId.toLowerCase()}`;

class ReleaseFailed extends Error {}

export class Deployer {
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly ctx: AppsContext) {}

  /** Runs `task` after every earlier task of the same app has finished; its outcome is the caller's. */
  enqueue<T>(appId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(appId) ?? Promise.resolve();
    const run = previous.then(task);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(appId, settled);
    void settled.then(() => {
      if (this.queues.get(appId) === settled) this.queues.delete(appId);
    });
    return run;
  }

  /** Queues background work nobody waits for; a failure is logged (the task records its own status). */
  schedule(appId: string, task: () => Promise<void>): void {
    this.enqueue(appId, task).catch((error) => console.error(`[apps] ${appId}:`, error));
  }

  busy(appId: string): boolean {
    return this.queues.has(appId);
  }

  /** Waits for the app's queued work (delete uses it). */
  idle(appId: string): Promise<unknown> {
    return this.queues.get(appId) ?? Promise.resolve();
  }

  private app(appId: string): AppRow | undefined {
    return this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
  }

  private setStatus(appId: string, status: AppStatus, statusReason: string | null = null, extra: Partial<AppRow> = {}) {
    this.ctx.db.update(apps).set({ status, statusReason, updatedAt: Date.now(), ...extra }).where(eq(apps.id, appId)).run();
  }


  /**
   * Build from the kept source (first replaced by `newSource`, an accepted upload, when given),
   * then release; a build that fails leaves the serving container alone.
   */
  async buildAndRelease(appId: string, buildId: string, newSource?: string): Promise<void> {
    const app = this.app(appId);
    if (!app || app.status === "deleting") return this.ctx.buildLogs.finish(buildId);
    if (newSource) this.ctx.storage.replaceSource(appId, newSource);
    const envVars = readEnvVars(this.ctx.db, this.ctx.secrets, appId);
    const log = (line: string) => this.ctx.buildLogs.append(appId, buildId, redact(line, Object.values(envVars)));
    const startedAt = Date.now();
    this.ctx.db.update(builds).set({ status: "building" }).where(eq(builds.id, buildId)).run();
    this.setStatus(appId, "building", app.status === "running" ? app.statusReason : null);
    let image: string;
    try {
      image = await this.buildImage(app, buildId, envVars, log);
      log(`==> Image ${image} built in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
      this.ctx.db.update(builds).set({ status: "succeeded", image, finishedAt: Date.now() }).where(eq(builds.id, buildId)).run();
    } catch (error) {
      const reason = error instanceof BuildFailed || error instanceof DetectionFailed || error instanceof ApiError ? error.message : "internal error";
      if (reason === "internal error") console.error(`[apps] build ${buildId} of ${appId}:`, error);
      log(`==> Build failed: ${reason}`);
      this.ctx.db.update(builds).set({ status: "failed", error: reason, finishedAt: Date.now() }).where(eq(builds.id, buildId)).run();
      this.ctx.buildLogs.finish(buildId);
      await this.afterFailure(appId, `Build ${buildId} failed: ${reason}`);
      return;
    }
    try {
      await this.release(appId, buildId, image, log);
    } finally {
      this.ctx.buildLogs.finish(buildId);
    }
  }

  private async buildImage(app: AppRow, buildId: string, envVars: Record<string, string>, log: (line: string) => void): Promise<string> {
    const driver = this.ctx.machines.get(app.machineId);
    const sourceDir = this.ctx.storage.sourceDir(app.id);
    const plan = planWithCommand(sourceFiles(sourceDir), app.runtime, app.startupCommand);
    log(`==> Runtime ${app.runtime}, detected: ${plan.kind}`);
    for (const line of plan.explanation) log(`    ${line}`);
    log(`    start: ${plan.start.join(" ")}`);
    const buildArgs = Object.fromEntries(
      Object.entries(envVars).filter(([name]) => BUILD_TIME_ENV_PREFIXES.some((prefix) => name.startsWith(prefix))),
    );
    const labels = { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: app.workspaceId, [LABEL_APP]: app.id, [LABEL_BUILD]: buildId };
    const settings = {
      baseImage: this.ctx.config.images[app.runtime],
      labels,
      runtime: app.runtime,
      port: app.exposePort ?? DEFAULT_EXPOSE_PORT,
      caBundle: this.ctx.config.buildCaFile ? readFileSync(this.ctx.config.buildCaFile, "utf8") : undefined,
      npmRegistry: this.ctx.config.buildNpmRegistry,
      buildArgNames: Object.keys(buildArgs),
    };
    const dockerfile = generateDockerfile(plan, settings);
    const platformFiles = { ...platformContextFiles(plan, settings), ".platform/Dockerfile": dockerfile };
    await driver.ensureImage(settings.baseImage, log);
    const tag = imageTag(app.id, buildId);
    log(`==> Building image ${tag}`);
    await driver.buildImage({
      context: tarStream(contextEntries(sourceDir, platformFiles)),
      dockerfile: ".platform/Dockerfile",
      tag,
      memoryMB: this.ctx.config.buildMemoryMB,
      buildArgs,
      onLog: log,
    });
    return tag;
  }

  /** Starts a container of `image` and switches to it once it listens. */
  async release(appId: string, buildId: string, image: string, log: (line: string) => void = () => {}): Promise<void> {
    const app = this.app(appId);
    if (!app || app.status === "deleting") return;
    const driver = this.ctx.machines.get(app.machineId);
    this.setStatus(appId, "starting", null);
    let containerId: string | null = null;
    try {
      containerId = await this.startContainer(driver, app, buildId, image, log);
      const upstream = await this.waitForContainer(driver, app, containerId, log);
      const previous = this.app(appId);
      if (!previous || previous.status === "deleting") throw new ReleaseFailed("the app was deleted during the deploy");
      if (app.autoRestart) await driver.setRestartPolicy(containerId, "unless-stopped");
      const hostPort = (await driver.inspectContainer(containerId)).ports[upstream.port] ?? null;
      this.setStatus(appId, "running", null, { containerId, hostPort, currentBuildId: buildId });
      if (app.subdomain) this.ctx.proxyRoutes.set(app.subdomain, upstream);
      log(`==> Serving from container ${containerId.slice(0, 12)} on port ${upstream.port}`);
      if (previous.containerId && previous.containerId !== containerId) {
        const old = previous.containerId;
        await Bun.sleep(DRAIN_MS);
        await driver.stopContainer(old, 10).catch(() => {});
        await driver.removeContainer(old).catch(() => {});
      }
    } catch (error) {
      const reason = error instanceof ReleaseFailed || error instanceof ApiError ? error.message : "internal error";
      if (reason === "internal error") console.error(`[apps] release of ${appId}:`, error);
      log(`==> Release failed: ${reason}`);
      if (containerId) await driver.removeContainer(containerId).catch(() => {});
      await this.afterFailure(appId, `Deploy of build ${buildId} failed: ${reason}`);
    }
  }

  private async startContainer(driver: DockerDriver, app: AppRow, buildId: string, image: string, log: (line: string) => void) {
    const port = app.exposePort ?? DEFAULT_EXPOSE_PORT;
    const labels = { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: app.workspaceId, [LABEL_APP]: app.id, [LABEL_BUILD]: buildId };
    const network = workspaceNetworkName(app.workspaceId);
    await driver.ensureNetwork(network, workspaceNetworkLabels(app.workspaceId));
    const containerId = await driver.createContainer({
      name: `app-${app.id.toLowerCase()}-${randomBase62(6).toLowerCase()}`,
      image,
      env: { ...readEnvVars(this.ctx.db, this.ctx.secrets, app.id), PORT: String(port) },
      labels,
      memoryMB: app.memoryMB,
      capabilities: port < 1024 ? ["NET_BIND_SERVICE"] : [],
      network: { name: network, aliases: [app.name] },
      publish: { containerPort: port, hostIp: "127.0.0.1" },
      // Restarts begin once it listens (see release): a crash while starting must fail the deploy, not loop.
      restartPolicy: "no",
      init: true,
    });
    log(`==> Starting container ${containerId.slice(0, 12)} (${app.memoryMB} MB, port ${port})`);
    await driver.startContainer(containerId);
    return containerId;
  }

  private async waitForContainer(driver: DockerDriver, app: AppRow, containerId: string, log: (line: string) => void) {
    const port = app.exposePort ?? DEFAULT_EXPOSE_PORT;
    const stillRunning = async () => (await driver.inspectContainer(containerId)).running;
    const host = (await driver.inspectContainer(containerId)).networks[workspaceNetworkName(app.workspaceId)];
    const outcome = host
      ? await waitUntilListening({ host, port, timeoutMs: START_TIMEOUT_MS, stillRunning })
      : (await stillRunning())
        ? null
        : "exited";
    if (outcome === null) throw new ReleaseFailed("the container got no address on the workspace network");
    if (outcome === "listening") return { host: host!, port };
    const lines = await driver.logs(containerId, { tail: 20, timestamps: false }).catch(() => []);
    if (lines.length) log("==> Last lines of the app's output:");
    for (const line of lines) log(`    ${line.text}`);
    if (outcome === "exited") {
      const { exitCode } = await driver.inspectContainer(containerId);
      throw new ReleaseFailed(`the app exited with code ${exitCode} before listening on port ${port}`);
    }
    throw new ReleaseFailed(`the app did not accept connections on port ${port} within ${START_TIMEOUT_MS / 1000} s`);
  }

  private async afterFailure(appId: string, reason: string) {
    const app = this.app(appId);
    if (!app || app.status === "deleting") return;
    const serving = app.containerId
      ? await this.ctx.machines.get(app.machineId).inspectContainer(app.containerId).then((state) => state.running, () => false)
      : false;
    if (serving) this.setStatus(appId, "running", `${reason}; still serving build ${app.currentBuildId}`);
    else this.setStatus(appId, "failed", reason);
  }

}
