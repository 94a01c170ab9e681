// Probes the running apps: one timer for all of them, each app probed every `intervalSeconds` of
// its health check, at most MAX_PROBES_AT_ONCE probes at a time, one per app, the longest overdue
// first, and none longer than the app's interval: an app that never answers holds one slot for its
// own interval at most, so it cannot keep other apps from their probes. `unhealthyThreshold` failures
// in a row make the app `unhealthy` (statusReason: the last probe), `healthyThreshold` passes make it
// `running` again. With `autoRestart` an unhealthy app is restarted (see restartUnhealthy), later
// restarts waiting longer (backoff up to a ceiling). The probes are kept in ./history.ts.
import { and, eq, inArray, isNotNull } from "drizzle-orm";
import { apps } from "../../db/schema";
import { workspaceNetworkName } from "../../docker/workspace-network";
import type { AppRow, AppsContext, Deployer } from "../deployer";
import { DEFAULT_EXPOSE_PORT } from "../model";
import type { HealthHistory } from "./history";
import { probe } from "./probe";
import { describeProbe, healthCheckOf, type HealthProbe } from "./settings";
import { RestartBackoff } from "./backoff";
import { releaseStrategyOf } from "../../volumes/service";

const TICK_MS = 1_000;
const MAX_PROBES_AT_ONCE = 8;
/** Statuses in which the app's serving container is probed. */
const PROBED_STATUSES = ["running", "unhealthy"];

/** Per app, about its serving container: reset when another container serves. */
interface ProbeState {
  containerId: string;
  /** Its address on the workspace network, once inspected. */
  host: Promise<string | null> | null;
  failures: number;
  passes: number;
  nextProbeAt: number;
  /** A probe of it is running: the next waits for its end. */
  probing: boolean;
  /** Since when it is unhealthy (or was last restarted for it), for the restart's backoff. */
  unhealthySince: number | null;
}

