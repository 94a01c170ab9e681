import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";

let server: TestServer;
beforeAll(async () => (server = await TestServer.start()));
afterAll(() => server.stop());

test("a key made on the command line lists itself over the API", async () => {
  const created = await server.createKey("first");
  expect(created.key).toMatch(/^svc_[A-Za-z0-9]{40}$/);
  const listed = await server.request("GET", "/api/api-keys/", { key: created.key });
  expect(listed.status).toBe(200);
  expect(listed.body.keys.map((k: any) => k.id)).toEqual([created.id]);
  expect(listed.body.data.keys).toEqual(listed.body.keys);
});
