// A restore stops the app that mounts the volume: the crash supervisor (which starts the
// containers of autoRestart apps that exit) must not start it again while the restore holds it,
// and an interrupted restore leaves the app running again on its old content, in one container.
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { TestServer } from "../../helpers/server";
import { dockerCli } from "../../helpers/docker";
import { poll } from "../../helpers/databases";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { completedVolumeBackup, removeEngineVolumes, waitForRestore } from "../../helpers/volume-backups";

setDefaultTimeout(240_000);

let server: TestServer;
let key: string;
let volumeId: string | undefined;

/** Appends a line to /app/data/starts at each start and answers the file. */
const startsApp = appZip({
  "package.json": JSON.stringify({ name: "starts", scripts: { start: "node server.js" } }),
  "server.js": `
    const fs = require("fs");
    fs.mkdirSync("/app/data", { recursive: true });
    fs.appendFileSync("/app/data/starts", "start\\n");
    require("http").createServer((req, res) => res.end(fs.readFileSync("/app/data/starts", "utf8"))).listen(process.env.PORT);
  `,
});

const containersOf = async (appId: string, filter: string[] = []) =>
  (await dockerCli("ps", "-q", ...filter, "--filter", `label=platform.app=${appId}`)).split("\n").filter(Boolean);

const answerOf = (subdomain: string) =>
  poll("the app to answer", 60_000, async () => {
    const response = await viaProxy(server, subdomain);
    return response.status === 200 ? response.text() : undefined;
  });

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("restore supervised")).key;
});

afterAll(async () => {
  await deleteAllApps(server, key, 60_000);
  await server?.stop();
  if (volumeId) await removeEngineVolumes(volumeId);
});

test("the supervisor leaves the app stopped while a restore holds it; the interrupted restore starts it again, once", async () => {
  const deployed = await deployZip(server, key, { name: "starts", runtime: "node", memoryMB: "128", volumes: JSON.stringify([{ name: "data", mountPath: "/app/data" }]) }, startsApp);
  expect(deployed.status).toBe(202);
  const app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
  expect(app).toMatchObject({ status: "running", autoRestart: true });
  volumeId = app.volumes[0].id as string;
  const backup = await completedVolumeBackup(server, key, volumeId);

  await server.stop();
  server.env.PLATFORM_TEST_PAUSE_AT = "volume-restore.extracted";
  await server.boot();
  await waitForStatus(server, key, app.id, ["running"]);
  const before = await answerOf(app.subdomain);
  const restoring = await server.request("POST", `/api/volumes/${volumeId}/restore`, { key, body: { backupId: backup.id } });
  expect(restoring.status).toBe(202);
  await poll("the restore to reach its pause", 60_000, async () => (server.output.includes("test pause at volume-restore.extracted") ? true : undefined));

  // Several supervisor passes (every 2 s, a first restart after 2 s): the app stays stopped, no container of it runs.
  await Bun.sleep(8_000);
  expect((await server.request("GET", `/api/apps/${app.id}`, { key })).body.app.status).toBe("stopped");
  expect(await containersOf(app.id)).toEqual([]);

  await server.stop("SIGKILL");
  delete server.env.PLATFORM_TEST_PAUSE_AT;
  await server.boot();
  expect((await waitForRestore(server, key, volumeId, restoring.body.restore.id)).status).toBe("failed");
  await waitForStatus(server, key, app.id, ["running"]);
  // Its old content, and one start since the restore (a start meanwhile would have written a line too); one container.
  expect(await answerOf(app.subdomain)).toBe(`${before}start\n`);
  expect(await containersOf(app.id, ["-a"])).toHaveLength(1);
});
