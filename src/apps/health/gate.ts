// The release gate: a new container is switched to only once its health check passes
// `healthyThreshold` times in a row. Without a path the check is a TCP connect (../readiness.ts),
// given the start period plus one timeout to succeed. The gate gives up when the container exits or when the start period and
// the threshold's probes have run out, with the last probe's result as the reason.
import { waitUntilListening } from "../readiness";
import { probe } from "./probe";
import { describeProbe, type HealthCheck, type HealthProbe } from "./settings";

/** During a release probes follow each other faster than the running app's interval, never slower. */
const GATE_SPACING_MS = 500;

export type GateOutcome = { outcome: "ready" } | { outcome: "exited" } | { outcome: "timeout"; reason: string };

export async function waitUntilHealthy(options: {
  host: string;
  port: number;
  check: HealthCheck;
  hostHeader: string;
  /** Checked after each failed probe: a container that exited will never pass. */
  stillRunning: () => Promise<boolean>;
  log: (line: string) => void;
}): Promise<GateOutcome> {
  const { host, port, check } = options;
  if (check.path === null) {
    // The start period is the time to listen, as it is the time to pass for a path.
    const limitMs = (check.startPeriodSeconds + check.timeoutSeconds) * 1000;
    const outcome = await waitUntilListening({ host, port, timeoutMs: limitMs, stillRunning: options.stillRunning });
    if (outcome === "listening") return { outcome: "ready" };
    return outcome === "exited" ? { outcome } : { outcome, reason: `the app did not accept connections on port ${port} within ${limitMs / 1000} s` };
  }
  const spacingMs = Math.min(GATE_SPACING_MS, check.intervalSeconds * 1000);
  const limitMs = check.startPeriodSeconds * 1000 + check.healthyThreshold * (check.timeoutSeconds * 1000 + spacingMs);
  const deadline = Date.now() + limitMs;
  options.log(`==> Waiting for GET ${check.path} on port ${port} to answer 2xx/3xx ${check.healthyThreshold} time(s) in a row (at most ${Math.ceil(limitMs / 1000)} s)`);
  let passes = 0;
  let last: HealthProbe | null = null;
  let lastLogged = "";
  while (Date.now() < deadline) {
    last = await probe({ host, port, path: check.path, hostHeader: options.hostHeader, timeoutMs: check.timeoutSeconds * 1000 });
    if (last.passed) {
      if (++passes >= check.healthyThreshold) {
        options.log(`==> Health check passed: ${describeProbe(last, check.path)}`);
        return { outcome: "ready" };
      }
    } else {
      passes = 0;
      // One line per change of outcome, not one per probe.
      const outcome = last.httpStatus !== null ? `HTTP ${last.httpStatus}` : (last.error ?? "");
      if (outcome !== lastLogged) options.log(`    probe failed: ${describeProbe(last, check.path)}`);
      lastLogged = outcome;
      if (!(await options.stillRunning())) return { outcome: "exited" };
    }
    await Bun.sleep(Math.min(spacingMs, Math.max(0, deadline - Date.now())));
  }
  const lastResult = last ? describeProbe(last, check.path) : "no probe ran";
  return { outcome: "timeout", reason: `the app did not pass its health check within ${Math.ceil(limitMs / 1000)} s (last probe: ${lastResult})` };
}
