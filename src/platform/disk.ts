// The data directory's free space: measured on demand (the status API, every refused write) and
// once a minute, and a `disk.low` event raised when it falls under PLATFORM_DISK_LOW_PERCENT, once
// per fall: it is raised again only after the space came back above the threshold.
import { statfsSync } from "node:fs";
import type { PlatformEvents } from "./events";

const CHECK_INTERVAL_MS = 60_000;

export interface DiskSpace {
  totalBytes: number;
  /** What the platform (root) may still write. */
  freeBytes: number;
  freePercent: number;
  lowPercent: number;
  low: boolean;
}

export class DiskMonitor {
  private wasLow = false;
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly lowPercent: number,
    private readonly events: PlatformEvents,
  ) {}

  /** Measures now; raises `disk.low` when the space just fell under the threshold. */
  check(): DiskSpace {
    const { blocks, bfree, bsize } = statfsSync(this.dataDir);
    const totalBytes = blocks * bsize;
    const freeBytes = bfree * bsize;
    const freePercent = totalBytes > 0 ? Math.round((freeBytes / totalBytes) * 1000) / 10 : 0;
    const low = freePercent < this.lowPercent;
    if (low && !this.wasLow) {
      this.events.raise("disk.low", `The data directory's disk has ${freePercent}% free, under the ${this.lowPercent}% of PLATFORM_DISK_LOW_PERCENT`, {
        freeBytes,
        totalBytes,
        freePercent,
      });
    }
    this.wasLow = low;
    return { totalBytes, freeBytes, freePercent, lowPercent: this.lowPercent, low };
  }

  /** `check`, for when nobody waits for the answer (a timer, a refused write): a failure is logged. */
  refresh(): void {
    try {
      this.check();
    } catch (error) {
      console.error("[disk] could not measure the data directory's free space:", error);
    }
  }

  start(): void {
    this.refresh();
    this.timer ??= setInterval(() => this.refresh(), CHECK_INTERVAL_MS);
    this.timer.unref();
  }
}
