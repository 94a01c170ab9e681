// While a restore of one of an app's volumes runs, nothing may give the app a new container (it
// would mount the old content, and what it wrote would be lost at the swap): start, restart,
// redeploy, settings, env changes, rollback, attach and a deploy listing the volume answer 409 BUSY.
// The restore is stood in for by its record (pending), as the restore service writes it first.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip } from "../../helpers/apps";

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("restore-busy")).key;
}, 60_000);
afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

function recordRestore(volumeId: string, workspaceId: string, status: string) {
  const db = new Database(join(server.dataDir, "platform.sqlite"));
  try {
    db.run("PRAGMA busy_timeout = 5000");
    db.run(
      "INSERT INTO volume_restores (id, volume_id, workspace_id, backup_id, status, actor_type, previous_engine_volume_name, new_engine_volume_name, started_at) VALUES (?, ?, ?, 'vbk_x', ?, 'api_key', 'old', 'new', ?)",
      [`vrs_${crypto.randomUUID().slice(0, 8)}`, volumeId, workspaceId, status, Date.now()],
    );
  } finally {
    db.close();
  }
}

test("an app whose volume is being restored gets no new container until the restore ends", async () => {
  const volumes = JSON.stringify([{ name: "restoring", mountPath: "/data" }]);
  // Nothing in the ZIP is detected: the build fails at once and no container mounts the volume.
  const deployed = await deployZip(server, key, { name: "restoring-app", runtime: "node", memoryMB: "64", volumes }, appZip({ "README.txt": "nothing to run" }));
  expect(deployed.status).toBe(202);
  const { id: appId, workspaceId, volumes: [volume] } = deployed.body.app;
  const other = await deployZip(server, key, { name: "other-app", runtime: "node", memoryMB: "64" }, appZip({ "README.txt": "nothing to run" }));
  recordRestore(volume.id, workspaceId, "running");

  const busy = async (method: string, path: string, body?: unknown) => {
    const answer = await server.request(method, path, { key, body });
    return [answer.status, answer.body.code];
  };
  expect(await busy("POST", `/api/apps/${appId}/start`)).toEqual([409, "BUSY"]);
  expect(await busy("POST", `/api/apps/${appId}/restart`)).toEqual([409, "BUSY"]);
  expect(await busy("POST", `/api/apps/${appId}/redeploy`)).toEqual([409, "BUSY"]);
  expect(await busy("PUT", `/api/apps/${appId}/settings`, { memoryMB: 96 })).toEqual([409, "BUSY"]);
  expect(await busy("PUT", `/api/apps/${appId}/env`, { envVars: { A: "1" } })).toEqual([409, "BUSY"]);
  expect(await busy("POST", `/api/apps/${appId}/builds/${deployed.body.buildId}/rollback`)).toEqual([409, "BUSY"]);
  const again = await deployZip(server, key, { name: "restoring-app", runtime: "node", memoryMB: "64", volumes }, appZip({ "README.txt": "nothing to run" }));
  expect([again.status, again.body.code]).toEqual([409, "BUSY"]);
  // The volume, detached, is not attached elsewhere meanwhile either.
  const db = new Database(join(server.dataDir, "platform.sqlite"));
  db.run("UPDATE volumes SET app_id = NULL WHERE id = ?", [volume.id]);
  db.close();
  expect(await busy("POST", `/api/volumes/${volume.id}/attach`, { appId: other.body.app.id })).toEqual([409, "BUSY"]);
}, 120_000);
