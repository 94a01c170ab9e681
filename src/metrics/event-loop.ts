// Watches the server's own event loop with a timer that measures how late it fires. A late timer
// has two causes: our code holding the thread (a synchronous tree walk, a big rmSync, a sync
// write waiting on the disk), and the thread waiting for a CPU on a loaded machine. Linux's
// per-thread schedstat counts the second (time spent runnable on the run queue), so it is taken
// off: what is reported is time the loop itself was held. Where the kernel does not say, the whole
// lateness counts.
import { readFileSync } from "node:fs";

export interface EventLoopStall {
  /** How long the event loop was held, in ms: `lateMs` less `waitingMs`. */
  blockedMs: number;
  /** How late the timer fired, in ms. */
  lateMs: number;
  /** Of that, the time the main thread waited for a CPU, in ms. */
  waitingMs: number;
}

/** Nanoseconds the main thread has waited for a CPU since it started, or null where the kernel does not say. */
function runQueueWaitNs(): number | null {
  try {
    const waited = Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[1]);
    return Number.isFinite(waited) ? waited : null;
  } catch {
    return null;
  }
}

/** Reports every stall of at least `warnMs`; returns the function that stops watching. */
export function watchEventLoop(warnMs: number, report: (stall: EventLoopStall) => void): () => void {
  // Often enough that a stall of warnMs is seen as one late tick, rarely enough to cost nothing.
  const intervalMs = Math.max(5, Math.min(100, Math.floor(warnMs / 2)));
  let timer: ReturnType<typeof setTimeout>;
  const schedule = (waitedNs: number | null) => {
    const expected = performance.now() + intervalMs;
    timer = setTimeout(() => {
      const lateMs = performance.now() - expected;
      const waitedNowNs = runQueueWaitNs();
      const waitingMs = waitedNs === null || waitedNowNs === null ? 0 : (waitedNowNs - waitedNs) / 1e6;
      const blockedMs = lateMs - waitingMs;
      if (blockedMs >= warnMs) report({ blockedMs, lateMs, waitingMs });
      schedule(waitedNowNs);
    }, intervalMs);
    timer.unref();
  };
  schedule(runQueueWaitNs());
  return () => clearTimeout(timer);
}

export function describeStall(stall: EventLoopStall): string {
  const ms = (value: number) => Math.round(value);
  return `[event-loop] blocked for ${ms(stall.blockedMs)} ms (the timer fired ${ms(stall.lateMs)} ms late, ${ms(stall.waitingMs)} ms of it waiting for a CPU)`;
}
