// The queue of certificate orders (src/certificates/fair-queue.ts): workspaces take turns, so one
// with many domains cannot hold back another's.
import { describe, expect, test } from "bun:test";
import { FairQueue } from "../../../src/certificates/fair-queue";

/** Everything the queue gives, in order, until it is empty. */
function drain(queue: FairQueue<string>): string[] {
  const taken: string[] = [];
  for (let item = queue.next(); item !== undefined; item = queue.next()) taken.push(item);
  return taken;
}

describe("FairQueue", () => {
  test("owners take turns, each in its own order", () => {
    const queue = new FairQueue<string>();
    for (const host of ["a1", "a2", "a3", "a4"]) queue.add("workspace-a", host);
    queue.add("workspace-b", "b1");
    queue.add("workspace-b", "b2");
    queue.add("workspace-c", "c1");
    expect(drain(queue)).toEqual(["a1", "b1", "c1", "a2", "b2", "a3", "a4"]);
    expect(queue.size).toBe(0);
  });

  test("an owner arriving while another's long line is served gets the next turn", () => {
    const queue = new FairQueue<string>();
    for (let index = 1; index <= 50; index++) queue.add("flood", `flood-${index}`);
    expect([queue.next(), queue.next()]).toEqual(["flood-1", "flood-2"]);
    queue.add("victim", "victim-1");
    expect(queue.next()).toBe("victim-1");
    expect(queue.next()).toBe("flood-3");
  });

  test("an item waits once; a deleted one is never given", () => {
    const queue = new FairQueue<string>();
    queue.add("a", "x");
    queue.add("a", "x");
    queue.add("b", "x");
    queue.add("a", "y");
    queue.add("b", "z");
    expect(queue.size).toBe(3);
    expect(queue.has("x")).toBe(true);
    queue.delete("x");
    queue.delete("never-added");
    expect(queue.has("x")).toBe(false);
    expect(drain(queue)).toEqual(["y", "z"]);
  });
});
