// App containers run as an unprivileged user by default (PLATFORM_APP_USER, 1000:1000): the app
// reports its uid through the proxy; /app stays readable (and not writable), HOME is writable,
// and a port below 1024 still works. PLATFORM_APP_USER=root opts out.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

// Per file: this Bun reads no timeout from bunfig.toml, and a preload's setting holds for its first file only.
setDefaultTimeout(120_000);

const REPORTER = `
const fs = require("fs");
const writable = (path) => { try { fs.writeFileSync(path, "x"); return true; } catch { return false; } };
require("http").createServer((req, res) => res.end(JSON.stringify({
  uid: process.getuid(),
  gid: process.getgid(),
  home: process.env.HOME,
  readsOwnCode: fs.readFileSync(__filename, "utf8").includes("readsOwnCode"),
  writesApp: writable("/app/written"),
  writesHome: writable(require("path").join(process.env.HOME, "written")),
}))).listen(Number(process.env.PORT));
`;
const files = appZip({ "package.json": JSON.stringify({ name: "reporter", scripts: { start: "node server.js" } }), "server.js": REPORTER });

const servers: { server: TestServer; key: string }[] = [];

async function deployReporter(env: Record<string, string>, fields: Record<string, string> = {}) {
  const server = await TestServer.start(env);
  const { key } = await server.createKey("non-root", `non-root-${servers.length}`);
  servers.push({ server, key });
  const response = await deployZip(server, key, { name: "reporter", runtime: "node", memoryMB: "128", ...fields }, files);
  expect(response.status).toBe(202);
  const app = await waitForStatus(server, key, response.body.app.id, ["running", "failed"]);
  expect(app.status).toBe("running");
  return (await viaProxy(server, app.subdomain)).json();
}

afterAll(async () => {
  for (const { server, key } of servers) {
    await deleteAllApps(server, key);
    await server.stop();
  }
});

describe("apps run as a non-root user", () => {
  let report: any;
  beforeAll(async () => {
    report = await deployReporter({});
  });

  test("by default the app's process is uid 1000, not root", () => {
    expect(report.uid).toBe(1000);
    expect(report.gid).toBe(1000);
  });

  test("its code is readable but not writable; HOME is a writable /tmp", () => {
    expect(report.readsOwnCode).toBe(true);
    expect(report.writesApp).toBe(false);
    expect(report.home).toBe("/tmp");
    expect(report.writesHome).toBe(true);
  });

  test("a port below 1024 works without root", async () => {
    const lowPort = await deployReporter({}, { exposePort: "80" });
    expect(lowPort.uid).toBe(1000);
  });

  test("PLATFORM_APP_USER=root keeps the image's user", async () => {
    const asRoot = await deployReporter({ PLATFORM_APP_USER: "root" });
    expect(asRoot.uid).toBe(0);
  });
});
