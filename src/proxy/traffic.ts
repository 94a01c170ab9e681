// Traffic per app, counted by the public proxy: requests by status class, 429s, bytes in and out
// and the upstream latency, in one-minute slots over the last hour. Memory per app is fixed (60
// slots of a few counters and a latency histogram); only published apps are counted, never
// unknown hosts. Kept per subdomain, in memory: an app moved to a new subdomain or the platform
// restarted starts afresh, and an app's counts are forgotten when it leaves its subdomain
// (ProxyRoutes.vacate), so that the next app given it does not inherit them.

const SLOT_MS = 60_000;
const SLOTS = 60;
/** Upper bounds of the latency histogram's buckets, in ms; the last catches everything slower. */
const LATENCY_BOUNDS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000, Number.POSITIVE_INFINITY];
const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;

interface Slot {
  /** The slot's minute (ms since the epoch, a multiple of SLOT_MS); -1 for an unused slot. */
  minute: number;
  byClass: number[];
  rateLimited: number;
  bytesIn: number;
  bytesOut: number;
  latency: number[];
}

export interface ProxiedRequest {
  status: number;
  /** Request and answer body bytes relayed (chunk framing included). */
  bytesIn: number;
  bytesOut: number;
  /** From sending the request to the app until its answer's head, or null when the app was not asked (429, 502). */
  upstreamMs: number | null;
}

export interface TrafficWindow {
  requests: number;
  byStatusClass: Record<(typeof STATUS_CLASSES)[number], number>;
  rateLimited: number;
  bytesIn: number;
  bytesOut: number;
  /** Upper bounds of the bucket each percentile falls in (ms); null when no request reached the app. */
  upstreamLatencyMs: { p50: number; p99: number } | null;
}

/** What GET /api/apps/{appId}/traffic answers. */
export interface TrafficReport {
  last5Minutes: TrafficWindow;
  lastHour: TrafficWindow;
}

/** Where an app's traffic is read: the recorder, or the proxy's thread that holds it (./thread.ts). */
export interface TrafficSource {
  report(subdomain: string | null): TrafficReport;
}

const emptySlot = (): Slot => ({ minute: -1, byClass: [0, 0, 0, 0, 0], rateLimited: 0, bytesIn: 0, bytesOut: 0, latency: LATENCY_BOUNDS_MS.map(() => 0) });

export class TrafficRecorder implements TrafficSource {
  private readonly bySubdomain = new Map<string, Slot[]>();
  /** The minute of the last request recorded and its slot's index: worked out again only when the minute changes. */
  private minute = -1;
  private minuteIndex = 0;

  record(subdomain: string, request: ProxiedRequest, now = Date.now()) {
    let slots = this.bySubdomain.get(subdomain);
    if (!slots) {
      slots = Array.from({ length: SLOTS }, emptySlot);
      this.bySubdomain.set(subdomain, slots);
    }
    if (now < this.minute || now >= this.minute + SLOT_MS) {
      this.minute = now - (now % SLOT_MS);
      this.minuteIndex = Math.floor(this.minute / SLOT_MS) % SLOTS;
    }
    const minute = this.minute;
    const index = this.minuteIndex;
    let slot = slots[index]!;
    if (slot.minute !== minute) slot = slots[index] = { ...emptySlot(), minute };
    const statusClass = Math.floor(request.status / 100) - 1;
    if (statusClass >= 0 && statusClass < STATUS_CLASSES.length) slot.byClass[statusClass]! += 1;
    if (request.status === 429) slot.rateLimited += 1;
    slot.bytesIn += request.bytesIn;
    slot.bytesOut += request.bytesOut;
    if (request.upstreamMs !== null) {
      let bucket = 0;
      while (request.upstreamMs > LATENCY_BOUNDS_MS[bucket]!) bucket++;
      slot.latency[bucket]! += 1;
    }
  }

  /** The traffic of the last `minutes` minutes (the current, partial minute included). */
  window(subdomain: string | null, minutes: number, now = Date.now()): TrafficWindow {
    const since = now - (now % SLOT_MS) - (minutes - 1) * SLOT_MS;
    const slots = (subdomain ? this.bySubdomain.get(subdomain) : undefined)?.filter((slot) => slot.minute >= since) ?? [];
    const sum = (pick: (slot: Slot) => number) => slots.reduce((total, slot) => total + pick(slot), 0);
    const byStatusClass = Object.fromEntries(STATUS_CLASSES.map((name, index) => [name, sum((slot) => slot.byClass[index]!)])) as TrafficWindow["byStatusClass"];
    const latency = LATENCY_BOUNDS_MS.map((_, index) => sum((slot) => slot.latency[index]!));
    return {
      requests: Object.values(byStatusClass).reduce((total, count) => total + count, 0),
      byStatusClass,
      rateLimited: sum((slot) => slot.rateLimited),
      bytesIn: sum((slot) => slot.bytesIn),
      bytesOut: sum((slot) => slot.bytesOut),
      upstreamLatencyMs: percentiles(latency),
    };
  }

  report(subdomain: string | null, now = Date.now()): TrafficReport {
    return { last5Minutes: this.window(subdomain, 5, now), lastHour: this.window(subdomain, 60, now) };
  }

  forget(subdomain: string) {
    this.bySubdomain.delete(subdomain);
  }
}

function percentiles(histogram: number[]): TrafficWindow["upstreamLatencyMs"] {
  const total = histogram.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const at = (fraction: number) => {
    let seen = 0;
    for (const [index, count] of histogram.entries()) {
      seen += count;
      // The slowest bucket has no upper bound: report the last finite one's, the most it can say.
      if (seen >= fraction * total) return Number.isFinite(LATENCY_BOUNDS_MS[index]!) ? LATENCY_BOUNDS_MS[index]! : LATENCY_BOUNDS_MS.at(-2)!;
    }
    return LATENCY_BOUNDS_MS.at(-2)!;
  };
  return { p50: at(0.5), p99: at(0.99) };
}
