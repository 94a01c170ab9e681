// Traffic per app: one-minute slots over the last hour, fixed memory per app.
import { expect, test } from "bun:test";
import { TrafficRecorder } from "../../../src/proxy/traffic";

const MINUTE = 60_000;
const start = 1_700_000_000_000 - (1_700_000_000_000 % MINUTE);

test("counts by status class, 429s, bytes and latency percentiles, per window", () => {
  const traffic = new TrafficRecorder();
  for (let i = 0; i < 198; i++) traffic.record("shop", { status: 200, bytesIn: 10, bytesOut: 100, upstreamMs: 3 }, start);
  traffic.record("shop", { status: 502, bytesIn: 0, bytesOut: 0, upstreamMs: null }, start);
  traffic.record("shop", { status: 429, bytesIn: 0, bytesOut: 0, upstreamMs: null }, start);
  traffic.record("shop", { status: 200, bytesIn: 0, bytesOut: 0, upstreamMs: 800 }, start + 10 * MINUTE);
  const lastHour = traffic.window("shop", 60, start + 10 * MINUTE);
  expect(lastHour).toEqual({
    requests: 201,
    byStatusClass: { "1xx": 0, "2xx": 199, "3xx": 0, "4xx": 1, "5xx": 1 },
    rateLimited: 1,
    bytesIn: 1980,
    bytesOut: 19800,
    upstreamLatencyMs: { p50: 5, p99: 5 },
  });
  expect(traffic.window("shop", 5, start + 10 * MINUTE)).toMatchObject({ requests: 1, upstreamLatencyMs: { p50: 1000, p99: 1000 } });
});

test("slots older than the window are left out, and a slot an hour old is reused, not added to", () => {
  const traffic = new TrafficRecorder();
  traffic.record("shop", { status: 200, bytesIn: 0, bytesOut: 0, upstreamMs: 1 }, start);
  traffic.record("shop", { status: 200, bytesIn: 0, bytesOut: 0, upstreamMs: 1 }, start + 60 * MINUTE);
  expect(traffic.window("shop", 60, start + 60 * MINUTE).requests).toBe(1);
  expect(traffic.window("shop", 5, start + 120 * MINUTE).requests).toBe(0);
  expect(traffic.window("shop", 5, start + 120 * MINUTE).upstreamLatencyMs).toBeNull();
  expect(traffic.window("unknown", 60, start).requests).toBe(0);
  expect(traffic.window(null, 60, start).requests).toBe(0);
});

test("a request counts in its own minute even when the clock went back since the last one", () => {
  const traffic = new TrafficRecorder();
  traffic.record("shop", { status: 200, bytesIn: 0, bytesOut: 0, upstreamMs: 1 }, start + 5 * MINUTE + 30_000);
  // The system clock was set back: this request belongs to an earlier minute, not the one recorded last.
  traffic.record("shop", { status: 500, bytesIn: 0, bytesOut: 0, upstreamMs: 1 }, start + 1_000);
  expect(traffic.window("shop", 1, start + 5 * MINUTE)).toMatchObject({ requests: 1, byStatusClass: { "2xx": 1, "5xx": 0 } });
  expect(traffic.window("shop", 6, start + 5 * MINUTE)).toMatchObject({ requests: 2, byStatusClass: { "2xx": 1, "5xx": 1 } });
});
