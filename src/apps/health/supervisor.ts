// Keeps autoRestart apps' containers running, in place of the engine's restart policy (app
// containers are made with restart policy "no"): every SUPERVISE_MS it lists the app containers of
// each machine (one engine call per machine) and starts again, after a backoff (./backoff.ts), the
// serving container of each app that should run (running, unhealthy, crash-loop) and does not.
// PLATFORM_CRASH_LOOP_EXITS exits within PLATFORM_CRASH_LOOP_MINUTES make the app `crash-loop`
// (statusReason: the exit code and the last lines of its output) and raise `app.crash-loop`;
// restarts go on at the ceiling's pace, and once its container has stayed up that many minutes the
// app is `running` again. The same loop brings apps back after the engine itself restarted, and at
// the platform's start, which keeps an app's crash loop (its exits are counted in memory): it stays
// `crash-loop` for a whole window and its restarts start at the ceiling. Apps without autoRestart
// are left to the reconciler (`crashed`).
import { and, eq, inArray } from "drizzle-orm";
import { apps } from "../../db/schema";
import { LABEL_MANAGED } from "../../docker/container-spec";
import { DockerNotFound } from "../../docker/driver";
import type { AppRow, AppsContext, Deployer } from "../deployer";
import type { RestartBackoff } from "./backoff";

const SUPERVISE_MS = 2_000;
/** Statuses in which an app's container should be running. */
export const SUPERVISED_STATUSES = ["running", "unhealthy", "crash-loop"];
/** Lines of the app's output in a crash-loop statusReason, and the characters kept of each. */
const REASON_LOG_LINES = 10;
const REASON_LINE_CHARS = 200;

/** The exits of an app's serving containers seen lately (a fresh container carries on the count). */
interface ExitRecord {
  /** The container and the run of it (its start time) whose exit was last counted. */
  countedRun: string | null;
  /** The container whose engine restart policy was checked. */
  checkedContainerId: string | null;
  exits: number[];
  /** When its current exit was seen: the restart's backoff counts from here. */
  downSince: number | null;
}

