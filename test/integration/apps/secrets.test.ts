// Env var secrecy, end to end: a canary value reaches the app (it echoes it through the proxy)
// but appears nowhere else: not in any file of the data dir (database, WAL, build logs), the
// server's output, app lists, builds or build logs, nor error messages. Non-public variables are
// not given to builds, and a secret a build prints anyway is masked. Without master.key the
// server refuses to start rather than lose the encrypted values.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

const secret = `canary-${crypto.randomUUID()}`;
const secondSecret = `canary-${crypto.randomUUID()}`;
const publicValue = `vite-public-${crypto.randomUUID()}`;
const canaries = [secret, secondSecret];

let server: TestServer;
let key: string;
let app: any;
let buildId: string;
let savedMasterKey: Buffer | null = null;

// The build script echoes both variables, then prints the secret itself: build.js holds it only
// base64-encoded, so the source tree never contains the canary, but the build output does unless
// the platform masks it.
const source = appZip({
  "package.json": JSON.stringify({
    name: "echo-secrets",
    main: "server.js",
    scripts: { build: 'echo "secret in build: [$SECRET_TOKEN]" && echo "public in build: [$VITE_PUBLIC_NAME]" && node build.js' },
  }),
  "build.js":
    'const fs = require("fs");\n' +
    `console.log("decoded: [" + Buffer.from(${JSON.stringify(Buffer.from(secret).toString("base64"))}, "base64").toString() + "]");\n` +
    'fs.writeFileSync("seen-at-build.json", JSON.stringify({ secret: process.env.SECRET_TOKEN ?? "", vite: process.env.VITE_PUBLIC_NAME ?? "" }));\n',
  "server.js":
    'const fs = require("fs");\n' +
    "require(\"http\").createServer((req, res) => res.end(JSON.stringify({\n" +
    "  secret: process.env.SECRET_TOKEN ?? null,\n" +
    "  second: process.env.SECOND_SECRET ?? null,\n" +
    '  atBuild: JSON.parse(fs.readFileSync("seen-at-build.json", "utf8")),\n' +
    "}))).listen(process.env.PORT);\n",
});

async function answer() {
  return (await viaProxy(server, app.subdomain)).json();
}

/** Every file under the data dir whose bytes contain `needle`, relative paths. */
function filesContaining(needle: string): string[] {
  const bytes = Buffer.from(needle);
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stat = lstatSync(path);
      if (stat.isDirectory()) walk(path);
      else if (stat.isFile() && readFileSync(path).includes(bytes)) found.push(path.slice(server.dataDir.length + 1));
    }
  };
  walk(server.dataDir);
  return found;
}

