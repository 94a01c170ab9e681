// How a database's status follows its container, and the storage allowance Docker can't enforce.
import { describe, expect, test } from "bun:test";
import { liveStatus, storageView } from "../../../src/databases/view";

const GIB = 1024 ** 3;

describe("live status from the container", () => {
  const running = { status: "running" as const, reason: null };
  const stopped = { status: "stopped" as const, reason: null };
  const failed = { status: "failed" as const, reason: "did not answer" };

  test("a running container is a running database, whatever was recorded", () => {
    for (const current of [running, stopped, failed]) expect(liveStatus(current, { state: "running", exitCode: null })).toEqual(running);
  });

  test("a database stopped on request stays stopped", () => {
    expect(liveStatus(stopped, { state: "exited", exitCode: 0 })).toEqual(stopped);
    expect(liveStatus(stopped, { state: "exited", exitCode: 137 })).toEqual(stopped);
  });

  test("an engine that exited on its own is failed, with the exit code", () => {
    expect(liveStatus(running, { state: "exited", exitCode: 137 })).toEqual({ status: "failed", reason: expect.stringContaining("code 137") });
    expect(liveStatus(running, { state: "restarting", exitCode: null }).status).toBe("failed");
  });

  test("a clean stop from outside the platform is stopped; a failure keeps its reason", () => {
    expect(liveStatus(running, { state: "exited", exitCode: 0 })).toEqual({ status: "stopped", reason: "Stopped outside the platform" });
    expect(liveStatus(failed, { state: "exited", exitCode: 0 })).toEqual(failed);
  });

  test("a missing container is failed, and says start recreates it", () => {
    expect(liveStatus(running, null)).toEqual({ status: "failed", reason: expect.stringContaining("POST start") });
    expect(liveStatus({ status: "stopped", reason: null }, null)).toEqual({ status: "failed", reason: expect.stringContaining("POST start") });
  });

  test("a failure keeps its own reason when its container is gone (a failed create removes it)", () => {
    expect(liveStatus(failed, null)).toEqual(failed);
  });
});

describe("storage allowance", () => {
  test("under the allowance: no warning", () => {
    expect(storageView(GIB / 2, 1)).toEqual({ allowanceBytes: GIB, usedBytes: GIB / 2, overAllowance: false, warning: null });
  });

  test("over the allowance: a warning that says the volume cannot be capped", () => {
    const view = storageView(3 * GIB, 2);
    expect(view.overAllowance).toBe(true);
    expect(view.warning).toContain("3.00 GB of its 2 GB");
    expect(view.warning).toContain("cannot be capped");
  });

  test("not measured yet: unknown, no warning", () => {
    expect(storageView(null, 5)).toEqual({ allowanceBytes: 5 * GIB, usedBytes: null, overAllowance: false, warning: null });
  });
});
