// A new app whose `volumes` lists the name of a detached volume gets that volume back with its
// data: the deploy says so in its answer (`reattached`) and in its build log, never silently.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip } from "../../helpers/apps";
import { deleteAllVolumes } from "../../helpers/volumes";

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("reattach")).key;
}, 60_000);
afterAll(async () => {
  await deleteAllApps(server, key);
  await deleteAllVolumes(server, key);
  await server.stop();
}, 60_000);

// Nothing in the ZIP is detected: each build fails at once and no container mounts the volume.
const nothingToRun = appZip({ "README.txt": "nothing to run" });
const volumes = JSON.stringify([{ name: "kept", mountPath: "/data" }, { name: "fresh", mountPath: "/srv" }]);

test("a deploy that takes a detached volume back answers `reattached` and logs it", async () => {
  const first = await deployZip(server, key, { name: "first", runtime: "node", memoryMB: "64", volumes: JSON.stringify([{ name: "kept", mountPath: "/data" }]) }, nothingToRun);
  expect(first.body.reattached).toEqual([]);
  expect((await server.request("PUT", `/api/apps/${first.body.app.id}/settings`, { key, body: { volumes: [] } })).status).toBe(200);

  const second = await deployZip(server, key, { name: "second", runtime: "node", memoryMB: "64", volumes }, nothingToRun);
  expect(second.status).toBe(202);
  expect(second.body.reattached).toEqual(["kept"]);
  const build = await server.request("GET", `/api/apps/${second.body.app.id}/builds/${second.body.buildId}`, { key });
  expect(JSON.stringify(build.body)).toContain("Detached volume(s) attached again with the data they kept: kept");
}, 60_000);
