// Limits that protect the host from one workspace: how many uploads it may have in flight, and
// how much memory the user code run by a build may take.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, waitForStatus } from "../../helpers/apps";

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_BUILD_MEMORY_MB: "64" });
  key = (await server.createKey("limits")).key;
});
afterAll(async () => {
  // The app deployed once the slots are free keeps building and then runs: it must not outlive the test.
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

/** A deploy whose body is still arriving: its upload slot stays taken until `finish`. */
function stalledUpload() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  const response = fetch(`${server.baseUrl}/api/apps/deploy`, {
    method: "POST",
    body,
    duplex: "half",
    headers: { authorization: `Bearer ${key}`, "content-type": "multipart/form-data; boundary=stalled" },
  } as RequestInit);
  controller.enqueue(new TextEncoder().encode('--stalled\r\nContent-Disposition: form-data; name="name"\r\n\r\n'));
  return { response, finish: () => controller.close() };
}

test("a workspace has at most two uploads in flight; the third is told to retry", async () => {
  const first = stalledUpload();
  const second = stalledUpload();
  await Bun.sleep(300); // both are being read by now
  const third = await deployZip(server, key, { name: "third", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "x" }));
  expect(third.status).toBe(429);
  expect(third.body.code).toBe("RATE_LIMITED");
  expect(Number(third.headers.get("retry-after"))).toBeGreaterThan(0);
  first.finish();
  second.finish();
  expect((await first.response).status).toBe(400); // the cut-short bodies are refused...
  await second.response;
  const after = await deployZip(server, key, { name: "after", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "x" }));
  expect(after.status).toBe(202); // ...and their slots are free again
});

test("a build that takes more memory than PLATFORM_BUILD_MEMORY_MB is killed and fails", async () => {
  const hungry = appZip({
    "package.json": JSON.stringify({
      name: "hungry",
      // 512 MB at most: without the limit the build succeeds (and this test fails) instead of eating the host.
      scripts: { build: 'node -e "const kept = []; for (let i = 0; i < 64; i++) kept.push(Buffer.alloc(8e6, 1))"', start: "node server.js" },
    }),
    "server.js": "",
  });
  const response = await deployZip(server, key, { name: "hungry", runtime: "node", memoryMB: "64" }, hungry);
  const app = await waitForStatus(server, key, response.body.app.id, ["running", "failed"]);
  expect(app.status).toBe("failed");
  const build = await server.request("GET", `/api/apps/${app.id}/builds/${response.body.buildId}`, { key });
  expect(build.body.log).toContain("npm run build");
  expect(build.body.log).toMatch(/non-zero code: 137|exit code: 137/); // SIGKILL by the memory limit
});
