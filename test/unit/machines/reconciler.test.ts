// The reconciler with a fake engine: runs asked for while one is under way (the one at start, a
// scheduled tick, a request) share it, so no caller gets a report missing what the other removed;
// and a report keeps the last removals until a run removes others.
import { expect, test } from "bun:test";
import type { DockerDriver } from "../../../src/docker/driver";
import { LABEL_APP } from "../../../src/docker/container-spec";
import { Machines } from "../../../src/machines/service";
import { Reconciler, type ManagedContainer } from "../../../src/machines/reconciler";

const container = (id: string) => ({ id, name: `app-${id}`, state: "running", labels: { [LABEL_APP]: "app_1" } });

test("runs asked for at once share one run and its removals; the removals stay listed until a run removes others", async () => {
  let listed = [container("c1")];
  const driver = { listContainers: async () => listed } as unknown as DockerDriver;
  const reconciler = new Reconciler(new Machines(new Map([["local", driver]])));
  const retireCalls: string[][] = [];
  reconciler.register({
    label: LABEL_APP,
    sync: () => new Set(["app_1"]),
    async retire(containers: ManagedContainer[]) {
      retireCalls.push(containers.map((each) => each.id));
      await Bun.sleep(50);
      const removed = containers.filter((each) => listed.some((present) => present.id === each.id));
      listed = listed.filter((each) => !removed.some((gone) => gone.id === each.id));
      return removed;
    },
  });

  const [atStart, onRequest] = await Promise.all([reconciler.run(), reconciler.run()]);
  expect(retireCalls).toEqual([["c1"]]);
  expect(onRequest).toBe(atStart);
  expect(onRequest.removedContainers.map((each) => each.id)).toEqual(["c1"]);

  expect((await reconciler.run()).removedContainers.map((each) => each.id)).toEqual(["c1"]);
  listed = [container("c2")];
  expect((await reconciler.run()).removedContainers.map((each) => each.id)).toEqual(["c2"]);
});
