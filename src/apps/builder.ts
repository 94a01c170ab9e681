// Builds, bounded. A build waits for a slot (./build-queue.ts: per workspace and platform-wide),
// then runs the app's install and build steps in a container the platform makes itself, hardened
// like an app's (no capabilities, no new privileges, memory, pids and CPU limits), with the source
// copied in and its output streamed to the build log (capped there, and read no faster than
// OUTPUT_BYTES_PER_SECOND). A timeout or a cancel kills it. The container is committed and the
// engine's builder makes the app image from /app of that commit with a Dockerfile that runs
// nothing. The build container and the committed image are removed whatever the outcome.
// An app whose builder is its own Dockerfile is built by the engine's builder instead, with the
// same limits (./dockerfile-build.ts).
import { readFileSync } from "node:fs";
import { and, eq } from "drizzle-orm";
import { apps, builds } from "../db/schema";
import { BuildFailed, DockerNotFound, type DockerDriver } from "../docker/driver";
import { LABEL_APP, LABEL_BUILD, LABEL_MANAGED, LABEL_WORKSPACE, type ContainerSpec } from "../docker/container-spec";
import type { Frame } from "../docker/stream";
import { tarStream, type TarEntry } from "../docker/tar";
import { ensureWorkspaceNetwork } from "../docker/workspace-network";
import { ApiError } from "../http/errors";
import { redact } from "../crypto/redact";
import { DetectionFailed, type BuildPlan } from "./detect";
import { buildDockerfile, chooseBuilder } from "./dockerfile-build";
import {
  BUILD_CA_PATH,
  BUILD_TIME_ENV_PREFIXES,
  buildEnv,
  buildScript,
  generateDockerfile,
  hasBuildSteps,
  platformFiles,
  type BuildSettings,
} from "./dockerfile";
import { readEnvVars } from "./env-vars";
import { contextEntries, sourceFiles } from "./sources";
import { BuildSlots } from "./build-queue";
import { DEFAULT_EXPOSE_PORT, type BuilderSetting } from "./model";
import { pullAppImage, removePendingImageNames } from "./images/pull";
import { Registries } from "../registries/service";
import type { AppRow, AppsContext } from "./deployer";

/** Past this rate the build's output is read more slowly, and the build waits: a flood can't take the platform's CPU. */
const OUTPUT_BYTES_PER_SECOND = 2 * 1024 * 1024;
/** A "line" this long without a newline is written as it is. */
const MAX_PARTIAL_LINE = 64 * 1024;
/** How long a cancel waits for the build to stop before it answers anyway. */
const CANCEL_WAIT_MS = 10_000;

const imageTag = (appId: string, buildId: string) => `platform-app-${appId.toLowerCase()}:${buildId.toLowerCase()}`;
/** The committed build container, only until the app image is made from it. */
const stepsImage = (appId: string, buildId: string) => `platform-build-${appId.toLowerCase()}:${buildId.toLowerCase()}`;

/** Ends a build early; `status` is what the build is recorded as. */
class BuildStopped extends Error {
  constructor(
    readonly status: "canceled" | "failed",
    message: string,
  ) {
    super(message);
  }
}

/**
 * Makes a build's new source tree once the build runs (a repository clone): answers the folder,
 * which becomes the app's source tree. A failure throws BuildFailed with a message for the log.
 */
export type SourceFetch = (log: (line: string) => void, signal: AbortSignal) => Promise<string>;

export type BuildOutcome =
  | { image: string; log: (line: string) => void }
  /** No image; `failure` is the app's statusReason, null when the app needs no change (deleted, preempted). */
  | { failure: string | null };

interface RunningBuild {
  appId: string;
  controller: AbortController;
  settled: Promise<void>;
}

