// Apps: deploy from an uploaded ZIP (a new app, or a new release of the app with that name),
// settings, env vars, lifecycle, logs and deletion; builds are read in ./builds.ts, routes and
// restarts recovered in ./recovery.ts; settings changes decided in ./settings.ts, queued lifecycle
// steps in ./lifecycle.ts, the disk quota's app accounting in ./source-disk.ts. Docker work goes
// through the Deployer's per-app queue, so two changes to one app never race.
import { and, eq } from "drizzle-orm";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { apps } from "../db/schema";
import { ApiError, rethrowDiskFull } from "../http/errors";
import { readMultipart } from "../http/multipart";
import type { Principal } from "../http/auth";
import { extractZip } from "./archive";
import { invalid, parseDeployFields } from "./deploy-form";
import { UploadSlots, UPLOADS_PER_WORKSPACE } from "./upload-slots";
import { inspectEnvInZip } from "./inspect-env";
import { deleteEnvVar, mergeEnvVars, readEnvVars, validateEnvVars } from "./env-vars";
import { Deployer, type AppRow, type AppsContext } from "./deployer";
import type { Static } from "@sinclair/typebox";
import { AppSchema, SERVING_STATUSES, type AppStatus } from "./model";
import { AppBuilds } from "./builds";
import { AppRecords } from "./app-records";
import { RepositoryDeploys } from "./repository/service";
import { AppDomains } from "./domains/service";
import { AppRecovery } from "./recovery";
import { AppRollbacks } from "./rollback";
import { appView, type PublicAddresses } from "./view";
import { HealthHistory } from "./health/history";
import { RestartBackoff } from "./health/backoff";
import { HealthMonitor } from "./health/monitor";
import { CrashSupervisor } from "./health/supervisor";
import { routePolicyOf, sameRateLimits } from "./rate-limits";
import { assertWithinQuota } from "../quotas/limits";
import { MIN_ENTRY_BYTES, workspaceUsage, WorkspaceDisk } from "../quotas/usage";
import { AppSourceDisk } from "./source-disk";
import { releaseCurrentBuild, removeEverything, statusAfterFailedDelete, stopContainer } from "./lifecycle";
import { checkSettingsInput, restartForChange, settingsAfter, settingsRestart, type SettingsInput } from "./settings";
import { releaseStrategyOf, Volumes, type VolumePlan } from "../volumes/service";
import type { VolumeMount } from "../volumes/validation";

export type { SettingsInput } from "./settings";

export class AppsService {
  readonly deployer: Deployer;
  /** Build history, logs and cancelling. */
  readonly builds: AppBuilds;
  /** The reconciler's owner of app containers, proxy routes, and recovery after a platform restart. */
  readonly recovery: AppRecovery;
  /** App rows and build entries of deploys (./app-records.ts). */
  readonly records: AppRecords;
  /** Releasing an earlier build again (./rollback.ts). */
  readonly rollbacks: AppRollbacks;
  /** The app's own domains (./domains). */
  readonly domains: AppDomains;
  /** Deploys from a git repository, pushes and deploy hooks (./repository). */
  readonly repository: RepositoryDeploys;
  /** The recent probes of each app's health check (./health). */
  readonly health = new HealthHistory();
  /** The waits between the restarts the platform makes itself (./health). */
  readonly restartBackoff: RestartBackoff;
  /** Probes the running apps (./health/monitor.ts); started by src/main.ts. */
  readonly healthMonitor: HealthMonitor;
  /** Restarts the containers of autoRestart apps that exit, and spots crash loops (./health/supervisor.ts); started by src/main.ts. */
  readonly crashSupervisor: CrashSupervisor;
  /** The workspace's volumes and which app mounts each (src/volumes). */
  readonly volumes: Volumes;
  private readonly uploadSlots = new UploadSlots(UPLOADS_PER_WORKSPACE);
  private readonly deletions = new Set<Promise<void>>();
  /** The disk quota's accounting; app sources and build logs are counted here, backups register beside them. */
  readonly disk = new WorkspaceDisk();
  /** App sources and build logs in the disk quota (./source-disk.ts). */
  private readonly sourceDisk: AppSourceDisk;
  /** Port of the public proxy in app URLs: the configured one, or the one bound when it was 0. */
  proxyPort: number;
  /** Port of its HTTPS listener once it is open (0 until then: URLs stay http). */
  tlsPort = 0;
  /** App URLs and certificates (./view.ts). */
  readonly addresses: PublicAddresses = {
    urlOf: (host) => {
      const https = this.tlsPort > 0 && this.ctx.certificates.servesHttps(host);
      const port = https ? this.tlsPort : this.proxyPort;
      return `${https ? "https" : "http"}://${host}${port === (https ? 443 : 80) ? "" : `:${port}`}`;
    },
    certificateOf: (host) => this.ctx.certificates.statusOf(host),
  };

