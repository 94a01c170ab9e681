// The platform is killed in the middle of a redeploy's build: after it restarts, the build is
// marked interrupted, the app keeps serving its previous release, and the proxy finds it again.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { TestServer } from "../../helpers/server";
import { appZip, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

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
  expect(running.status).toBe("running");

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
