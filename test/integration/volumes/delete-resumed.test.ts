// A delete with deleteVolumes=true cut short by a platform restart is finished at start as it was
// asked: the app's volumes go too (the flag is kept on the app's row while it is `deleting`).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip } from "../../helpers/apps";
import { deleteAllVolumes } from "../../helpers/volumes";

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("delete-resumed")).key;
}, 60_000);
afterAll(async () => {
  await deleteAllApps(server, key);
  await deleteAllVolumes(server, key);
  await server.stop();
}, 60_000);

test("a resumed delete keeps deleteVolumes=true", async () => {
  const volumes = JSON.stringify([{ name: "goes-too", mountPath: "/data" }]);
  // Nothing in the ZIP is detected: the build fails at once and no container mounts the volume.
  const deployed = await deployZip(server, key, { name: "cut-short", runtime: "node", memoryMB: "64", volumes }, appZip({ "README.txt": "nothing to run" }));
  expect(deployed.status).toBe(202);
  const appId = deployed.body.app.id;
  for (let attempt = 0; attempt < 120 && (await server.request("GET", `/api/apps/${appId}`, { key })).body.app.status === "building"; attempt++) await Bun.sleep(250);

  // The delete's first step, as DELETE ?deleteVolumes=true records it, then the platform stops.
  await server.stop();
  const db = new Database(join(server.dataDir, "platform.sqlite"));
  db.run("UPDATE apps SET status = 'deleting', delete_volumes = 1 WHERE id = ?", [appId]);
  db.close();
  await server.boot();

  for (let attempt = 0; attempt < 120 && (await server.request("GET", "/api/apps/", { key })).body.apps.length > 0; attempt++) await Bun.sleep(250);
  expect((await server.request("GET", "/api/apps/", { key })).body.apps).toEqual([]);
  expect((await server.request("GET", "/api/volumes/", { key })).body.volumes).toEqual([]);
}, 120_000);