  constructor(private readonly ctx: AppsContext) {
    this.deployer = new Deployer(ctx, (workspaceId) => this.assertDiskRoom(workspaceId, MIN_ENTRY_BYTES));
    this.volumes = new Volumes(ctx.db, ctx.machines, this.disk, ctx.config.volumeSizeRefreshSeconds, () => ctx.config.quotas.diskMB);
    this.records = new AppRecords(ctx, this.volumes);
    this.repository = new RepositoryDeploys(ctx, this);
    this.builds = new AppBuilds(ctx, this.deployer, (workspaceId, appId) => this.get(workspaceId, appId));
    this.recovery = new AppRecovery(ctx, this.deployer, (app) => this.removeEverything(app));
    this.rollbacks = new AppRollbacks(ctx, this.deployer, this.records, (workspaceId, appId) => this.changeable(workspaceId, appId), (app, from, buildId) => {
      const source = from.commitSha ? this.repository.sourceFetch(app.id, buildId, { commit: from.commitSha }) : undefined;
      this.deployer.schedule(app.id, (signal) => this.deployer.buildAndRelease(app.id, buildId, source, signal));
    });
    this.restartBackoff = new RestartBackoff(ctx.config.health.restartBackoffMaxSeconds * 1000);
    this.healthMonitor = new HealthMonitor(
      ctx,
      this.deployer,
      this.health,
      this.restartBackoff,
      (appId) => this.crashSupervisor.isDown(appId),
      (appId, signal) => this.releaseCurrentBuild(appId, signal),
      (appId) => this.recovery.restoreRoute(appId),
    );
    this.crashSupervisor = new CrashSupervisor(ctx, this.deployer, this.restartBackoff, (appId) => this.recovery.restoreRoute(appId), (appId, signal) =>
      this.releaseCurrentBuild(appId, signal).then(() => {}),
    );
    this.proxyPort = ctx.config.proxyPort;
    this.domains = new AppDomains(ctx, (workspaceId, appId) => this.get(workspaceId, appId), this.addresses, ctx.dns);
    this.domains.routeAll();
    this.sourceDisk = new AppSourceDisk(ctx, this.disk, (workspaceId) => this.list(workspaceId));
  }

  /** What the apps' parts share, for the image deploys (./images/deploy.ts). */
  get context(): AppsContext {
    return this.ctx;
  }

  publicApp(app: AppRow): Static<typeof AppSchema> {
    return { ...appView(app, this.ctx.config, this.addresses, this.health.lastProbe(app.id)), volumes: this.volumes.appView(app.id), releaseStrategy: releaseStrategyOf(this.ctx.db, app) };
  }


  list(workspaceId: string) {
    return this.ctx.db.select().from(apps).where(eq(apps.workspaceId, workspaceId)).orderBy(apps.createdAt).all();
  }

  /** An app of the workspace; another workspace's app is "not found", never "forbidden". */
  get(workspaceId: string, appId: string): AppRow {
    const app = this.find(workspaceId, appId);
    if (!app) throw new ApiError("NOT_FOUND", "App not found");
    return app;
  }

  /** An app about to get a new container: 409 BUSY while one of its volumes is being restored. */
  private changeable(workspaceId: string, appId: string): AppRow {
    const app = this.get(workspaceId, appId);
    this.volumes.assertNoRestoreRunning(workspaceId, app.id);
    return app;
  }

  /** The app, or null when the workspace has no such app (or it is being deleted). */
  find(workspaceId: string, appId: string): AppRow | null {
    const app = this.ctx.db.select().from(apps).where(and(eq(apps.id, appId), eq(apps.workspaceId, workspaceId))).get();
    return app && app.status !== "deleting" ? app : null;
  }

