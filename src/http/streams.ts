// Long-lived text/plain answers (followed logs). A follower may wait minutes for the next line;
// the server's idle timeout and any proxy in front would cut a silent connection, so a quiet
// stream sends a heartbeat: an empty line. text/plain has no comment syntax, and log output
// already holds empty lines, so readers lose nothing by skipping them.

/** How long a stream may stay silent before a heartbeat: well under the server's idle timeout. */
export const HEARTBEAT_MS = 15_000;
const HEARTBEAT = new TextEncoder().encode("\n");

/** `source` as it is, plus an empty line whenever nothing was sent for `intervalMs`. */
export function withHeartbeat(source: ReadableStream<Uint8Array>, intervalMs = HEARTBEAT_MS): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let timer: ReturnType<typeof setInterval> | undefined;
  let lastSent = Date.now();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => {
        if (Date.now() - lastSent < intervalMs) return;
        lastSent = Date.now();
        controller.enqueue(HEARTBEAT);
      }, Math.max(100, Math.min(1_000, Math.floor(intervalMs / 5))));
    },
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          clearInterval(timer);
          controller.close();
          return;
        }
        lastSent = Date.now();
        controller.enqueue(value);
      } catch (error) {
        clearInterval(timer);
        controller.error(error);
      }
    },
    cancel(reason) {
      clearInterval(timer);
      return reader.cancel(reason);
    },
  });
}
