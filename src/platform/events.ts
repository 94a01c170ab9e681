// Platform events: what went wrong or needs attention with no user watching (the disk filling up,
// an app turning unhealthy or crash-looping). Each is logged as one `[event]` line and kept, the
// newest few, for GET /api/platform/status. An app's events belong to its workspace (they name the
// app, its exit code, its probes): they are kept per workspace and shown only to it, apart from the
// platform-wide ones, so that a noisy app can evict neither another workspace's events nor
// `disk.low`. The durable event outbox and the notifications of the roadmap (item 4) will consume
// what `raise` is given; its callers need not change.

/** Events kept in memory for the status API: platform-wide ones, and those of each workspace. */
export const KEPT_EVENTS = 50;

export type PlatformEventType = "disk.low" | "app.unhealthy" | "app.crash-loop";

export interface PlatformEvent {
  id: string;
  type: PlatformEventType;
  /** ISO 8601. */
  at: string;
  message: string;
  data: Record<string, number | string | boolean>;
}

export class PlatformEvents {
  /** Each event with its rank among all raised (two events may share a millisecond). */
  private readonly platformWide: { rank: number; event: PlatformEvent }[] = [];
  private readonly byWorkspace = new Map<string, { rank: number; event: PlatformEvent }[]>();
  private raised = 0;

  /** An event whose `data.workspaceId` is set is its workspace's; any other is platform-wide. */
  raise(type: PlatformEventType, message: string, data: PlatformEvent["data"]): PlatformEvent {
    const event = { id: crypto.randomUUID(), type, at: new Date().toISOString(), message, data };
    const workspaceId = typeof data.workspaceId === "string" ? data.workspaceId : null;
    let kept = this.platformWide;
    if (workspaceId !== null) {
      kept = this.byWorkspace.get(workspaceId) ?? [];
      this.byWorkspace.set(workspaceId, kept);
    }
    kept.push({ rank: this.raised++, event });
    if (kept.length > KEPT_EVENTS) kept.shift();
    console.warn(`[event] ${type}: ${message} ${JSON.stringify(data)}`);
    return event;
  }

  /** What a key of `workspaceId` may see: the platform-wide events and its workspace's, the newest first. */
  recent(workspaceId: string): PlatformEvent[] {
    const visible = [...this.platformWide, ...(this.byWorkspace.get(workspaceId) ?? [])];
    return visible.sort((a, b) => b.rank - a.rank).map((kept) => kept.event);
  }
}