  /** POST /api/apps/deploy: streams the upload to disk, checks it, and starts the build in the background. */
  async deploy(principal: Principal, request: Request) {
    const workspaceId = principal.workspaceId;
    // Before the slot is taken: making the uploads folder may fail (a full disk) with nothing to give back.
    const upload = this.uploadPath();
    const staging = this.ctx.storage.stagingDir();
    const releaseSlot = this.uploadSlots.take(workspaceId);
    let releaseDisk = () => {};
    try {
      const { fields, file } = await readMultipart(request, {
        fileField: "file",
        destinationFile: upload,
        maxBytes: this.ctx.config.uploads.maxUploadBytes,
      }).catch(rethrowDiskFull("the uploaded archive"));
      const input = parseDeployFields(fields);
      if (!file) invalid("file", "a ZIP archive of the app is required");
      const machineId = this.placeWithVolumes(workspaceId, input);
      await this.volumes.assertRoom(workspaceId, this.records.planVolumes(workspaceId, input, machineId));
      const { chargedBytes } = await extractZip(upload, staging, this.ctx.config.uploads).catch(rethrowDiskFull("the archive's files"));
      releaseDisk = await this.sourceDisk.reserveRoom(workspaceId, this.records.findByName(workspaceId, input.name)?.id, chargedBytes);
      // From here to the end nothing awaits: no other request can slip in between checks and writes.
      const { appId, existing, reattached } = this.records.accept(workspaceId, input, machineId, {}, (app, subdomain) => this.moveRoute(app, subdomain));
      const buildId = this.records.newBuild(appId, existing ? "redeploy" : "upload");
      this.records.logReattached(appId, buildId, reattached);
      this.endRestartRun(appId);
      // The tree becomes the app's source when its build starts, never under a build still reading the old one.
      const newSource = this.ctx.storage.keepForBuild(appId, buildId, staging);
      this.sourceDisk.sourceReplaced(appId, chargedBytes);
      this.ctx.buildLogs.append(appId, buildId, `==> Upload of ${file.size} bytes accepted (${file.filename || "archive"})`);
      this.deployer.schedule(appId, (signal) => this.deployer.buildAndRelease(appId, buildId, newSource, signal));
      return { app: this.publicApp(this.get(workspaceId, appId)), buildId, created: !existing, reattached };
    } finally {
      // Accepted: the app's recorded source size counts it now. Refused: it never counted.
      releaseDisk();
      // The staging tree is gone already once kept for the build; still there when a later step
      // failed. Deleted off the event loop, with the upload slot held until it is gone, so a
      // workspace cannot pile up deletions.
      await Promise.all([rm(upload, { force: true }), rm(staging, { recursive: true, force: true })]).finally(releaseSlot);
    }
  }

  /** The machine a deploy goes to: the one asked for, else where the volumes it lists are, else the automatic choice. */
  placeWithVolumes(workspaceId: string, input: { machineId?: string; volumes?: VolumeMount[] }): string {
    return this.ctx.machines.place(input.machineId || this.volumes.machineOfVolumes(workspaceId, input.volumes)).machineId;
  }

  /** Where an upload is written; 507 when its folder cannot be made for a full disk. */
  private uploadPath(): string {
    try {
      return join(this.ctx.storage.uploadsDir(), `${crypto.randomUUID()}.zip`);
    } catch (error) {
      return rethrowDiskFull("the uploaded archive")(error);
    }
  }

  /** POST /api/apps/inspect-env: the variables an uploaded app needs, without deploying anything. */
  async inspectEnv(principal: Principal, request: Request) {
    const upload = this.uploadPath();
    const releaseSlot = this.uploadSlots.take(principal.workspaceId);
    try {
      const { file } = await readMultipart(request, { fileField: "file", destinationFile: upload, maxBytes: this.ctx.config.uploads.maxUploadBytes }).catch(
        rethrowDiskFull("the uploaded archive"),
      );
      if (!file) invalid("file", "a ZIP archive is required");
      return await inspectEnvInZip(upload, this.ctx.config.uploads, this.ctx.storage.uploadsDir());
    } finally {
      await rm(upload, { force: true }).finally(releaseSlot);
    }
  }

