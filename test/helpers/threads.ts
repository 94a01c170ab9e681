// The threads of a process, from /proc: what the kernel schedules, as opposed to what the process says.
import { readdirSync, readFileSync } from "node:fs";

export interface ThreadInfo {
  tid: number;
  /** The thread's name (comm): Bun names a Worker's thread "Worker". */
  name: string;
  nice: number;
}

export function threadsOf(pid: number | "self"): ThreadInfo[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
    // The fields after the name's closing parenthesis start at the state, field 3; nice is field 19.
    return { tid: Number(tid), name, nice: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]) };
  });
}
