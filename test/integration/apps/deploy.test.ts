// Deploys real apps of every kind from ZIPs made here, on the real engine with the stand-in
// images, and reaches each through the platform's public proxy.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("apps")).key;
});
afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

async function deployAndWait(fields: Record<string, string>, files: Record<string, string>) {
  const response = await deployZip(server, key, fields, appZip(files));
  expect(response.status).toBe(202);
  expect(response.body.app.status).toBe("building");
  const app = await waitForStatus(server, key, response.body.app.id, ["running", "failed"]);
  const build = await server.request("GET", `/api/apps/${app.id}/builds/${response.body.buildId}`, { key });
  if (app.status !== "running") throw new Error(`deploy failed: ${app.statusReason}\n${build.body.log}`);
  return { app, buildId: response.body.buildId as string, log: build.body.log as string };
}

describe("deploy from ZIP", () => {
  test("a node app with an npm dependency builds, runs and answers through the proxy", async () => {
    const { app, log } = await deployAndWait(
      { name: "node-shop", runtime: "node", memoryMB: "128", envVars: JSON.stringify({ GREETING: "hi" }) },
      {
        "shop/package.json": JSON.stringify({ name: "shop", main: "server.js", dependencies: { "is-number": "7.0.0" } }),
        "shop/server.js":
          'const isNumber = require("is-number");\n' +
          'require("http").createServer((req, res) => res.end(`${process.env.GREETING} ${isNumber("42")} ${req.url}`))' +
          '.listen(process.env.PORT, () => console.log("node shop ready"));\n',
      },
    );
    expect(app.subdomain).toBe("node-shop");
    expect(app.url).toBe(`http://node-shop.localhost:${server.proxyPort}`);
    expect(log).toContain('"main" found: server.js');
    const response = await viaProxy(server, app.subdomain, "/cart?x=1");
    expect(await response.text()).toBe("hi true /cart?x=1");
    const logs = await server.request("GET", `/api/apps/${app.id}/logs?tail=10`, { key });
    expect(logs.body.lines).toContain("node shop ready");
    const stamped = await server.request("GET", `/api/apps/${app.id}/logs?tail=1&timestamps=true`, { key });
    expect(stamped.body.lines[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z node shop ready$/);
  });

  test("a bun app with a start script", async () => {
    const { app, log } = await deployAndWait(
      { name: "bun-api", runtime: "bun", memoryMB: "128" },
      {
        "package.json": JSON.stringify({ name: "bun-api", scripts: { start: "bun index.ts" }, dependencies: { "is-number": "7.0.0" } }),
        "index.ts":
          'import isNumber from "is-number";\n' +
          'Bun.serve({ port: Number(process.env.PORT), fetch: () => new Response(`bun ${Bun.version} ${isNumber(1)}`) });\n',
      },
    );
    expect(log).toContain("bun install");
    expect(await (await viaProxy(server, app.subdomain)).text()).toMatch(/^bun 1\.\S+ true$/);
  });

  test("a python app with main.py", async () => {
    const { app, log } = await deployAndWait(
      { name: "py-hello", runtime: "python", memoryMB: "128", exposePort: "8000" },
      {
        "requirements.txt": "",
        "main.py":
          "import http.server, os\n" +
          "class Handler(http.server.BaseHTTPRequestHandler):\n" +
          "    def do_GET(self):\n" +
          "        self.send_response(200); self.end_headers(); self.wfile.write(b'python ' + os.environ['PORT'].encode())\n" +
          "http.server.ThreadingHTTPServer(('0.0.0.0', int(os.environ['PORT'])), Handler).serve_forever()\n",
      },
    );
    expect(log).toContain("main.py found");
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("python 8000");
  });

  test("a static site is served by the built-in static server, with SPA fallback", async () => {
    const { app, log } = await deployAndWait(
      { name: "landing", runtime: "node", memoryMB: "64" },
      { "site/index.html": "<h1>Landing</h1>", "site/css/app.css": "h1{color:red}" },
    );
    expect(log).toContain("static site");
    const css = await viaProxy(server, app.subdomain, "/css/app.css");
    expect(css.headers.get("content-type")).toContain("text/css");
    expect(await css.text()).toBe("h1{color:red}");
    expect(await (await viaProxy(server, app.subdomain, "/pricing")).text()).toBe("<h1>Landing</h1>");
    // URL parsing folds "/../" and "%2e%2e"; encoded slashes reach the static server as written.
    expect((await viaProxy(server, app.subdomain, "/..%2f..%2f..%2fetc%2fpasswd")).status).toBe(404);
  });

  test("a build log can be followed live from the upload until the app serves", async () => {
    const response = await deployZip(server, key, { name: "followed", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "followed" }));
    const live = await fetch(`${server.baseUrl}/api/apps/${response.body.app.id}/builds/${response.body.buildId}/log`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(live.headers.get("content-type")).toContain("text/plain");
    const text = await live.text(); // ends when the build and release end
    expect(text.indexOf("Upload of")).toBeLessThan(text.indexOf("Building image"));
    expect(text).toContain("==> Serving from container");
    expect((await server.request("GET", `/api/apps/${response.body.app.id}`, { key })).body.app.status).toBe("running");
  });

  test("a build that fails is reported with its reason and the build log", async () => {
    const response = await deployZip(server, key, { name: "broken", runtime: "node", memoryMB: "64" }, appZip({
      "package.json": JSON.stringify({ name: "broken", scripts: { build: "exit 3", start: "node x.js" } }),
    }));
    const app = await waitForStatus(server, key, response.body.app.id, ["running", "failed"]);
    expect(app.status).toBe("failed");
    expect(app.statusReason).toContain("failed");
    const builds = await server.request("GET", `/api/apps/${app.id}/builds`, { key });
    expect(builds.body.builds[0]).toMatchObject({ id: response.body.buildId, status: "failed", trigger: "upload" });
    expect(builds.body.builds[0].durationMs).toBeGreaterThan(0);
    const build = await server.request("GET", `/api/apps/${app.id}/builds/${response.body.buildId}`, { key });
    expect(build.body.log).toContain("npm run build");
    expect(build.body.log).toContain("Build failed");
  });

  test("an app that never listens fails with the last lines of its output", async () => {
    const response = await deployZip(server, key, { name: "no-listen", runtime: "node", memoryMB: "64", startupCommand: "echo about to crash; exit 4" }, appZip({ "index.js": "" }));
    const app = await waitForStatus(server, key, response.body.app.id, ["running", "failed"]);
    expect(app.status).toBe("failed");
    expect(app.statusReason).toContain("exited with code 4");
    const build = await server.request("GET", `/api/apps/${app.id}/builds/${response.body.buildId}`, { key });
    expect(build.body.log).toContain("custom startupCommand");
    expect(build.body.log).toContain("about to crash");
  });

  test("the list shows the workspace's apps with meta.total", async () => {
    const listed = await server.request("GET", "/api/apps/", { key });
    expect(listed.status).toBe(200);
    expect(listed.body.meta.total).toBe(listed.body.apps.length);
    expect(listed.body.apps.map((app: any) => app.name)).toEqual(expect.arrayContaining(["node-shop", "bun-api", "py-hello", "landing"]));
    const other = await server.createKey("other", "elsewhere");
    expect((await server.request("GET", "/api/apps/", { key: other.key })).body.apps).toEqual([]);
  });
});
