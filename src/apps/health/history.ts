// The recent probes of each app's health check, in memory: the last one (shown on the app) and the
// last HEALTH_HISTORY_LENGTH results with their status changes (GET /api/apps/{id}/health). A
// platform restart starts them afresh; the app's status and statusReason are what is kept.
import type { HealthProbe } from "./settings";

export const HEALTH_HISTORY_LENGTH = 20;

export class HealthHistory {
  private readonly probes = new Map<string, HealthProbe[]>();

  record(appId: string, probe: HealthProbe) {
    let kept = this.probes.get(appId);
    if (!kept) this.probes.set(appId, (kept = []));
    kept.push(probe);
    if (kept.length > HEALTH_HISTORY_LENGTH) kept.shift();
  }

  lastProbe(appId: string): HealthProbe | null {
    return this.probes.get(appId)?.at(-1) ?? null;
  }

  /** The newest first. */
  recent(appId: string): HealthProbe[] {
    return [...(this.probes.get(appId) ?? [])].reverse();
  }

  forget(appId: string) {
    this.probes.delete(appId);
  }
}
