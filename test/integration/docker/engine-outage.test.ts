// The engine disappears under a running platform: calls that need it answer 503 with
// Retry-After at once, everything else keeps working, and it recovers when the engine is back.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { SecondEngine } from "../../helpers/second-engine";

const engine = new SecondEngine();
let server: TestServer;
let key: string;

beforeAll(async () => {
  await engine.start();
  server = await TestServer.start({ PLATFORM_DOCKER_HOST: engine.host });
  key = (await server.createKey("outage")).key;
});
afterAll(async () => {
  await server?.stop();
  await engine.dispose();
});

test("engine stopped mid-test: 503 DOCKER_UNAVAILABLE with Retry-After, then recovery", async () => {
  const before = await server.request("GET", "/api/machines/local", { key });
  expect(before.status).toBe(200);
  expect(before.body.machine.status).toBe("online");

  await engine.stop();
  const started = performance.now();
  const down = await server.request("GET", "/api/machines/local", { key });
  expect(performance.now() - started).toBeLessThan(2_000);
  expect(down.status).toBe(503);
  expect(down.body).toMatchObject({ success: false, code: "DOCKER_UNAVAILABLE" });
  expect(Number(down.headers.get("retry-after"))).toBeGreaterThan(0);
  const listed = await server.request("GET", "/api/machines/", { key });
  expect(listed.body.machines).toEqual([expect.objectContaining({ id: "local", status: "unreachable" })]);
  // The rest of the API is unaffected.
  expect((await server.request("GET", "/api/api-keys/", { key })).status).toBe(200);

  await engine.start();
  let recovered = 0;
  for (let attempt = 0; attempt < 40 && recovered !== 200; attempt++) {
    await Bun.sleep(250);
    recovered = (await server.request("GET", "/api/machines/local", { key })).status;
  }
  expect(recovered).toBe(200);
});
