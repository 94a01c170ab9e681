// The resident memory of a process under test, read from /proc/<pid>/status (VmRSS), sampled
// while an abuse runs so a short peak is seen too. A ceiling guards the machine: a server that
// would buffer without bound (the bug under test) is killed there, and the test fails on its peak
// instead of the whole machine running out of memory. Usage:
//   const watch = watchRss(server.process!.pid);
//   ...abuse...
//   const { before, peak } = watch.stop();   // bytes
import { readFileSync } from "node:fs";

export function rssBytes(pid: number): number {
  const kilobytes = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  if (kilobytes === undefined) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kilobytes) * 1024;
}

export interface RssWatch {
  /** Ends the sampling; `peak` is the largest sample since the start (the last one included). */
  stop(): { before: number; peak: number; killed: boolean };
}

/** Samples every `intervalMs`; past `before + ceilingBytes` the process is killed (SIGKILL). */
export function watchRss(pid: number, ceilingBytes = 1024 * 1024 * 1024, intervalMs = 20): RssWatch {
  const before = rssBytes(pid);
  let peak = before;
  let killed = false;
  const sample = () => {
    try {
      peak = Math.max(peak, rssBytes(pid));
    } catch {
      return; // the process has ended
    }
    if (peak > before + ceilingBytes && !killed) {
      killed = true;
      process.kill(pid, "SIGKILL");
    }
  };
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { before, peak, killed };
    },
  };
}
