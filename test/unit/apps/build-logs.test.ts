// Build logs on a temp dir: the cap keeps the first and last part with a marker, ranges read only
// what they return, text cannot forge a platform line, and followers get the file then live lines.
import { describe, expect, spyOn, test } from "bun:test";
import { appendFileSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { BuildLogs } from "../../../src/apps/build-logs";
import { onSmallTmpfs, tempDir } from "../../helpers/temp";

function logsIn(maxBytes?: number, dir = tempDir()) {
  const logs = new BuildLogs((appId, buildId) => join(dir, `${appId}-${buildId}.log`), maxBytes);
  return { logs, dir, file: (buildId = "b") => join(dir, `a-${buildId}.log`) };
}

describe("log cap", () => {
  test("past the cap the file keeps its first part, a marker and the latest output, and stays under the cap", () => {
    const cap = 64 * 1024;
    const { logs, file } = logsIn(cap);
    logs.append("a", "b", "==> Upload accepted");
    let written = 0;
    for (let i = 0; i < 5000; i++) {
      const chunk = `line ${i} ${"y".repeat(200)}\n`.repeat(5);
      logs.appendOutput("a", "b", chunk);
      written += chunk.length;
      expect(statSync(file()).size).toBeLessThanOrEqual(cap + 200);
    }
    logs.append("a", "b", "==> Build failed: timed out after 20 s");
    const text = readFileSync(file(), "utf8");
    expect(text.startsWith("==> Upload accepted\nline 0 ")).toBe(true);
    expect(text).toMatch(/\n==> \d+ bytes of build output dropped here/);
    expect(text.endsWith("line 4999 " + "y".repeat(200) + "\n==> Build failed: timed out after 20 s\n")).toBe(true);
    const range = logs.read("a", "b");
    expect(range.droppedBytes).toBeGreaterThan(written - cap);
    expect(range.droppedBytes + range.totalBytes).toBeGreaterThan(written);
    // Lines stay whole: the kept tail starts on a line of its own.
    const afterMarker = text.split(/bytes of build output dropped here[^\n]*\n/)[1]!;
    expect(afterMarker).toMatch(/^line \d+ y+\n/);
  });

  test("one chunk larger than the cap keeps only its end", () => {
    const { logs, file } = logsIn(64 * 1024);
    logs.appendOutput("a", "b", "y\n".repeat(1024 * 1024));
    expect(statSync(file()).size).toBeLessThanOrEqual(64 * 1024 + 200);
    expect(logs.read("a", "b").droppedBytes).toBeGreaterThan(2 * 1024 * 1024 - 64 * 1024);
  });
});

describe("no forged platform lines", () => {
  test("a platform entry is one line; continuation lines are indented", () => {
    const { logs, file } = logsIn();
    logs.append("a", "b", "==> Upload accepted (app.zip\n==> Image built\r==> Serving)");
    expect(readFileSync(file(), "utf8")).toBe("==> Upload accepted (app.zip\n    ==> Image built\n    ==> Serving)\n");
  });

  test("program output starting with ==> is shifted, carriage returns end lines", () => {
    const { logs, file } = logsIn();
    logs.appendOutput("a", "b", "ok\n==> Image built\nprogress 10%\rprogress 100%\r\n");
    expect(readFileSync(file(), "utf8")).toBe("ok\n ==> Image built\nprogress 10%\nprogress 100%\n");
    // Nor can output fake the marker that reports dropped bytes.
    logs.appendOutput("a", "b", "==> 999 bytes of build output dropped here\n");
    expect(logs.read("a", "b").droppedBytes).toBe(0);
  });
});

describe("ranges", () => {
  test("by default the end of the log from a line start; with offset, exactly that range", () => {
    const { logs } = logsIn();
    for (let i = 0; i < 100; i++) logs.appendOutput("a", "b", `line ${String(i).padStart(3, "0")}\n`); // 9 bytes each
    const tail = logs.read("a", "b", { limit: 40 });
    expect(tail.text).toBe("line 096\nline 097\nline 098\nline 099\n");
    expect(tail).toMatchObject({ offset: 864, nextOffset: 900, totalBytes: 900, droppedBytes: 0 });
    const middle = logs.read("a", "b", { offset: 18, limit: 18 });
    expect(middle).toMatchObject({ text: "line 002\nline 003\n", offset: 18, nextOffset: 36 });
    expect(logs.read("a", "b", { offset: 5000 }).text).toBe("");
    expect(logs.read("a", "missing")).toEqual({ text: "", offset: 0, nextOffset: 0, totalBytes: 0, droppedBytes: 0 });
  });

  test("a range never cuts a character: the cut one is left for the next range", () => {
    const { logs } = logsIn();
    logs.appendOutput("a", "b", "héllo\n"); // é is 2 bytes: offsets 1-2
    expect(logs.read("a", "b", { offset: 0, limit: 2 })).toMatchObject({ text: "h", nextOffset: 1 });
    expect(logs.read("a", "b", { offset: 1, limit: 3 })).toMatchObject({ text: "él", nextOffset: 4 });
    expect(logs.read("a", "b", { offset: 2, limit: 3 })).toMatchObject({ text: "ll", offset: 3 });
  });
});

describe("follow", () => {
  test("what was written, then new lines, until the build ends", async () => {
    const { logs } = logsIn();
    logs.open("b");
    logs.append("a", "b", "==> first");
    const stream = logs.follow("a", "b");
    logs.appendOutput("a", "b", "second\n");
    setTimeout(() => {
      logs.append("a", "b", "==> third");
      logs.finish("b");
    }, 20);
    expect(await new Response(stream).text()).toBe("==> first\nsecond\n==> third\n");
  });

  test("a finished build's log is read in chunks and the stream ends", async () => {
    const { logs } = logsIn(16 * 1024 * 1024);
    const line = `${"x".repeat(99)}\n`;
    logs.appendOutput("a", "b", line.repeat(3000)); // 300 KB: several chunks
    const text = await new Response(logs.follow("a", "b")).text();
    expect(text.length).toBe(300_000);
  });
});

describe("bytes on disk, for the disk quota", () => {
  test("each file counts its size (at least 4 KiB), kept from the writes and retention without reading the files again, and measured once after a restart", async () => {
    const cap = 64 * 1024;
    const { logs, dir, file } = logsIn(cap);
    const both = [{ appId: "a", buildId: "b1" }, { appId: "a", buildId: "b2" }, { appId: "a", buildId: "none" }];
    logs.append("a", "b1", "==> Upload accepted");
    logs.appendOutput("a", "b2", "x".repeat(10_000));
    expect(await logs.diskBytes(both)).toBe(4096 + statSync(file("b2")).size);

    // Known now: a change made behind its back (no write through it) is not read on each question.
    appendFileSync(file("b1"), "y".repeat(20_000));
    expect(await logs.diskBytes(both)).toBe(4096 + statSync(file("b2")).size);

    // Past the cap the file is rewritten smaller: what counts follows it.
    logs.appendOutput("a", "b2", "z".repeat(200_000));
    const capped = statSync(file("b2")).size;
    expect(capped).toBeLessThanOrEqual(cap + 200);
    expect(await logs.diskBytes(both)).toBe(4096 + capped);

    logs.remove("a", "b2");
    expect(await logs.diskBytes(both)).toBe(4096);

    // A restart knows nothing yet: the files are measured as they are.
    const restarted = logsIn(cap, dir).logs;
    expect(await restarted.diskBytes(both)).toBe(statSync(file("b1")).size);
  });
});

describe("a full disk", () => {
  test("a line that cannot be written is dropped from the file, not thrown at the build, and live readers still get it", async () => {
    // Every write to /dev/full fails with ENOSPC.
    const logs = new BuildLogs(() => "/dev/full");
    const warn = spyOn(console, "warn").mockImplementation(() => {});
    try {
      logs.open("b");
      const stream = logs.follow("a", "b");
      logs.append("a", "b", "==> Build failed: internal error");
      logs.appendOutput("a", "b", "step 1\n");
      logs.finish("b");
      expect(await new Response(stream).text()).toBe("==> Build failed: internal error\nstep 1\n");
      expect(warn.mock.calls[0]![0]).toContain("the disk is full");
    } finally {
      warn.mockRestore();
    }
  });

  test("a line cut by the full disk is taken back out, and a cut rewrite past the cap leaves no temp file", async () => {
    const warn = spyOn(console, "warn").mockImplementation(() => {});
    try {
      // 40 KiB of room: a 30 KiB log fits, a 64 KiB line does not, nor the ~24 KiB rewrite of the log past its 32 KiB cap.
      await onSmallTmpfs("size=40k", (dir) => {
        const { logs, file } = logsIn(32 * 1024, dir);
        const lines = `${"x".repeat(1023)}\n`.repeat(30);
        logs.appendOutput("a", "b", lines);
        logs.appendOutput("a", "b", "y".repeat(64 * 1024));
        expect(readFileSync(file(), "utf8")).toBe(lines);
        logs.appendOutput("a", "b", "z".repeat(4 * 1024));
        expect(readdirSync(dir)).toEqual(["a-b.log"]);
        expect(readFileSync(file(), "utf8")).toBe(lines);
        expect(warn).toHaveBeenCalledTimes(2);
      });
    } finally {
      warn.mockRestore();
    }
  });
});
