// A client generated from the running server's OpenAPI document, type-checked with tsc and then
// used for real: create a key, deploy an app from a ZIP, read its status and logs, list
// databases. A document that lies about a path, a field or a type breaks the type check; one that
// lies about an answer breaks the run (each answer is also held to the document, as in every
// integration test). Also: the sources themselves type-check, which is what ties each view
// function to the schema it is documented with (`Static<typeof AppSchema>`...).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { mkdirSync } from "node:fs";
import type { Middleware } from "openapi-fetch";
import { TestServer } from "../helpers/server";
import { appZip, deleteAllApps, waitForStatus } from "../helpers/apps";

const ROOT = resolve(import.meta.dir, "../..");
const CLIENT_DIR = join(ROOT, "test/client");
const GENERATED = join(CLIENT_DIR, "generated/platform-api.d.ts");

/** Generators and compilers may reach loopback only: any request they would make goes to a dead port. */
const OFFLINE_ENV = { HTTPS_PROXY: "http://127.0.0.1:9", HTTP_PROXY: "http://127.0.0.1:9", NO_PROXY: "127.0.0.1,localhost" };

async function run(command: string[]): Promise<{ exitCode: number; output: string }> {
  const child = Bun.spawn(command, {
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), ...OFFLINE_ENV },
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { exitCode, output: `${stdout}\n${stderr}`.trim() };
}

const tsc = (project: string) => run([process.execPath, join(ROOT, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", project]);

let server: TestServer;
let bootstrapKey: string;
beforeAll(async () => {
  server = await TestServer.start();
  bootstrapKey = (await server.createKey("client-bootstrap")).key;
});
afterAll(async () => {
  await deleteAllApps(server, bootstrapKey);
  await server.stop();
}, 60_000);

/** Holds every answer the typed client receives to the document, like TestServer.request does. */
const documented: Middleware = {
  async onResponse({ request, response }) {
    const text = await response.clone().text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    await server.assertDocumented(request.method, request.url, { status: response.status, headers: response.headers, body });
    return undefined;
  },
};

test("the sources type-check", async () => {
  const result = await tsc(ROOT);
  expect(result).toEqual({ exitCode: 0, output: "" });
}, 120_000);

test("a client generated from the server's document compiles and deploys, reads and lists through the API", async () => {
  mkdirSync(join(CLIENT_DIR, "generated"), { recursive: true });
  const generation = await run([process.execPath, join(ROOT, "scripts/generate-client.ts"), `${server.baseUrl}/api/docs/json`, GENERATED]);
  expect(generation.exitCode).toBe(0);
  expect(await tsc(CLIENT_DIR)).toEqual({ exitCode: 0, output: "" });

  // By a path tsc does not follow: the sources' own check must not need the generated file.
  const clientModule = join(CLIENT_DIR, "platform-client.ts");
  const client = await import(clientModule);
  const bootstrap = client.platformClient(server.baseUrl, bootstrapKey, documented);
  const created = await client.createKey(bootstrap, "typed client");
  expect(created.key).toStartWith("svc_");

  const api = client.platformClient(server.baseUrl, created.key, documented);
  const zip = appZip({
    "package.json": JSON.stringify({ name: "typed", main: "server.js" }),
    "server.js": 'require("http").createServer((req, res) => res.end("typed")).listen(process.env.PORT, () => console.log("typed client app up"));\n',
  });
  const deployed = await client.deployZip(api, { name: "typed-client", runtime: "node", memoryMB: 128 }, new Blob([zip], { type: "application/zip" }));
  expect(deployed.app.status).toBe("building");

  const running = await waitForStatus(server, created.key, deployed.app.id, ["running", "failed"]);
  expect(running.status).toBe("running");
  expect((await client.getApp(api, deployed.app.id)).currentBuildId).toBe(deployed.buildId);

  let lines: string[] = [];
  for (const deadline = Date.now() + 10_000; Date.now() < deadline && !lines.some((line) => line.includes("typed client app up")); ) {
    lines = await client.appLogs(api, deployed.app.id, 20);
    await Bun.sleep(100);
  }
  expect(lines).toContainEqual(expect.stringContaining("typed client app up"));

  expect(await client.databaseNames(api)).toEqual([]);
  expect(await client.deleteApp(api, deployed.app.id)).toBe("deleting");
}, 180_000);
