// A black-box event-loop-lag probe for the server under test: while an abuse runs, it times a
// cheap request (`GET /api/platform/config`, public, no database work) every ~20 ms, one at a
// time. The server is a child process, so a stall of its event loop (a synchronous tree walk, a
// big rmSync) shows up here as one slow answer, which is what every tenant's API and proxy would
// feel. It measures wall time, so a machine loaded past its cores adds scheduling delay too
// (measured here: up to ~80 ms at a load of 9 on 2 cores, with the server idle meanwhile). Usage:
//   const probe = startLagProbe(server);
//   ...abuse...
//   const maxMs = await probe.stop();   // the slowest answer seen, in ms
import type { TestServer } from "./server";

export interface LagProbe {
  /** Every answer's latency so far, in ms, in the order they were measured. */
  readonly latencies: number[];
  /** Ends the probe after the request in flight and returns the slowest latency seen, in ms. */
  stop(): Promise<number>;
}

export function startLagProbe(server: TestServer, intervalMs = 20): LagProbe {
  const latencies: number[] = [];
  let stopped = false;
  const url = `${server.baseUrl}/api/platform/config`;

  const run = async () => {
    // One warm-up request: opening the connection is not the server's lag.
    await fetch(url).then((response) => response.arrayBuffer());
    while (!stopped) {
      const started = performance.now();
      const response = await fetch(url);
      await response.arrayBuffer();
      const latency = performance.now() - started;
      if (response.status !== 200) throw new Error(`lag probe: ${url} answered ${response.status}`);
      latencies.push(latency);
      const rest = intervalMs - latency;
      if (rest > 0) await Bun.sleep(rest);
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
      return Math.max(...latencies);
    },
  };
}