  async updateSettings(workspaceId: string, appId: string, input: SettingsInput) {
    // The only await before the writes: the app is read (and its list checked again) after it.
    if (input.volumes) await this.volumes.assertRoom(workspaceId, this.planAppVolumes(this.get(workspaceId, appId), input.volumes));
    const app = this.changeable(workspaceId, appId);
    checkSettingsInput(app, input);
    if (input.name !== undefined && input.name !== app.name) this.records.assertNameFree(workspaceId, input.name);
    if (input.subdomain && this.records.subdomainTaken(input.subdomain, app.id)) {
      throw new ApiError("SUBDOMAIN_TAKEN", `Subdomain '${input.subdomain}' is taken`);
    }
    const volumePlan = input.volumes && this.planAppVolumes(app, input.volumes);
    const next = settingsAfter(app, input);
    assertWithinQuota("memoryMB", workspaceUsage(this.ctx.db, workspaceId).memoryMB, next.memoryMB - app.memoryMB, this.ctx.config.quotas.memoryMB);
    const mountsChanged = volumePlan ? volumePlan.apply(app.id) : false;
    const { rebuild, restart } = settingsRestart(app, next, mountsChanged);
    this.ctx.db.update(apps).set({ ...next, updatedAt: Date.now() }).where(eq(apps.id, app.id)).run();
    if (next.subdomain !== app.subdomain) this.moveRoute(app, next.subdomain);
    else if (next.subdomain && (!sameRateLimits(next, app) || next.httpsRedirect !== app.httpsRedirect || next.hsts !== app.hsts)) {
      // The route carries the limits and HTTPS rules: the next request through the proxy follows the new ones.
      this.ctx.proxyRoutes.setPolicy(next.subdomain, routePolicyOf(next, this.ctx.config.proxyRateLimits));
    }
    const result = this.restartForChange(app, rebuild ? "settings" : null, restart);
    return { app: this.publicApp(this.get(workspaceId, appId)), ...result };
  }

  private planAppVolumes(app: AppRow, mounts: VolumeMount[]): VolumePlan {
    return this.volumes.plan({ workspaceId: app.workspaceId, appId: app.id, machineId: app.machineId, runtime: app.runtime }, mounts);
  }

  /**
   * POST /api/volumes/{id}/attach: a detached volume joins the app's list (at `mountPath`, else the
   * path it had) and the app restarts with it, as after a settings change.
   */
  async attachVolume(workspaceId: string, volumeId: string, appId: string, mountPath: string | undefined) {
    const volume = this.volumes.get(workspaceId, volumeId);
    const app = this.get(workspaceId, appId);
    return this.updateSettings(workspaceId, appId, { volumes: this.volumes.withAttached(app, volume, mountPath) });
  }

  private restartForChange(app: AppRow, rebuildTrigger: string | null, restart: boolean) {
    return restartForChange(this.ctx, this.deployer, this.records, app, rebuildTrigger, restart);
  }

  /** The old subdomain stops routing at once; the new one routes to the container serving now (a release in progress routes it at its switch). */
  moveRoute(app: AppRow, subdomain: string | null) {
    if (app.subdomain) this.ctx.proxyRoutes.vacate(app.subdomain);
    this.domains.subdomainChanged(app.id, subdomain);
    this.ctx.certificates.hostsChanged();
    if (subdomain && app.containerId && SERVING_STATUSES.has(app.status)) void this.recovery.restoreRoute(app.id);
  }

  getEnv(workspaceId: string, appId: string) {
    return readEnvVars(this.ctx.db, this.ctx.secrets, this.get(workspaceId, appId).id);
  }

  putEnv(workspaceId: string, appId: string, envVars: Record<string, string>) {
    const app = this.changeable(workspaceId, appId);
    const changed = mergeEnvVars(this.ctx.db, this.ctx.secrets, app.id, validateEnvVars(envVars));
    const { restarted } = this.restartForChange(app, null, changed);
    return { envVars: readEnvVars(this.ctx.db, this.ctx.secrets, app.id), restarted };
  }

  /** Unsets one variable (404 when the app has none of that name); a running app restarts without it. */
  deleteEnv(workspaceId: string, appId: string, name: string) {
    const app = this.changeable(workspaceId, appId);
    if (!deleteEnvVar(this.ctx.db, app.id, name)) throw new ApiError("NOT_FOUND", `The app has no variable ${name}`);
    const { restarted } = this.restartForChange(app, null, true);
    return { envVars: readEnvVars(this.ctx.db, this.ctx.secrets, app.id), restarted };
  }