/** The parts of a registry URL that are credentials: user:password (or a token as user) and token parameters. */
export function registrySecrets(registry: string | undefined): string[] {
  if (!registry) return [];
  const secrets: string[] = [];
  const decoded = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      return text;
    }
  };
  const userInfo = /^[a-z][a-z0-9+.-]*:\/\/([^/?#@\s]+)@/i.exec(registry)?.[1];
  if (userInfo) {
    const password = userInfo.includes(":") ? userInfo.slice(userInfo.indexOf(":") + 1) : userInfo;
    secrets.push(userInfo, password, decoded(password));
  }
  for (const match of registry.matchAll(/(?:_authToken|_auth|_password|token|password)=([^&;#\s]+)/gi)) secrets.push(match[1]!, decoded(match[1]!));
  return secrets;
}

/** Refuses (throws 409 QUOTA_EXCEEDED) a build of the workspace that has no room left on the disk for its log. */
export type BuildRoomCheck = (workspaceId: string) => Promise<void>;

export class Builder {
  private readonly running = new Map<string, RunningBuild>();
  private readonly slots: BuildSlots;

  constructor(
    private readonly ctx: AppsContext,
    private readonly checkRoom: BuildRoomCheck,
  ) {
    this.slots = new BuildSlots({ perWorkspace: ctx.config.buildsPerWorkspace, total: ctx.config.buildsMax });
  }

  /** 1 for the next build to get a slot…; null when the build does not wait for one. */
  queuePosition(buildId: string): number | null {
    return this.slots.position(buildId);
  }

  /**
   * Cancels a build that has not finished: one running is killed, one waiting is dropped. Answers
   * false for a finished build; otherwise once the build has stopped (or after CANCEL_WAIT_MS).
   */
  async cancel(appId: string, buildId: string, reason: string): Promise<boolean> {
    const running = this.running.get(buildId);
    if (running) {
      running.controller.abort(new BuildStopped("canceled", reason));
      await Promise.race([running.settled, Bun.sleep(CANCEL_WAIT_MS)]);
      return true;
    }
    // Still behind earlier work of its app: recorded now, skipped when its turn comes.
    const dropped = this.ctx.db
      .update(builds)
      .set({ status: "canceled", error: reason, finishedAt: Date.now() })
      .where(and(eq(builds.id, buildId), eq(builds.appId, appId), eq(builds.status, "queued")))
      .returning()
      .get();
    if (!dropped) return false;
    this.ctx.buildLogs.append(appId, buildId, `==> Build ${reason}`);
    this.ctx.buildLogs.finish(buildId);
    return true;
  }

  /** Containers, committed images and pulled names a build interrupted by a platform restart left behind. */
  async removeLeftovers(app: AppRow, buildId: string): Promise<void> {
    const driver = this.ctx.machines.get(app.machineId);
    for (const container of await driver.listContainers({ [LABEL_BUILD]: buildId })) await driver.removeContainer(container.id);
    for (const image of await driver.listImages({ [LABEL_BUILD]: buildId })) await driver.removeImage(image.id);
    await removePendingImageNames(this.ctx, app, buildId);
  }

  /**
   * Runs the build `buildId` of the app: waits for a slot, makes `newSource` (an accepted upload, or
   * the folder a SourceFetch makes) the source tree, builds. `preempt` is the app queue's signal (a stop or delete ends the build).
   * Records the build's outcome; on failure the log is finished here, on success by the caller.
   */
  async build(appId: string, buildId: string, newSource?: string | SourceFetch, preempt?: AbortSignal): Promise<BuildOutcome> {
    const app = this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
    const row = this.ctx.db.select().from(builds).where(eq(builds.id, buildId)).get();
    if (!app || app.status === "deleting" || row?.status !== "queued" || preempt?.aborted) {
      if (typeof newSource === "string") void this.ctx.storage.discard(newSource);
      if (row?.status === "queued" && app && app.status !== "deleting") {
        const reason = `canceled: ${reasonOf(preempt?.reason)}`;
        this.ctx.buildLogs.append(appId, buildId, `==> Build ${reason}`);
        this.record(appId, buildId, "canceled", reason);
      }
      this.ctx.buildLogs.finish(buildId);
      const canceledByUser = app && app.status !== "deleting" && row?.status === "canceled";
      return { failure: canceledByUser ? `Build ${buildId} ${row.error ?? "canceled"}` : null };
    }
    const envVars = readEnvVars(this.ctx.db, this.ctx.secrets, appId);
    const secrets = [...Object.values(envVars), ...registrySecrets(this.ctx.config.buildNpmRegistry)];
    const log = (line: string) => this.ctx.buildLogs.append(appId, buildId, redact(line, secrets));
    const output = (text: string) => this.ctx.buildLogs.appendOutput(appId, buildId, redact(text, secrets));

    const controller = new AbortController();
    let settle!: () => void;
    this.running.set(buildId, { appId, controller, settled: new Promise<void>((resolve) => (settle = resolve)) });
    const onPreempt = () => controller.abort(new BuildStopped("canceled", `canceled: ${reasonOf(preempt?.reason)}`));
    preempt?.addEventListener("abort", onPreempt, { once: true });
    this.ctx.db
      .update(apps)
      .set({ status: "building", statusReason: app.status === "running" ? app.statusReason : null, updatedAt: Date.now() })
      .where(eq(apps.id, appId))
      .run();
    let releaseSlot: (() => void) | undefined;
    let timer: Timer | undefined;
    const timeoutSeconds = this.ctx.config.buildTimeoutSeconds;
    try {
      const slot = this.slots.acquire(app.workspaceId, buildId, controller.signal);
      const position = this.slots.position(buildId);
      if (position !== null) {
        log(`==> Queued (position ${position}): at most ${this.ctx.config.buildsPerWorkspace} builds run at once per workspace, ${this.ctx.config.buildsMax} on the platform`);
      }
      releaseSlot = await slot;
      // Logs count against the disk quota: a workspace at its limit does not grow through builds.
      await this.checkRoom(app.workspaceId);
      const startedAt = Date.now();
      timer = setTimeout(() => controller.abort(new BuildStopped("failed", `timed out after ${timeoutSeconds} s`)), timeoutSeconds * 1000);
      this.ctx.db.update(builds).set({ status: "building" }).where(eq(builds.id, buildId)).run();
      if (typeof newSource === "function") newSource = await newSource(log, controller.signal);
      if (newSource) this.ctx.storage.replaceSource(appId, newSource);
      newSource = undefined;
      const image = await this.makeImage(app, buildId, envVars, { log, output }, controller.signal);
      if (controller.signal.aborted) throw controller.signal.reason;
      log(`==> Image ${image} built in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
      this.ctx.db.update(builds).set({ status: "succeeded", image, finishedAt: Date.now() }).where(eq(builds.id, buildId)).run();
      return { image, log };
    } catch (error) {
      const stopped = controller.signal.aborted ? controller.signal.reason : error;
      let status: "failed" | "canceled" = "failed";
      let reason: string;
      if (stopped instanceof BuildStopped) {
        status = stopped.status;
        reason = stopped.message;
      } else if (stopped instanceof ApiError) {
        reason = `${stopped.code}: ${stopped.message}`;
      } else if (stopped instanceof BuildFailed || stopped instanceof DetectionFailed) {
        reason = stopped.message;
      } else {
        reason = "internal error";
        console.error(`[apps] build ${buildId} of ${appId}:`, error);
      }
      log(status === "canceled" ? `==> Build ${reason}` : `==> Build failed: ${reason}`);
      this.record(appId, buildId, status, reason);
      this.ctx.buildLogs.finish(buildId);
      if (preempt?.aborted) return { failure: null };
      return { failure: status === "canceled" ? `Build ${buildId} ${reason}` : `Build ${buildId} failed: ${reason}` };
    } finally {
      clearTimeout(timer);
      releaseSlot?.();
      preempt?.removeEventListener("abort", onPreempt);
      if (typeof newSource === "string") void this.ctx.storage.discard(newSource);
      this.running.delete(buildId);
      settle();
    }
  }

  private record(appId: string, buildId: string, status: "failed" | "canceled", reason: string) {
    this.ctx.db
      .update(builds)
      .set({ status, error: reason, finishedAt: Date.now() })
      .where(and(eq(builds.id, buildId), eq(builds.appId, appId)))
      .run();
  }

  private async makeImage(
    app: AppRow,
    buildId: string,
    envVars: Record<string, string>,
    logs: { log: (line: string) => void; output: (text: string) => void },
    signal: AbortSignal,
  ): Promise<string> {
    const { config } = this.ctx;
    const { log } = logs;
    if (app.runtime === "image") return pullAppImage({ ctx: this.ctx, app, buildId, tag: imageTag(app.id, buildId), log, signal });
    const driver = this.ctx.machines.get(app.machineId);
    const sourceDir = this.ctx.storage.sourceDir(app.id);
    // This build reads the tree as it is now: edits from here on are the next build's.
    this.ctx.db.update(apps).set({ filesChangedAt: null }).where(eq(apps.id, app.id)).run();
    const choice = chooseBuilder(await sourceFiles(sourceDir), { builder: app.builder as BuilderSetting, runtime: app.runtime, startupCommand: app.startupCommand });
    for (const line of choice.logLines) log(line);
    const port = app.exposePort ?? DEFAULT_EXPOSE_PORT;
    const caBundle = config.buildCaFile ? readFileSync(config.buildCaFile, "utf8") : undefined;
    const buildTimeVars = Object.fromEntries(Object.entries(envVars).filter(([name]) => BUILD_TIME_ENV_PREFIXES.some((prefix) => name.startsWith(prefix))));
    const labels = { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: app.workspaceId, [LABEL_APP]: app.id, [LABEL_BUILD]: buildId };
    const tag = imageTag(app.id, buildId);
    if (choice.builder === "dockerfile") {
      return buildDockerfile({
        driver,
        sourceDir,
        tag,
        labels,
        settings: { caBundle, npmRegistry: config.buildNpmRegistry, buildTimeVars },
        registries: config.buildRegistries,
        registryAuth: (registry) => new Registries({ db: this.ctx.db, secrets: this.ctx.secrets, registries: config.buildRegistries }).authFor(app.workspaceId, registry),
        limits: { memoryMB: config.buildMemoryMB, cpus: config.buildCpus, timeoutSeconds: config.buildTimeoutSeconds, outputBytesPerSecond: OUTPUT_BYTES_PER_SECOND },
        network: () => ensureWorkspaceNetwork(driver, app.workspaceId),
        port,
        user: config.appUser,
        log,
        output: logs.output,
        signal,
      });
    }
    const { plan } = choice;
    const settings: BuildSettings = {
      baseImage: config.images[app.runtime],
      runtime: app.runtime,
      port,
      caBundle,
      npmRegistry: config.buildNpmRegistry,
      buildArgs: buildTimeVars,
      labels,
    };
    await driver.ensureImage(settings.baseImage, log);
    if (!hasBuildSteps(plan)) {
      log(`==> Building image ${tag}`);
      const files = { ...platformFiles(plan), ".platform/Dockerfile": generateDockerfile(plan, settings, null) };
      await driver.buildImage({ context: tarStream(contextEntries(sourceDir, files)), dockerfile: ".platform/Dockerfile", tag, onLog: log, signal });
      return tag;
    }
    const built = await this.runSteps(driver, app, buildId, plan, settings, logs, signal);
    try {
      log(`==> Building image ${tag} from /app`);
      const dockerfile: TarEntry = { path: "Dockerfile", mode: 0o644, content: new TextEncoder().encode(generateDockerfile(plan, settings, built)) };
      await driver.buildImage({ context: tarStream([dockerfile]), tag, onLog: log, signal });
    } finally {
      await driver.removeImage(built).catch(() => {});
    }
    return tag;
  }

  /** The build container: source in, steps run, output to the log, committed on success; always removed. */
  private async runSteps(
    driver: DockerDriver,
    app: AppRow,
    buildId: string,
    plan: BuildPlan,
    settings: BuildSettings,
    logs: { log: (line: string) => void; output: (text: string) => void },
    signal: AbortSignal,
  ): Promise<string> {
    const { config } = this.ctx;
    const sourceDir = this.ctx.storage.sourceDir(app.id);
    async function* entries(): AsyncGenerator<TarEntry> {
      for await (const entry of contextEntries(sourceDir, platformFiles(plan))) yield { ...entry, path: `app/${entry.path}` };
      if (settings.caBundle !== undefined) yield { path: BUILD_CA_PATH.slice(1), mode: 0o644, content: new TextEncoder().encode(settings.caBundle) };
    }
    logs.log(
      `==> Install and build steps in a build container: ${config.buildCpus} CPU, ${config.buildMemoryMB} MB, ` +
        `${config.buildPidsLimit} processes, no capabilities, timeout ${config.buildTimeoutSeconds} s`,
    );
    if (settings.npmRegistry) logs.log(`    package registry: ${settings.npmRegistry}`);
    if (signal.aborted) throw signal.reason;
    const spec = async (): Promise<ContainerSpec> => ({
      name: `build-${app.id.toLowerCase()}-${buildId.toLowerCase()}`,
      image: settings.baseImage,
      entrypoint: ["/bin/sh", "-c"],
      command: [buildScript(plan, settings.runtime)],
      env: buildEnv(settings),
      labels: settings.labels!,
      memoryMB: config.buildMemoryMB,
      pidsLimit: config.buildPidsLimit,
      cpus: config.buildCpus,
      // On the workspace's plw- bridge: the egress rules (src/docker/egress.ts) cover user code in builds too.
      network: { name: await ensureWorkspaceNetwork(driver, app.workspaceId), aliases: [] },
      capabilities: [],
      workingDir: "/app",
      init: true,
      keepLogs: false,
    });
    // The network can go between its check and the create (the workspace's last app deleted meanwhile): made again, once.
    const containerId = await driver.createContainer(await spec()).catch(async (error) => {
      if (!(error instanceof DockerNotFound)) throw error;
      return driver.createContainer(await spec());
    });
    let killing: Promise<void> | undefined;
    const kill = () => void (killing = driver.removeContainer(containerId).catch(() => {}));
    signal.addEventListener("abort", kill, { once: true });
    try {
      if (signal.aborted) throw signal.reason;
      await driver.extractToContainer(containerId, "/", tarStream(entries()));
      const frames = await driver.attachOutput(containerId);
      const pumped = pumpOutput(frames, logs.output, signal);
      await driver.startContainer(containerId);
      const { exitCode, outOfMemory } = await untilAborted(driver.waitForExit(containerId), signal);
      await untilAborted(pumped, signal);
      if (exitCode !== 0) {
        const memory = outOfMemory ? `; it ran out of memory (PLATFORM_BUILD_MEMORY_MB is ${config.buildMemoryMB})` : "";
        throw new BuildFailed(`the install and build steps failed (exit code: ${exitCode}${memory})`);
      }
      const [repo, tag] = stepsImage(app.id, buildId).split(":") as [string, string];
      await untilAborted(driver.commitContainer(containerId, repo, tag), signal);
      return `${repo}:${tag}`;
    } finally {
      signal.removeEventListener("abort", kill);
      // After a kill already under way has ended: the engine refuses a second removal while one runs.
      await killing;
      await driver.removeContainer(containerId).catch(() => {});
    }
  }
}

/** `promise`, or the signal's reason as soon as it aborts (the promise's own late failure is ignored). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  promise.catch(() => {});
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}

/** Writes whole lines of the container's output to the log, no faster than OUTPUT_BYTES_PER_SECOND. */
async function pumpOutput(frames: AsyncGenerator<Frame>, output: (text: string) => void, signal: AbortSignal): Promise<void> {
  const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  const partial = { stdout: "", stderr: "" };
  let windowStart = performance.now();
  let windowBytes = 0;
  for await (const frame of frames) {
    if (signal.aborted) break;
    const text = partial[frame.stream] + decoders[frame.stream].decode(frame.payload, { stream: true });
    const lineEnd = text.lastIndexOf("\n");
    if (lineEnd >= 0) output(text.slice(0, lineEnd + 1));
    partial[frame.stream] = text.slice(lineEnd + 1);
    if (partial[frame.stream].length > MAX_PARTIAL_LINE) {
      output(partial[frame.stream]);
      partial[frame.stream] = "";
    }
    windowBytes += frame.payload.length;
    const elapsed = performance.now() - windowStart;
    const earliest = (windowBytes / OUTPUT_BYTES_PER_SECOND) * 1000;
    if (earliest > elapsed) await Bun.sleep(earliest - elapsed);
    if (elapsed > 1000) {
      windowStart = performance.now();
      windowBytes = 0;
    }
  }
  for (const stream of ["stdout", "stderr"] as const) if (partial[stream]) output(partial[stream]);
}

function reasonOf(reason: unknown): string {
  return reason instanceof Error ? reason.message : "the app's queue was preempted";
}

