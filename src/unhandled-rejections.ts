// What `platform serve` does with a promise that rejects while nobody waits on it: it says so
// loudly and keeps serving. Bun's default is to end the process, which here would take the API
// and the public proxy down for one failed background write (a certificate row on a full disk,
// say). Every background task catches its own errors; this is the net under a missed one.

/** Installs the handler once per process; returns what it logs through, for the tests. */
export function keepServingOnUnhandledRejection(log: (line: string) => void = console.error) {
  process.on("unhandledRejection", (reason) => {
    const described = reason instanceof Error ? (reason.stack ?? `${reason.name}: ${reason.message}`) : String(reason);
    log(`[platform] UNHANDLED REJECTION, the platform keeps running: ${described.replace(/\n\s*/g, " | ")}`);
  });
}
