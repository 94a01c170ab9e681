// How long an app waits before the platform restarts it again (an unhealthy app, a crashed
// container): BASE_MS doubled for each restart in a row, up to a ceiling
// (PLATFORM_RESTART_BACKOFF_MAX_SECONDS). The run of restarts is over once the app has gone twice
// the ceiling without one. Kept per app, in memory: after a platform restart an app in a crash loop
// starts at the ceiling (./supervisor.ts), any other afresh.

const BASE_MS = 2_000;

export class RestartBackoff {
  private readonly runs = new Map<string, { count: number; lastAt: number }>();

  constructor(private readonly ceilingMs: number) {}

  /** The wait before the next restart, counted from whatever made it needed. */
  delayMs(appId: string, now = Date.now()): number {
    const count = this.countOf(appId, now);
    return Math.min(this.ceilingMs, BASE_MS * 2 ** Math.min(count, 30));
  }

  /** Restarts in the current run. */
  countOf(appId: string, now = Date.now()): number {
    const run = this.runs.get(appId);
    return run && now - run.lastAt < 2 * this.ceilingMs ? run.count : 0;
  }

  record(appId: string, now = Date.now()) {
    this.runs.set(appId, { count: this.countOf(appId, now) + 1, lastAt: now });
  }

  /** The next restart waits the ceiling: for an app found in a crash loop when the run's count was lost (a platform restart). */
  startAtCeiling(appId: string, now = Date.now()) {
    this.runs.set(appId, { count: Math.max(0, Math.ceil(Math.log2(this.ceilingMs / BASE_MS))), lastAt: now });
  }

  /** A manual start, restart or redeploy ends the run. */
  forget(appId: string) {
    this.runs.delete(appId);
  }
}
