// Platform-wide events: what went wrong or needs attention with no user watching (the disk filling
// up, for now). Each is logged as one `[event]` line and kept, the newest few, for GET
// /api/platform/status. The durable event outbox and the notifications of the roadmap (item 4) will
// consume what `raise` is given; its callers need not change.

/** Platform events kept in memory for the status API. */
const KEPT_EVENTS = 50;

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
  private readonly kept: PlatformEvent[] = [];

  raise(type: PlatformEventType, message: string, data: PlatformEvent["data"]): PlatformEvent {
    const event = { id: crypto.randomUUID(), type, at: new Date().toISOString(), message, data };
    this.kept.push(event);
    if (this.kept.length > KEPT_EVENTS) this.kept.shift();
    console.warn(`[event] ${type}: ${message} ${JSON.stringify(data)}`);
    return event;
  }

  /** The newest first. */
  recent(): PlatformEvent[] {
    return [...this.kept].reverse();
  }
}