function dataDirFiles(): string[] {
  return readdirSync(server.dataDir, { recursive: true }).map(String);
}

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("secrets")).key;
  const deployed = await deployZip(
    server,
    key,
    { name: "echo-secrets", runtime: "node", memoryMB: "64", envVars: JSON.stringify({ SECRET_TOKEN: secret, VITE_PUBLIC_NAME: publicValue }) },
    source,
  );
  expect(deployed.status).toBe(202);
  buildId = deployed.body.buildId;
  app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
  if (app.status !== "running") {
    const build = await server.request("GET", `/api/apps/${app.id}/builds/${buildId}`, { key });
    throw new Error(`deploy failed: ${app.statusReason}\n${build.body.log}`);
  }
});
afterAll(async () => {
  // Bring the server back if a failed master.key test left it down, so the apps can be deleted.
  const keyFile = join(server.dataDir, "master.key");
  if (savedMasterKey && !existsSync(keyFile)) writeFileSync(keyFile, savedMasterKey, { mode: 0o600 });
  if (server.process?.exitCode !== null) {
    server.process = null;
    await server.boot();
  }
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

describe("env var secrets", () => {
  test("the app receives its secret; builds get the VITE_ variable but not the secret", async () => {
    expect(await answer()).toEqual({ secret, second: null, atBuild: { secret: "", vite: publicValue } });
  });

  test("a variable set later with PUT /env reaches the app after the restart", async () => {
    const put = await server.request("PUT", `/api/apps/${app.id}/env`, { key, body: { envVars: { SECOND_SECRET: secondSecret } } });
    expect(put.status).toBe(200);
    expect(put.body.restarted).toBe(true);
    let seen: any = null;
    for (let attempt = 0; attempt < 240 && seen?.second !== secondSecret; attempt++) {
      const response = await viaProxy(server, app.subdomain).catch(() => null);
      if (response?.status === 200) seen = await response.json();
      else await response?.text();
      await Bun.sleep(250);
    }
    expect(seen).toEqual({ secret, second: secondSecret, atBuild: { secret: "", vite: publicValue } });
  });

  test("GET /env returns every value decrypted", async () => {
    const env = await server.request("GET", `/api/apps/${app.id}/env`, { key });
    expect(env.status).toBe(200);
    expect(env.body.envVars).toEqual({ SECRET_TOKEN: secret, VITE_PUBLIC_NAME: publicValue, SECOND_SECRET: secondSecret });
  });

  test("DELETE /env/{name} unsets one variable and restarts the app; a name it does not have is 404", async () => {
    await server.request("PUT", `/api/apps/${app.id}/env`, { key, body: { envVars: { TEMPORARY: "for a moment" } } });
    const removed = await server.request("DELETE", `/api/apps/${app.id}/env/TEMPORARY`, { key });
    expect([removed.status, removed.body.restarted]).toEqual([200, true]);
    expect(removed.body.envVars).toEqual({ SECRET_TOKEN: secret, VITE_PUBLIC_NAME: publicValue, SECOND_SECRET: secondSecret });
    const again = await server.request("DELETE", `/api/apps/${app.id}/env/TEMPORARY`, { key });
    expect([again.status, again.body.code]).toEqual([404, "NOT_FOUND"]);
    await waitForStatus(server, key, app.id, ["running"]);
  });

  test("the build log shows the secret empty in the build and masked where the build printed it", async () => {
    const { log } = (await server.request("GET", `/api/apps/${app.id}/builds/${buildId}`, { key })).body;
    expect(log).toContain("secret in build: []");
    expect(log).toMatch(new RegExp(`public in build: \\[(${publicValue}|\\*\\*\\*\\*)\\]`));
    expect(log).toContain("decoded: [****]");
    expect(log).not.toContain(secret);
  });

  test("no list, app, build or build log response carries a secret", async () => {
    const responses: string[] = [];
    const read = async (path: string) => {
      const response = await fetch(server.baseUrl + path, { headers: { authorization: `Bearer ${key}` } });
      expect(response.status).toBe(200);
      responses.push(`${path}\n${JSON.stringify(response.headers.toJSON())}\n${await response.text()}`);
    };
    await read("/api/apps/");
    await read(`/api/apps/${app.id}`);
    await read(`/api/apps/${app.id}/builds`);
    const builds = (await server.request("GET", `/api/apps/${app.id}/builds`, { key })).body.builds;
    expect(builds.length).toBeGreaterThan(0);
    for (const build of builds) {
      await read(`/api/apps/${app.id}/builds/${build.id}`);
      await read(`/api/apps/${app.id}/builds/${build.id}/log`);
    }
    const all = responses.join("\n");
    expect(all).toContain("decoded: [****]"); // the logs were really read
    for (const canary of canaries) expect(all).not.toContain(canary);
  });

  test("refused env updates do not echo the value", async () => {
    const badName = await server.request("PUT", `/api/apps/${app.id}/env`, { key, body: { envVars: { "NOT VALID": secret } } });
    expect(badName.status).toBe(400);
    const reserved = await server.request("PUT", `/api/apps/${app.id}/env`, { key, body: { envVars: { PORT: secret } } });
    expect(reserved.status).toBe(400);
    const deploy = await deployZip(server, key, { name: "refused", runtime: "node", memoryMB: "64", envVars: JSON.stringify({ "1BAD": secret }) }, source);
    expect(deploy.status).toBe(400);
    for (const response of [badName, reserved, deploy]) {
      expect(response.body.code).toBe("VALIDATION_FAILED");
      expect(JSON.stringify(response.body)).not.toContain(secret);
    }
  });

  test("no file of the data dir and nothing the server printed contains a secret", async () => {
    const files = dataDirFiles();
    expect(files).toEqual(expect.arrayContaining(["platform.sqlite", `apps/${app.id}/builds/${buildId}.log`]));
    for (const canary of canaries) {
      expect({ canary, files: filesContaining(canary) }).toEqual({ canary, files: [] });
      expect(server.output).not.toContain(canary);
    }
    // The same scan does find plain text where it exists.
    expect(filesContaining(`"name":"echo-secrets"`)).toContain(`apps/${app.id}/source/package.json`);
    expect(server.output).toContain("listening on");
  });

  test("without master.key, serve refuses to start while encrypted env vars exist", async () => {
    const keyFile = join(server.dataDir, "master.key");
    const savedKey = (savedMasterKey = readFileSync(keyFile));
    await server.stop();
    // Stopped, the WAL is folded into the database file: still no secret in plain text.
    for (const canary of canaries) expect(filesContaining(canary)).toEqual([]);

    rmSync(keyFile);
    const refusal = await server.boot().then(
      () => null,
      (error: Error) => error.message,
    );
    expect(refusal).toMatch(/exited with [1-9]/);
    expect(refusal).toContain("master.key");
    expect(refusal).toContain("restore");
    // It did not invent a new key that would make the stored values unreadable.
    expect(existsSync(keyFile)).toBe(false);

    writeFileSync(keyFile, savedKey, { mode: 0o600 });
    await server.boot();
    const env = await server.request("GET", `/api/apps/${app.id}/env`, { key });
    expect(env.body.envVars).toEqual({ SECRET_TOKEN: secret, VITE_PUBLIC_NAME: publicValue, SECOND_SECRET: secondSecret });
  });
});
