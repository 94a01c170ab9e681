// The croner jobs of backup schedules, one per owner (a database, a volume) that has a schedule, in
// this process (times in UTC; `protect` skips a tick while the previous run still works). A run
// never throws: what went wrong is the owner's to record, or a log line. A slot missed while the
// server was down is run once at start.
import { Cron } from "croner";
import { CRON_OPTIONS } from "./schedule-rules";

/** What the jobs read of a stored schedule. */
export interface StoredSchedule {
  ownerId: string;
  cron: string;
  lastRunAt: number | null;
  updatedAt: number;
}

export class ScheduleJobs {
  private readonly jobs = new Map<string, Cron>();
  /** Owners whose run is under way: `protect` covers one job, this also a job replaced by a PUT meanwhile. */
  private readonly running = new Set<string>();

  constructor(
    /** What the log lines say the owner is: `database`, `volume`. */
    private readonly kind: string,
    private readonly runOnce: (ownerId: string) => Promise<void>,
    private readonly now: () => number,
  ) {}

  /** At start: a job per stored schedule, and one run now for each whose slot passed while the server was down. */
  start(schedules: StoredSchedule[]) {
    const now = this.now();
    for (const stored of schedules) {
      const job = this.schedule(stored.ownerId, stored.cron);
      // From the later of the last run and the last change: a slot of an expression set afterwards was not missed.
      const missed = job.nextRun(new Date(Math.max(stored.lastRunAt ?? 0, stored.updatedAt)));
      if (!missed || missed.getTime() > now) continue;
      console.log(`[backup schedule] ${this.kind} ${stored.ownerId}: the run of ${missed.toISOString()} was missed while the platform was down; running it now`);
      void job.trigger();
    }
  }

  /** The job of a schedule, replacing the one the owner had. */
  schedule(ownerId: string, cron: string): Cron {
    this.jobs.get(ownerId)?.stop();
    const job = new Cron(cron, { ...CRON_OPTIONS, protect: true }, () => this.run(ownerId));
    this.jobs.set(ownerId, job);
    return job;
  }

  stop(ownerId: string) {
    this.jobs.get(ownerId)?.stop();
    this.jobs.delete(ownerId);
  }

  /** Stops every job (server stop). */
  stopAll() {
    for (const job of this.jobs.values()) job.stop();
    this.jobs.clear();
  }

  private async run(ownerId: string) {
    if (this.running.has(ownerId)) return;
    this.running.add(ownerId);
    try {
      await this.runOnce(ownerId);
    } catch (error) {
      console.error(`[backup schedule] ${this.kind} ${ownerId}:`, error);
    } finally {
      this.running.delete(ownerId);
    }
  }
}
