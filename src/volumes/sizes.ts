// Volume sizes: measured by the engine (`system df`, which walks every volume and may take
// seconds), kept in each row's sizeBytes/sizeMeasuredAt, and measured again only once the last
// measure is older than PLATFORM_VOLUME_SIZE_REFRESH_SECONDS. A list waits a bounded time for a
// measure it started, then answers with what is recorded; the measure finishes in the background.
import { eq } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { volumes } from "../db/schema";
import type { Machines } from "../machines/service";

/** The longest a list waits for a fresh measure before answering with the recorded sizes. */
const LIST_WAIT_MS = 2_000;

export class VolumeSizes {
  /** Per machine: the measure in progress, and when the last one ended. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly measuredAt = new Map<string, number>();

  constructor(
    private readonly db: PlatformDb,
    private readonly machines: Machines,
    private readonly refreshMs: number,
    private readonly now: () => number,
  ) {}

  /** Starts a measure of every machine whose last one is stale, and waits for it at most LIST_WAIT_MS. */
  async refreshIfStale(): Promise<void> {
    const started = this.machines.ids().map((machineId) => this.measureIfStale(machineId));
    await Promise.race([Promise.all(started), Bun.sleep(LIST_WAIT_MS)]);
  }

  private measureIfStale(machineId: string): Promise<void> {
    const running = this.inFlight.get(machineId);
    if (running) return running;
    if (this.now() - (this.measuredAt.get(machineId) ?? 0) < this.refreshMs) return Promise.resolve();
    const measure = this.measure(machineId)
      .catch((error) => console.error(`[volumes] measuring the volumes of ${machineId}:`, (error as Error).message))
      .finally(() => {
        this.measuredAt.set(machineId, this.now());
        this.inFlight.delete(machineId);
      });
    this.inFlight.set(machineId, measure);
    return measure;
  }

  private async measure(machineId: string): Promise<void> {
    const rows = this.db.select().from(volumes).where(eq(volumes.machineId, machineId)).all();
    if (rows.length === 0) return;
    const sizes = await this.machines.get(machineId).volumeUsage();
    const at = this.now();
    for (const row of rows) {
      const size = sizes[row.engineVolumeName];
      // Not made yet (never mounted): nothing to measure.
      if (size === undefined || size < 0) continue;
      this.db.update(volumes).set({ sizeBytes: size, sizeMeasuredAt: at }).where(eq(volumes.id, row.id)).run();
    }
  }
}
