// The event-loop watch: a synchronous stretch of work is reported as a stall of about its
// length; a loop that only waits is not.
import { expect, test } from "bun:test";
import { describeStall, watchEventLoop, type EventLoopStall } from "../../../src/metrics/event-loop";

/**
 * Runs on the CPU for `ms` of the thread's own CPU time: on a loaded machine wall time would count
 * the turns other processes took, which the watch rightly leaves out of a stall.
 */
function busyFor(ms: number) {
  const start = process.cpuUsage();
  const spent = () => {
    const used = process.cpuUsage(start);
    return (used.user + used.system) / 1000;
  };
  while (spent() < ms);
}

test("holding the thread for 300 ms is reported as one stall of about 300 ms", async () => {
  const stalls: EventLoopStall[] = [];
  const stop = watchEventLoop(100, (stall) => stalls.push(stall));
  await Bun.sleep(120);
  busyFor(300);
  await Bun.sleep(150);
  stop();
  expect(stalls).toHaveLength(1);
  expect(stalls[0]!.blockedMs).toBeGreaterThanOrEqual(200);
  expect(stalls[0]!.blockedMs).toBeLessThan(450);
  expect(stalls[0]!.lateMs).toBeGreaterThanOrEqual(stalls[0]!.blockedMs);
});

test("a loop that only waits reports nothing", async () => {
  const stalls: EventLoopStall[] = [];
  const stop = watchEventLoop(100, (stall) => stalls.push(stall));
  await Bun.sleep(500);
  stop();
  expect(stalls).toEqual([]);
});

test("the report names the stall, the lateness and the time spent waiting for a CPU", () => {
  expect(describeStall({ blockedMs: 134.4, lateMs: 150.2, waitingMs: 15.8 })).toBe(
    "[event-loop] blocked for 134 ms (the timer fired 150 ms late, 16 ms of it waiting for a CPU)",
  );
});
