// The proxy's clock, read once where an event starts (a socket callback, a timer, a connection
// made) and shared by everything that event does, as nginx reads its clock once per turn of its
// event loop. A proxied request used to read it nine times, a call out of JavaScript each: reading
// it twice instead gave 2-4% more req/s (the proxy alone on one core, with wrk and a Bun app on
// the other).
// Times are in ms on performance.now()'s monotonic scale; wallNow() is the same instant since the
// epoch, for what is kept by the minute (traffic).

let current = performance.now();
/** Date.now() minus performance.now(), taken again by the sweep: the system clock may be set while the proxy runs. */
let wallOffset = Date.now() - current;

/** Reads the clock: called first by each entry point of the proxy. Returns the time read. */
export function readClock(): number {
  current = performance.now();
  return current;
}

/** The time the event being handled started. */
export const now = (): number => current;

/** The same time, in ms since the epoch. */
export const wallNow = (): number => current + wallOffset;

/** Reads the system clock again (the proxy's sweep does, twice a second). */
export function syncWallClock() {
  wallOffset = Date.now() - readClock();
}
