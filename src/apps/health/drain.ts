// The drain of a release: the old container is stopped only once the public proxy has no request
// in flight to it any more (or PLATFORM_RELEASE_DRAIN_SECONDS have passed). The route already points
// at the new container, so nothing new arrives; only what was sent before the switch is waited for.
// A WebSocket is no request in flight (the proxy does not count its tunnel): it may stay open for
// hours and would end with the container anyway. A stop or delete that preempts the release ends
// the wait at once.

/** Requests in flight through the public proxy to an upstream address (the proxy's thread answers). */
export type InFlightCount = (host: string, port: number) => number;

const POLL_MS = 50;

/** Resolves with the requests still in flight when it stopped waiting (0: drained). */
export async function drain(inFlight: InFlightCount, upstream: { host: string; port: number }, limitMs: number, signal?: AbortSignal): Promise<number> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const left = inFlight(upstream.host, upstream.port);
    if (left === 0 || Date.now() >= deadline || signal?.aborted) return left;
    await Bun.sleep(Math.min(POLL_MS, deadline - Date.now()));
  }
}
