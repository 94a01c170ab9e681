// A full disk, recognised whichever layer found it, and the disk.low event: raised once per fall
// under the threshold, not at every check that finds it low.
import { expect, spyOn, test } from "bun:test";
import { tmpdir } from "node:os";
import { isDiskFull } from "../../../src/http/errors";
import { DiskMonitor } from "../../../src/platform/disk";
import { PlatformEvents } from "../../../src/platform/events";

test("ENOSPC, EDQUOT and SQLite's SQLITE_FULL are a full disk; other failures are not", () => {
  for (const code of ["ENOSPC", "EDQUOT", "SQLITE_FULL"]) expect(isDiskFull(Object.assign(new Error(code), { code }))).toBe(true);
  for (const error of [Object.assign(new Error("EACCES"), { code: "EACCES" }), new Error("plain"), null, undefined, "ENOSPC"]) expect(isDiskFull(error)).toBe(false);
});

test("disk.low is raised once when the free space falls under the threshold, not at every check", () => {
  const warn = spyOn(console, "warn").mockImplementation(() => {});
  try {
    const events = new PlatformEvents();
    // Any real disk has less than 100% free and more than 0% free: the thresholds stand for "low" and "fine".
    const low = new DiskMonitor(tmpdir(), 100, events);
    const space = low.check();
    expect(space.low).toBe(true);
    expect(space.freeBytes).toBeLessThanOrEqual(space.totalBytes);
    low.check();
    expect(events.recent("ws_any").map((event) => event.type)).toEqual(["disk.low"]);
    expect(warn.mock.calls[0]![0]).toContain("[event] disk.low");

    const fine = new DiskMonitor(tmpdir(), 0, events);
    expect(fine.check().low).toBe(false);
    expect(events.recent("ws_any")).toHaveLength(1);
  } finally {
    warn.mockRestore();
  }
});
