import { describe, expect, test } from "bun:test";
import { FrameDemuxer, LineSplitter, demuxToLines } from "../../../src/docker/stream";

function frame(type: 1 | 2, text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + payload.length);
  out[0] = type;
  new DataView(out.buffer).setUint32(4, payload.length);
  out.set(payload, 8);
  return out;
}

const join = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) (out.set(part, offset), (offset += part.length));
  return out;
};

describe("docker stream demuxing", () => {
  test("separates stdout and stderr into clean lines", () => {
    const lines = demuxToLines(join(frame(1, "hello\nwor"), frame(2, "oops\n"), frame(1, "ld\n")), false);
    expect(lines).toEqual([
      { stream: "stdout", timestamp: null, text: "hello" },
      { stream: "stderr", timestamp: null, text: "oops" },
      { stream: "stdout", timestamp: null, text: "world" },
    ]);
  });

  test("frames split across chunks at any byte are reassembled", () => {
    const bytes = join(frame(1, "first line\n"), frame(2, "second\n"));
    for (let cut = 1; cut < bytes.length; cut++) {
      const demuxer = new FrameDemuxer();
      const splitter = new LineSplitter(false);
      const frames = [...demuxer.push(bytes.slice(0, cut)), ...demuxer.push(bytes.slice(cut))];
      const texts = frames.flatMap((f) => splitter.push(f)).map((l) => l.text);
      expect(texts).toEqual(["first line", "second"]);
    }
  });

  test("timestamps are split off, CRLF endings trimmed, a last partial line kept", () => {
    const lines = demuxToLines(frame(1, "2026-11-22T10:00:00.000000001Z ready\r\n2026-11-22T10:00:01Z tail"), true);
    expect(lines).toEqual([
      { stream: "stdout", timestamp: "2026-11-22T10:00:00.000000001Z", text: "ready" },
      { stream: "stdout", timestamp: "2026-11-22T10:00:01Z", text: "tail" },
    ]);
  });

  test("multi-byte characters split between frames decode intact", () => {
    const bytes = new TextEncoder().encode("é\n");
    const a = join(new Uint8Array([1, 0, 0, 0, 0, 0, 0, 1]), bytes.slice(0, 1));
    const b = join(new Uint8Array([1, 0, 0, 0, 0, 0, 0, 2]), bytes.slice(1));
    expect(demuxToLines(join(a, b), false)[0]!.text).toBe("é");
  });
});
