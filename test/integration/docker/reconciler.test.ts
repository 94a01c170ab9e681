// The reconciler against the real engine: it hands each owner its labelled containers, reports
// labelled containers nobody knows and never deletes them, and lists what an owner retired.
import { afterAll, expect, test } from "bun:test";
import { Machines } from "../../../src/machines/service";
import { Reconciler, type ManagedContainer } from "../../../src/machines/reconciler";
import { LABEL_APP, LABEL_MANAGED, LABEL_WORKSPACE } from "../../../src/docker/container-spec";
import { config, dockerJson, localDriver, uniqueName } from "../../helpers/docker";

const driver = localDriver();
const made: string[] = [];
afterAll(async () => {
  for (const id of made) await driver.removeContainer(id);
});

async function labelledContainer(appId: string) {
  const id = await driver.createContainer({
    name: uniqueName("platform-test-reconcile"),
    image: config.images.node,
    command: ["sleep", "300"],
    labels: { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: "ws_reconcile", [LABEL_APP]: appId },
    memoryMB: 32,
  });
  made.push(id);
  await driver.startContainer(id);
  return id;
}

test("known containers go to their owner, unknown ones are reported and left running", async () => {
  const known = await labelledContainer("app_known");
  const stray = await labelledContainer(`app_stray_${Date.now()}`);
  const reconciler = new Reconciler(new Machines(new Map([["local", driver]])));
  const seen: ManagedContainer[] = [];
  reconciler.register({
    label: LABEL_APP,
    sync(containers) {
      seen.push(...containers);
      return new Set(["app_known"]);
    },
  });
  const report = await reconciler.run();
  expect(seen.map((container) => container.id)).toEqual(expect.arrayContaining([known, stray]));
  expect(seen.find((container) => container.id === known)?.state).toBe("running");
  const reportedIds = report.unknownContainers.map((container) => container.id);
  expect(reportedIds).toContain(stray);
  expect(reportedIds).not.toContain(known);
  expect(report.unreachableMachines).toEqual([]);
  const [inspected] = await dockerJson("inspect", stray);
  expect(inspected.State.Running).toBe(true);
});

test("an owner retires only containers of resources it knows, and the report lists them", async () => {
  const known = await labelledContainer("app_retiring");
  const stray = await labelledContainer(`app_stray_${Date.now()}`);
  const reconciler = new Reconciler(new Machines(new Map([["local", driver]])));
  const offered: string[] = [];
  reconciler.register({
    label: LABEL_APP,
    sync: () => new Set(["app_retiring"]),
    async retire(containers) {
      offered.push(...containers.map((container) => container.id));
      return containers.filter((container) => container.id === known);
    },
  });
  const report = await reconciler.run();
  expect(offered).toContain(known);
  expect(offered).not.toContain(stray);
  expect(report.removedContainers.map((container) => container.id)).toEqual([known]);
});

test("an unreachable machine is reported, not fatal", async () => {
  const machines = Machines.fromConfig({ ...config, dockerHost: "unix:///nonexistent/docker.sock" });
  const report = await new Reconciler(machines).run();
  expect(report.unreachableMachines).toEqual(["local"]);
  expect(report.unknownContainers).toEqual([]);
  expect(report.removedContainers).toEqual([]);
});