  private setStatus(appId: string, status: AppStatus, statusReason: string | null = null) {
    this.ctx.db.update(apps).set({ status, statusReason, updatedAt: Date.now() }).where(eq(apps.id, appId)).run();
  }

  /** Start and restart need a build to run; during an app's first build the start is queued behind it. */
  private assertStartable(app: AppRow) {
    if (!app.currentBuildId && !this.deployer.busy(app.id)) {
      throw new ApiError("NOT_DEPLOYED", "The app has no successful build to start; deploy it first");
    }
  }

  /**
   * POST start: answers at once. Idle, the app is `starting` and a container of the current build
   * starts in the background; a running app is left as it is. Behind work in progress it is queued.
   */
  start(workspaceId: string, appId: string) {
    const app = this.changeable(workspaceId, appId);
    this.assertStartable(app);
    this.endRestartRun(app.id);
    const queued = this.deployer.busy(app.id);
    if (!queued && app.status === "running") return { app: this.publicApp(app), queued };
    if (!queued) this.setStatus(app.id, "starting");
    this.deployer.schedule(app.id, async (signal) => {
      if (this.row(app.id)?.status !== "running") await this.releaseCurrentBuild(app.id, signal);
    });
    return { app: this.publicApp(this.get(workspaceId, appId)), queued };
  }

  /**
   * POST restart: like start, but always a fresh container; the old one serves until the new one
   * listens. A volume restore restarts the app it stopped `byRestore`, while it still counts as running.
   */
  restart(workspaceId: string, appId: string, { byRestore = false } = {}) {
    const app = byRestore ? this.get(workspaceId, appId) : this.changeable(workspaceId, appId);
    this.assertStartable(app);
    this.endRestartRun(app.id);
    const queued = this.deployer.busy(app.id);
    if (!queued) this.setStatus(app.id, "starting");
    this.deployer.schedule(app.id, (signal) => this.releaseCurrentBuild(app.id, signal));
    return { app: this.publicApp(this.get(workspaceId, appId)), queued };
  }

  /** A manual start, restart or deploy: the platform's own restarts start afresh (no backoff, no crash loop). */
  private endRestartRun(appId: string) {
    this.restartBackoff.forget(appId);
    this.crashSupervisor.forget(appId);
  }

  /** Answers why it did not serve (null once it does). */
  private releaseCurrentBuild(appId: string, signal: AbortSignal): Promise<string | null> {
    return releaseCurrentBuild(this.ctx, this.deployer, appId, signal);
  }

  /**
   * POST stop: answers at once with the app `stopping`. It preempts a build or release in progress
   * (the build is cancelled; a new container not yet serving is removed) and ends `stopped`.
   */
  stop(workspaceId: string, appId: string) {
    const app = this.get(workspaceId, appId);
    this.deployer.preempt(app.id, "the app was stopped");
    this.setStatus(app.id, "stopping");
    this.deployer.schedule(app.id, async (signal) => {
      const current = this.row(app.id);
      if (!current || current.status === "deleting" || signal.aborted) return;
      const restoreRouteIfRunning = () => {
        if (this.row(app.id)?.status === "running") void this.recovery.restoreRoute(app.id);
      };
      if (!(await stopContainer(this.ctx, this.deployer, current, signal, restoreRouteIfRunning))) return;
      if (!signal.aborted) this.setStatus(app.id, "stopped");
    });
    return { app: this.publicApp(this.get(workspaceId, appId)) };
  }

