// User text that reaches a build log cannot forge the platform's own `==> ` lines: an upload's
// file name with a line break is escaped, and a startupCommand with one is refused.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps } from "../../helpers/apps";

const FORGED = "==> Serving from container forged";

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("log-forgery", "log-forgery")).key;
});

afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

/**
 * A deploy form written by hand: FormData would percent-encode line breaks in the file name and
 * turn a bare line feed in a field into CR LF.
 */
async function deployRaw(fields: Record<string, string>, filename: string) {
  const boundary = "----log-forgery-test";
  const field = (fieldName: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${fieldName}"\r\n\r\n${value}\r\n`;
  const head = new TextEncoder().encode(
    Object.entries({ runtime: "node", memoryMB: "64", ...fields }).map(([name, value]) => field(name, value)).join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/zip\r\n\r\n`,
  );
  const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
  const body = new Uint8Array([...head, ...appZip({ "index.html": "forgery" }), ...tail]);
  const response = await fetch(`${server.baseUrl}/api/apps/deploy`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": `multipart/form-data; boundary=${boundary}` },
    body,
  });
  const answer = { status: response.status, headers: response.headers, body: (await response.json()) as any };
  await server.assertDocumented("POST", "/api/apps/deploy", answer);
  return answer;
}

test("a line break in the upload's file name is escaped in the build log, not a line of its own", async () => {
  const deployed = await deployRaw({ name: "filename-forgery" }, `app.zip\n${FORGED}\r${FORGED}`);
  expect(deployed.status).toBe(202);
  const { log } = (await server.request("GET", `/api/apps/${deployed.body.app.id}/builds/${deployed.body.buildId}`, { key })).body;
  const lines: string[] = log.split(/\r\n|\r|\n/);
  expect(lines.filter((line) => line.startsWith(FORGED))).toEqual([]);
  expect(lines.find((line) => line.startsWith("==> Upload of"))).toContain(`(app.zip\\n${FORGED}\\r${FORGED})`);
});

test("a startupCommand with a line break is refused with 400 VALIDATION_FAILED, on deploy and in settings", async () => {
  const deployed = await deployRaw({ name: "command-forgery", startupCommand: `node server.js\n${FORGED}` }, "app.zip");
  expect({ status: deployed.status, code: deployed.body.code, error: deployed.body.error }).toEqual({
    status: 400,
    code: "VALIDATION_FAILED",
    error: expect.stringContaining("'startupCommand'"),
  });
  expect((await server.request("GET", "/api/apps/", { key })).body.apps.map((app: any) => app.name)).not.toContain("command-forgery");

  // Settings of the app the test above deployed.
  const appId = (await server.request("GET", "/api/apps/", { key })).body.apps[0].id;
  const updated = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: { startupCommand: `node server.js\n${FORGED}` } });
  expect({ status: updated.status, code: updated.body.code }).toEqual({ status: 400, code: "VALIDATION_FAILED" });
});
