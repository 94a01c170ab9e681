// The event-loop-lag probe for the server under test. The server watches its own loop (a timer
// measuring its own delay, src/metrics/event-loop.ts) and logs every stall of at least
// PLATFORM_EVENT_LOOP_WARN_MS, which test servers set low (test/helpers/server.ts); the probe
// reads those reports for the span of an abuse. Time the server only waited for a CPU is not a
// stall: on 2 cores shared with dockerd and the test itself, wall time alone read 100-160 ms with
// the server's thread idle. Meanwhile the probe also sends a cheap request every ~20 ms, one at a
// time, so that a test can check the server kept answering. Usage:
//   const probe = startLagProbe(server);
//   ...abuse...
//   const maxMs = await probe.stop();   // the longest stall the server reported, in ms (0: none)
import type { TestServer } from "./server";

export interface LagProbe {
  /** Every probe request's latency so far, in ms, in the order they were measured. */
  readonly latencies: number[];
  /** Ends the probe and returns the longest stall the server reported while it ran, in ms. */
  stop(): Promise<number>;
}

const STALL_REPORT = /\[event-loop\] blocked for (\d+) ms/g;

export function startLagProbe(server: TestServer, intervalMs = 20): LagProbe {
  const latencies: number[] = [];
  let stopped = false;
  const url = `${server.baseUrl}/api/platform/config`;
  const reportsFrom = server.output.length;

  const run = async () => {
    while (!stopped) {
      const started = performance.now();
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`lag probe: ${url} answered ${response.status}`);
      latencies.push(performance.now() - started);
      await Bun.sleep(intervalMs);
    }
  };
  const running = run();
  running.catch(() => {}); // reported by stop()

  return {
    latencies,
    async stop() {
      stopped = true;
      await running;
      if (latencies.length === 0) throw new Error("lag probe: no request completed while it ran");
      // A stall is reported by the first timer after it: give that timer its turn.
      await Bun.sleep(200);
      const reported = [...server.output.slice(reportsFrom).matchAll(STALL_REPORT)].map((match) => Number(match[1]));
      return Math.max(0, ...reported);
    },
  };
}