  /**
   * DELETE: answers at once; the app is 404 from then on. It preempts work in progress, then its
   * containers, images, files and rows are removed in the background. When that fails (the engine
   * is unreachable) the app comes back with statusReason saying so, and DELETE can be sent again.
   */
  delete(workspaceId: string, appId: string, { deleteVolumes = false } = {}) {
    const app = this.get(workspaceId, appId);
    if (deleteVolumes) for (const volume of this.volumes.ofApp(app.id)) this.volumes.assertDeletable(volume);
    this.deployer.preempt(app.id, "the app was deleted");
    this.setStatus(app.id, "deleting");
    this.ctx.db.update(apps).set({ deleteVolumes }).where(eq(apps.id, app.id)).run();
    if (app.subdomain) this.ctx.proxyRoutes.vacate(app.subdomain);
    const deletion = this.deployer.enqueue(app.id, async () => {
      try {
        await this.removeEverything(app, { deleteVolumes });
      } catch (error) {
        const { serving, status } = await statusAfterFailedDelete(this.ctx, app, this.row(app.id) ?? app);
        this.setStatus(app.id, status, `Delete failed: ${(error as Error).message}; send DELETE again`);
        if (serving) void this.recovery.restoreRoute(app.id);
      }
    });
    this.deletions.add(deletion);
    void deletion.finally(() => this.deletions.delete(deletion));
    return { app: this.publicApp({ ...app, status: "deleting" }) };
  }

  /** Settles once the deletions in progress have (a graceful shutdown lets them finish). */
  deletionsDone(): Promise<unknown> {
    return Promise.all(this.deletions);
  }

  private row(appId: string): AppRow | undefined {
    return this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
  }

  private removeEverything(app: AppRow, { deleteVolumes = app.deleteVolumes } = {}) {
    const { volumes, domains, sourceDisk, health } = this;
    return removeEverything(this.ctx, { volumes, domains, sourceDisk, health }, app, deleteVolumes);
  }

  /**
   * POST redeploy: a build of the kept source tree as it is now (edited through the file system
   * API), or for a repository app of its branch head unless `source` is `files`; released with the
   * same zero-downtime rules as a deploy.
   */
  redeploy(workspaceId: string, appId: string, source?: "repository" | "files") {
    const app = this.changeable(workspaceId, appId);
    if (source === "repository" && !app.repoOwner) throw new ApiError("VALIDATION_FAILED", "source=repository: the app was not deployed from a repository");
    if (app.repoOwner && source !== "files") {
      const { buildId } = this.repository.deployHead(app, "redeploy", `Redeploy of ${app.repoOwner}/${app.repoName} branch ${app.repoBranch}`);
      return { app: this.publicApp(this.get(workspaceId, appId)), buildId };
    }
    this.endRestartRun(app.id);
    const buildId = this.records.newBuild(app.id, "redeploy");
    this.ctx.buildLogs.append(app.id, buildId, app.runtime === "image" ? `==> Redeploy: ${app.image} is pulled again` : "==> Redeploy of the kept source tree");
    this.deployer.schedule(app.id, (signal) => this.deployer.buildAndRelease(app.id, buildId, undefined, signal));
    return { app: this.publicApp(this.get(workspaceId, appId)), buildId };
  }

  /**
   * The source tree was edited: the app says so until a build reads it. Its recorded size moves by
   * `deltaBytes` when the edit knows it, else it is measured again when next needed.
   */
  sourceChanged(appId: string, deltaBytes?: number) {
    this.sourceDisk.sourceChanged(appId, deltaBytes);
  }

  /** 409 QUOTA_EXCEEDED when `newBytes` more would take the workspace past PLATFORM_QUOTA_DISK_MB (a tree replacing `replacedAppId`'s is counted instead of it). */
  async assertDiskRoom(workspaceId: string, newBytes: number, replacedAppId?: string) {
    if (newBytes <= 0) return;
    (await this.sourceDisk.reserveRoom(workspaceId, replacedAppId, newBytes))();
  }

  /**
   * As assertDiskRoom, with the bytes kept counted until the returned function is called (once the
   * change that adds them is recorded), so that changes checked at the same time see each other.
   */
  async reserveDiskGrowth(workspaceId: string, newBytes: number): Promise<() => void> {
    if (newBytes <= 0) return () => undefined;
    return this.sourceDisk.reserveRoom(workspaceId, undefined, newBytes);
  }

  /** Housekeeping prunes a finished build: its log goes, and stops counting against the disk quota. */
  removeBuildLog(appId: string, buildId: string) {
    this.ctx.buildLogs.remove(appId, buildId);
  }

  /** The app's source tree was replaced by one of `bytes` (a repository checkout). */
  sourceReplaced(appId: string, bytes: number) {
    this.sourceDisk.sourceReplaced(appId, bytes);
  }
}
