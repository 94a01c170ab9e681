// Build slots: per-workspace and platform-wide limits, first come first served, no head-of-line
// blocking across workspaces, and a canceled waiter leaves the line.
import { expect, test } from "bun:test";
import { BuildCanceledWhileQueued, BuildSlots } from "../../../src/apps/build-queue";

const never = new AbortController().signal;

test("builds beyond the limits wait in order, with their position, and run as slots free up", async () => {
  const slots = new BuildSlots({ perWorkspace: 1, total: 2 });
  const started: string[] = [];
  const take = (workspace: string, build: string) => slots.acquire(workspace, build, never).then((release) => (started.push(build), release));
  const a1 = take("a", "a1");
  const a2 = take("a", "a2");
  const b1 = take("b", "b1");
  const c1 = take("c", "c1");
  await Bun.sleep(0);
  // a2 waits for workspace a; b1 runs beside a1 (a2 ahead of it in line does not block it); c1 waits for the platform.
  expect(started).toEqual(["a1", "b1"]);
  expect([slots.position("a2"), slots.position("c1"), slots.position("a1")]).toEqual([1, 2, null]);
  (await a1)();
  await Bun.sleep(0);
  expect(started).toEqual(["a1", "b1", "a2"]);
  (await b1)();
  await Bun.sleep(0);
  expect(started).toEqual(["a1", "b1", "a2", "c1"]);
  (await a2)();
  (await c1)();
});

test("a waiter that is canceled leaves the line; a release counts once", async () => {
  const slots = new BuildSlots({ perWorkspace: 1, total: 1 });
  const first = await slots.acquire("a", "first", never);
  const cancel = new AbortController();
  const canceled = slots.acquire("a", "canceled", cancel.signal);
  const next = slots.acquire("a", "next", never);
  expect(slots.position("next")).toBe(2);
  cancel.abort();
  await expect(canceled).rejects.toBeInstanceOf(BuildCanceledWhileQueued);
  expect(slots.position("next")).toBe(1);
  first();
  first();
  const release = await next;
  const later = slots.acquire("b", "later", never);
  await Bun.sleep(0);
  expect(slots.position("later")).toBe(1); // the double release did not free a second slot
  release();
  (await later)();
});
