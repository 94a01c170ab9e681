// The platform is killed in the middle of a redeploy's build: after it restarts, the build is
// marked interrupted, the app keeps serving its previous release, and the proxy finds it again.
// Killed while a stop waits on the engine: the stop is finished at start.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { TestServer } from "../../helpers/server";
import { appZip, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { dockerCli, dockerJson } from "../../helpers/docker";

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("recovery")).key;
});
afterAll(() => server.stop());

const app = (build: string) =>
  appZip({
    "package.json": JSON.stringify({ name: "steady", scripts: { build, start: "node server.js" } }),
    "server.js": 'require("http").createServer((req, res) => res.end("steady")).listen(process.env.PORT);\n',
  });

test("SIGKILL during a build: interrupted build, app still serving, route restored", async () => {
  const first = await deployZip(server, key, { name: "steady", runtime: "node", memoryMB: "64" }, app("true"));
  const running = await waitForStatus(server, key, first.body.app.id, ["running", "failed"]);
  expect(running).toMatchObject({ status: "running" }); // on failure, the statusReason shows why

  const slow = await deployZip(server, key, { name: "steady", runtime: "node", memoryMB: "64" }, app("sleep 60"));
  await waitForStatus(server, key, running.id, ["building"]);
  for (let attempt = 0; attempt < 100; attempt++) {
    const build = await server.request("GET", `/api/apps/${running.id}/builds/${slow.body.buildId}`, { key });
    if (build.body.log.includes("sleep 60")) break;
    await Bun.sleep(100);
  }
  await server.stop("SIGKILL");
  await server.boot();

  const builds = (await server.request("GET", `/api/apps/${running.id}/builds`, { key })).body.builds;
  expect(builds.find((build: any) => build.id === slow.body.buildId)).toMatchObject({ status: "failed", error: "interrupted by a platform restart" });
  const recovered = await waitForStatus(server, key, running.id, ["running", "failed"]);
  expect(recovered.status).toBe("running");
  expect(recovered.statusReason).toContain("interrupted by a platform restart");
  let answer = 0;
  for (let attempt = 0; attempt < 50 && answer !== 200; attempt++) {
    answer = (await viaProxy(server, recovered.subdomain)).status;
    if (answer !== 200) await Bun.sleep(100);
  }
  expect(answer).toBe(200);
  expect(readdirSync(`${server.dataDir}/apps/${running.id}`)).not.toContain("pending");
  await server.request("DELETE", `/api/apps/${running.id}`, { key });
});

test("SIGKILL while a stop waits on an app that ignores SIGTERM: the stop is finished at start", async () => {
  const stubborn = appZip({
    "package.json": JSON.stringify({ name: "stubborn", scripts: { start: "node server.js" } }),
    "server.js": 'process.on("SIGTERM", () => {});\nrequire("http").createServer((req, res) => res.end("stubborn")).listen(process.env.PORT);\n',
  });
  // node itself gets the signal (npm or a shell would leave on SIGTERM): only the engine's SIGKILL after 10 s ends it.
  const deployed = await deployZip(server, key, { name: "stubborn", runtime: "node", memoryMB: "64", startupCommand: "exec node server.js" }, stubborn);
  const running = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
  expect(running).toMatchObject({ status: "running" }); // on failure, the statusReason shows why

  const stopping = await server.request("POST", `/api/apps/${running.id}/stop`, { key });
  expect(stopping.status).toBe(202);
  await Bun.sleep(1_000); // the engine waits up to 10 s for the app to leave on SIGTERM
  expect((await server.request("GET", `/api/apps/${running.id}`, { key })).body.app.status).toBe("stopping");
  await server.stop("SIGKILL");
  await server.boot();

  const recovered = await waitForStatus(server, key, running.id, ["stopped", "running", "failed"], 30_000);
  expect(recovered.status).toBe("stopped");
  const ids = (await dockerCli("ps", "-aq", "--filter", `label=platform.app=${running.id}`)).trim().split("\n");
  expect(ids).toHaveLength(1);
  expect((await dockerJson("inspect", ids[0]!))[0].State.Running).toBe(false);
  await server.request("DELETE", `/api/apps/${running.id}`, { key });
});
