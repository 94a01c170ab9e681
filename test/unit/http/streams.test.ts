// The heartbeat of followed logs: a quiet source gets empty lines at the interval, a busy one
// none, the source's bytes pass unchanged, and a reader going away cancels the source.
import { expect, test } from "bun:test";
import { withHeartbeat } from "../../../src/http/streams";

function controlledSource() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    cancel: () => void (cancelled = true),
  });
  return {
    stream,
    write: (text: string) => controller.enqueue(new TextEncoder().encode(text)),
    end: () => controller.close(),
    cancelled: () => cancelled,
  };
}

/** Reads the stream as it comes; `take` answers what arrived since the last take. */
function collect(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader();
  let text = "";
  let ended = false;
  void (async () => {
    for (;;) {
      const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) return void (ended = true);
      text += new TextDecoder().decode(next.value);
    }
  })();
  return {
    take() {
      const arrived = text;
      text = "";
      return arrived;
    },
    ended: () => ended,
    cancel: () => reader.cancel(),
  };
}

test("a quiet source gets empty lines; its own lines pass unchanged; the end of the source ends the stream", async () => {
  const source = controlledSource();
  const reading = collect(withHeartbeat(source.stream, 200));
  source.write("first line\n");
  await Bun.sleep(700);
  const quiet = reading.take();
  expect(quiet.startsWith("first line\n")).toBe(true);
  expect(quiet.slice("first line\n".length)).toMatch(/^\n{2,4}$/);
  source.write("second line\n");
  source.end();
  await Bun.sleep(50);
  expect(reading.take()).toBe("second line\n");
  expect(reading.ended()).toBe(true);
});

test("a source that keeps talking gets no heartbeat", async () => {
  const source = controlledSource();
  const reading = collect(withHeartbeat(source.stream, 300));
  const talking = setInterval(() => source.write("tick\n"), 50);
  await Bun.sleep(900);
  clearInterval(talking);
  const text = reading.take();
  expect(text.length).toBeGreaterThan(0);
  expect(text).not.toContain("\n\n");
  await reading.cancel();
});

test("a reader that goes away cancels the source", async () => {
  const source = controlledSource();
  await collect(withHeartbeat(source.stream, 200)).cancel();
  expect(source.cancelled()).toBe(true);
});