export class HealthMonitor {
  private readonly states = new Map<string, ProbeState>();
  private probing = 0;
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly ctx: AppsContext,
    private readonly deployer: Deployer,
    private readonly history: HealthHistory,
    private readonly restarts: RestartBackoff,
    /** Its container exited and waits for its restart (./supervisor.ts): no probe means anything then. */
    private readonly containerDown: (appId: string) => boolean,
    /** A release of the app's current build: answers why it did not serve (null once it does). */
    private readonly releaseCurrentBuild: (appId: string, signal: AbortSignal) => Promise<string | null>,
    /** Points the proxy at the app's container again (a restarted container may have another address). */
    private readonly restoreRoute: (appId: string) => Promise<void>,
  ) {}

  start() {
    this.timer ??= setInterval(() => this.tick(), TICK_MS);
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Starts the probes that are due (the timer's pass, every TICK_MS). */
  tick(now = Date.now()) {
    const rows = this.ctx.db.select().from(apps).where(and(inArray(apps.status, PROBED_STATUSES), isNotNull(apps.containerId))).all();
    const probed = new Set(rows.map((row) => row.id));
    for (const appId of this.states.keys()) if (!probed.has(appId)) this.states.delete(appId);
    const due: { app: AppRow; state: ProbeState }[] = [];
    for (const app of rows) {
      if (this.deployer.busy(app.id) || this.containerDown(app.id)) continue;
      let state = this.states.get(app.id);
      if (!state || state.containerId !== app.containerId) {
        state = { containerId: app.containerId!, host: null, failures: 0, passes: 0, nextProbeAt: now, probing: false, unhealthySince: app.status === "unhealthy" ? now : null };
        this.states.set(app.id, state);
      }
      if (!state.probing && now >= state.nextProbeAt) due.push({ app, state });
    }
    // The longest overdue first: when the slots are short, the apps left out now go first at the next pass.
    due.sort((a, b) => a.state.nextProbeAt - b.state.nextProbeAt);
    for (const { app, state } of due.slice(0, Math.max(0, MAX_PROBES_AT_ONCE - this.probing))) {
      state.nextProbeAt = now + healthCheckOf(app).intervalSeconds * 1000;
      state.probing = true;
      this.probing++;
      void this.probeApp(app, state)
        .catch((error) => console.warn(`[health] probe of ${app.id}: ${(error as Error).message}`))
        .finally(() => {
          state.probing = false;
          this.probing--;
        });
    }
  }

  private async probeApp(app: AppRow, state: ProbeState) {
    state.host ??= this.ctx.machines
      .get(app.machineId)
      .inspectContainer(state.containerId)
      .then((inspected) => inspected.networks[workspaceNetworkName(app.workspaceId)] ?? null, () => null);
    const host = await state.host;
    // No address: the container is gone or stopped, which the supervisor and the reconciler see to.
    if (host === null) {
      state.host = null;
      return;
    }
    const check = healthCheckOf(app);
    const result = await probe({
      host,
      port: app.servingPort ?? app.exposePort ?? DEFAULT_EXPOSE_PORT,
      path: check.path,
      hostHeader: app.subdomain ? `${app.subdomain}.${this.ctx.config.domain}` : app.name,
      // A probe never outlasts the interval: the next one is due by then.
      timeoutMs: Math.min(check.timeoutSeconds, check.intervalSeconds) * 1000,
    });
    // Another container serves by now, or the app went: this probe is of nothing that matters.
    if (this.states.get(app.id) !== state) return;
    this.history.record(app.id, result);
    if (result.passed) this.passed(app.id, state, check.healthyThreshold);
    else this.failed(app.id, state, result, check);
  }

  private passed(appId: string, state: ProbeState, healthyThreshold: number) {
    state.failures = 0;
    state.passes++;
    state.unhealthySince = null;
    if (state.passes < healthyThreshold) return;
    this.ctx.db
      .update(apps)
      .set({ status: "running", statusReason: null, updatedAt: Date.now() })
      .where(and(eq(apps.id, appId), eq(apps.status, "unhealthy"), eq(apps.containerId, state.containerId)))
      .run();
  }

  private failed(appId: string, state: ProbeState, result: HealthProbe, check: ReturnType<typeof healthCheckOf>) {
    state.passes = 0;
    state.failures++;
    // A container started again may have another address: inspected afresh for the next probe.
    state.host = null;
    if (state.failures < check.unhealthyThreshold) return;
    const reason = `Health check failed ${state.failures} time(s) in a row; last: ${describeProbe(result, check.path)}`;
    const update = (from: string) =>
      this.ctx.db
        .update(apps)
        .set({ status: "unhealthy", statusReason: reason, updatedAt: Date.now() })
        .where(and(eq(apps.id, appId), eq(apps.status, from), eq(apps.containerId, state.containerId)))
        .returning({ autoRestart: apps.autoRestart, name: apps.name, workspaceId: apps.workspaceId })
        .get();
    // The event marks the fall into unhealthy, not each failure (nor each restart that did not help) after it.
    const entered = update("running");
    const changed = entered ?? update("unhealthy");
    if (!changed) return;
    const now = Date.now();
    state.unhealthySince ??= now;
    if (entered) this.ctx.events.raise("app.unhealthy", `App ${changed.name} is unhealthy: ${reason}`, { appId, workspaceId: changed.workspaceId });
    if (changed.autoRestart && now - state.unhealthySince >= this.restarts.delayMs(appId, now)) {
      console.warn(`[health] restarting unhealthy app ${appId} (restart ${this.restarts.countOf(appId, now) + 1} in a row)`);
      this.restarts.record(appId, now);
      state.unhealthySince = now;
      this.restartUnhealthy(appId, reason);
    }
  }

  /**
   * The restart of an unhealthy app, queued behind its other work. start-first: a release of its
   * current build, so the old container serves until the new one passes; when the new one fails too
   * the app stays `unhealthy`, served by the old one, and says why. stop-first (an app whose volumes
   * two containers may not share): a release would stop the serving container first anyway, so the
   * restart is the same container's, stopped and started again, not a release.
   */
  private restartUnhealthy(appId: string, unhealthyReason: string) {
    this.deployer.schedule(appId, async (signal) => {
      const app = this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
      if (signal.aborted || !app?.containerId || app.status !== "unhealthy") return;
      if (releaseStrategyOf(this.ctx.db, app) === "stop-first") {
        const driver = this.ctx.machines.get(app.machineId);
        await driver.stopContainer(app.containerId, 10);
        await driver.startContainer(app.containerId);
        await this.restoreRoute(appId);
        return;
      }
      const failure = await this.releaseCurrentBuild(appId, signal);
      if (failure === null || signal.aborted) return;
      // The release left the app `running` on its old container (or `failed` without one): still unhealthy.
      this.ctx.db
        .update(apps)
        .set({ status: "unhealthy", statusReason: `${unhealthyReason}; a fresh container did not pass either: ${failure}`, updatedAt: Date.now() })
        .where(and(eq(apps.id, appId), eq(apps.status, "running"), eq(apps.containerId, app.containerId)))
        .run();
    });
  }
}
