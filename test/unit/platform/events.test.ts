// The events of GET /api/platform/status: an app's events are its workspace's alone, and a noisy
// app evicts neither another workspace's events nor the platform-wide ones (disk.low).
import { expect, spyOn, test } from "bun:test";
import { KEPT_EVENTS, PlatformEvents } from "../../../src/platform/events";

test("app events are shown only to their workspace, platform-wide ones to all; a noisy app evicts neither", () => {
  const warn = spyOn(console, "warn").mockImplementation(() => {});
  try {
    const events = new PlatformEvents();
    events.raise("disk.low", "The disk is low", { freePercent: 3 });
    events.raise("app.crash-loop", "App quiet is in a crash loop", { appId: "app_quiet", workspaceId: "ws_a", exitCode: 1 });
    for (let count = 0; count < KEPT_EVENTS * 2; count++) {
      events.raise("app.unhealthy", "App noisy is unhealthy", { appId: "app_noisy", workspaceId: "ws_b" });
    }

    const seenByA = events.recent("ws_a");
    expect(seenByA.map((event) => event.type)).toEqual(["app.crash-loop", "disk.low"]);
    const seenByB = events.recent("ws_b");
    expect(seenByB).toHaveLength(KEPT_EVENTS + 1);
    expect(seenByB.every((event) => event.data.workspaceId === "ws_b" || event.type === "disk.low")).toBe(true);
    expect(seenByB.at(-1)!.type).toBe("disk.low");
    expect(events.recent("ws_c").map((event) => event.type)).toEqual(["disk.low"]);
  } finally {
    warn.mockRestore();
  }
});