export class CrashSupervisor {
  private readonly records = new Map<string, ExitRecord>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly ctx: AppsContext,
    private readonly deployer: Deployer,
    private readonly backoff: RestartBackoff,
    /** Points the proxy at the app's container again once restarted (its address may change). */
    private readonly restoreRoute: (appId: string) => Promise<void>,
    /** A fresh container of the app's current build, for one whose container is gone. */
    private readonly releaseCurrentBuild: (appId: string, signal: AbortSignal) => Promise<void>,
  ) {}

  start() {
    void this.check();
    this.timer ??= setInterval(() => void this.check(), SUPERVISE_MS);
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** A manual start, restart or (re)deploy: the exits counted so far no longer make a crash loop. */
  forget(appId: string) {
    this.records.delete(appId);
  }

  /** Whether the app's serving container is down and waiting for its restart (its probes mean nothing then). */
  isDown(appId: string): boolean {
    return this.records.get(appId)?.downSince != null;
  }

  /** One pass; a tick while one runs shares it. */
  check(): Promise<void> {
    this.running ??= this.checkOnce().finally(() => (this.running = null));
    return this.running;
  }

  private async checkOnce() {
    const supervised = this.ctx.db.select().from(apps).where(and(inArray(apps.status, SUPERVISED_STATUSES), eq(apps.autoRestart, true))).all();
    const wanted = new Set(supervised.map((app) => app.id));
    for (const appId of this.records.keys()) if (!wanted.has(appId)) this.records.delete(appId);
    const states = new Map<string, string>();
    for (const machineId of new Set(supervised.map((app) => app.machineId))) {
      try {
        for (const container of await this.ctx.machines.get(machineId).listContainers({ [LABEL_MANAGED]: "true" })) states.set(container.id, container.state);
      } catch {
        // The engine is unreachable: nothing can be started there now; the next pass tries again.
        for (const app of supervised) if (app.machineId === machineId) wanted.delete(app.id);
      }
    }
    for (const app of supervised) {
      if (!wanted.has(app.id) || !app.containerId || this.deployer.busy(app.id)) continue;
      await this.supervise(app, states.get(app.containerId) ?? "gone").catch((error) => console.warn(`[health] supervising ${app.id}: ${(error as Error).message}`));
    }
  }

  private async supervise(app: AppRow, state: string) {
    const now = Date.now();
    let record = this.records.get(app.id);
    if (!record) {
      this.records.set(app.id, (record = { countedRun: null, checkedContainerId: null, exits: [], downSince: null }));
      // Its exits were counted by a platform that has restarted since: it stays in the loop for a whole window, restarted at the ceiling's pace.
      if (app.status === "crash-loop") {
        record.exits = [now];
        this.backoff.startAtCeiling(app.id, now);
      }
    }
    if (record.checkedContainerId !== app.containerId) {
      record.checkedContainerId = app.containerId;
      record.downSince = null;
      await this.dropEnginePolicy(app);
    }
    const { crashLoopExits, crashLoopMinutes } = this.ctx.config.health;
    const windowMs = crashLoopMinutes * 60_000;
    if (state === "running") {
      record.downSince = null;
      record.exits = record.exits.filter((at) => now - at < windowMs);
      // Up for the whole window since its last exit: the loop is over.
      if (app.status === "crash-loop" && record.exits.length === 0) this.setStatus(app, "running", null);
      return;
    }
    if (state === "restarting") return;
    const driver = this.ctx.machines.get(app.machineId);
    const inspected = state === "gone" ? null : await driver.inspectContainer(app.containerId!).catch(() => null);
    if (record.downSince === null) {
      record.downSince = now;
      const run = `${app.containerId} ${inspected?.startedAt}`;
      if (inspected && run !== record.countedRun) {
        record.countedRun = run;
        record.exits = [...record.exits.filter((at) => now - at < windowMs), now].slice(-crashLoopExits);
        if (record.exits.length >= crashLoopExits) await this.enterCrashLoop(app, inspected.exitCode, record.exits.length);
      }
    }
    if (now - record.downSince < this.backoff.delayMs(app.id, now)) return;
    this.backoff.record(app.id, now);
    const containerId = app.containerId!;
    this.deployer.schedule(app.id, async (signal) => {
      const current = this.ctx.db.select().from(apps).where(eq(apps.id, app.id)).get();
      if (signal.aborted || !current || current.containerId !== containerId || !SUPERVISED_STATUSES.includes(current.status)) return;
      if (!inspected) return this.releaseCurrentBuild(app.id, signal);
      console.warn(`[health] starting the container of ${app.id} again (exit code ${inspected.exitCode ?? "?"})`);
      try {
        await driver.startContainer(containerId);
      } catch (error) {
        // A stopped container whose network was removed meanwhile can never start again: a fresh one replaces it.
        if (!(error instanceof DockerNotFound)) throw error;
        console.warn(`[health] the container of ${app.id} cannot start again (${error.message}): releasing a fresh one`);
        return this.releaseCurrentBuild(app.id, signal);
      }
      record.downSince = null;
      await this.restoreRoute(app.id);
    });
  }

  /** A container made before the platform restarted apps itself may still have the engine's policy: two restarters would race. */
  private async dropEnginePolicy(app: AppRow) {
    const driver = this.ctx.machines.get(app.machineId);
    const inspected = await driver.inspectContainer(app.containerId!).catch(() => null);
    if (inspected && inspected.restartPolicy !== "no") await driver.setRestartPolicy(app.containerId!, "no").catch(() => {});
  }

  private async enterCrashLoop(app: AppRow, exitCode: number | null, exits: number) {
    const lines = await this.ctx.machines
      .get(app.machineId)
      .logs(app.containerId!, { tail: REASON_LOG_LINES, timestamps: false })
      .catch(() => []);
    const output = lines.map((line) => line.text.slice(0, REASON_LINE_CHARS)).join("\n");
    const minutes = this.ctx.config.health.crashLoopMinutes;
    const reason = `Crash loop: the container exited ${exits} times within ${minutes} min, last with code ${exitCode ?? "?"}; restarting with backoff${output ? `. Last output:\n${output}` : ""}`;
    const wasLooping = app.status === "crash-loop";
    this.setStatus(app, "crash-loop", reason);
    if (!wasLooping) this.ctx.events.raise("app.crash-loop", `App ${app.name} is in a crash loop (exit code ${exitCode ?? "?"})`, { appId: app.id, workspaceId: app.workspaceId, exitCode: exitCode ?? -1 });
  }

  /** Only while the app still serves from the same container in a supervised status: a stop, delete or release meanwhile wins. */
  private setStatus(app: AppRow, status: string, statusReason: string | null) {
    this.ctx.db
      .update(apps)
      .set({ status, statusReason, updatedAt: Date.now() })
      .where(and(eq(apps.id, app.id), eq(apps.containerId, app.containerId!), inArray(apps.status, SUPERVISED_STATUSES)))
      .run();
  }
}
