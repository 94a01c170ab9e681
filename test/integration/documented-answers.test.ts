// Answers the fuzzing of the API from its own OpenAPI document found undocumented, each now one the
// document lists, in the envelope: following the logs of an app that never ran, a multipart body
// without a boundary, and a request line or headers past 16 KiB.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";
import { expectErrorEnvelope } from "../helpers/auth-matrix";
import { deleteAllApps } from "../helpers/apps";
import { createDatabase, deleteAllDatabases, removeWorkspaceNetworks, waitForStatus } from "../helpers/databases";

let server: TestServer;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  // Nothing listens on the discard port: a clone fails at once, so an app deployed from a
  // repository never gets a container.
  server = await TestServer.start({ PLATFORM_GIT_BASE_URL: "http://127.0.0.1:9" });
  ({ key, workspaceId } = await server.createKey("documented answers"));
});

afterAll(async () => {
  await deleteAllApps(server, key);
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

async function appThatNeverRan(name: string): Promise<string> {
  const body = { name, runtime: "node", memoryMB: 64, repository: { id: "1", owner: "nobody", name: "nothing", branch: "main" } };
  const deployed = await server.request("POST", "/api/apps/deploy-from-repo", { key, body });
  expect(deployed.status).toBe(202);
  return deployed.body.app.id;
}

test("following the logs of an app that never ran: 200 at once, an empty stream that waits, ended by the app's deletion", async () => {
  const appId = await appThatNeverRan("never-ran");
  const listed = await server.request("GET", `/api/apps/${appId}/logs`, { key });
  expect({ status: listed.status, lines: listed.body.lines }).toEqual({ status: 200, lines: [] });

  const started = performance.now();
  const response = await fetch(`${server.baseUrl}/api/apps/${appId}/logs?follow=true`, { headers: { authorization: `Bearer ${key}` } });
  expect({ status: response.status, type: response.headers.get("content-type") }).toEqual({ status: 200, type: "text/plain; charset=utf-8" });
  expect(performance.now() - started).toBeLessThan(2_000);
  await server.assertDocumented("GET", `/api/apps/${appId}/logs`, { status: response.status, headers: response.headers, body: "" });

  // Empty lines only (heartbeats), and still open after two of the follower's looks at the app.
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let received = "";
  const readAll = (async () => {
    for (let next = await reader.read(); !next.done; next = await reader.read()) received += decoder.decode(next.value);
    return "ended";
  })();
  expect(await Promise.race([readAll, Bun.sleep(2_500).then(() => "waiting")])).toBe("waiting");
  expect(received.trim()).toBe("");

  const deleted = await server.request("DELETE", `/api/apps/${appId}`, { key });
  expect(deleted.status).toBeLessThan(300);
  expect(await Promise.race([readAll, Bun.sleep(10_000).then(() => "still open")])).toBe("ended");
}, 30_000);

/** A multipart form, its Content-Type without `boundary=`. */
const WITHOUT_BOUNDARY = { "content-type": "multipart/form-data" };
const FORM = `--b\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\nPK\r\n--b--\r\n`;

test("an upload without a multipart boundary is the documented 400 VALIDATION_FAILED, on every upload route", async () => {
  const { database } = await createDatabase(server, key, { name: "no-boundary", engine: "redis", memoryMB: 256, storageGB: 1 });
  // Its creation holds the database (409 BUSY) until it is done.
  await waitForStatus(server, key, database.id, ["running"]);
  for (const path of ["/api/apps/deploy", "/api/apps/inspect-env", `/api/databases/${database.id}/backups/upload`]) {
    const answer = await server.request("POST", path, { key, body: FORM, headers: WITHOUT_BOUNDARY });
    expectErrorEnvelope(answer, 400, "VALIDATION_FAILED");
    expect(answer.body.error).toContain("boundary");
  }
  // A body that is not multipart at all is still 415 where the route documents it.
  expectErrorEnvelope(await server.request("POST", "/api/apps/deploy", { key, body: FORM, headers: { "content-type": "text/plain" } }), 415, "UNSUPPORTED_MEDIA_TYPE");
}, 60_000);

test("a request line or headers over 16 KiB: 431 HEADERS_TOO_LARGE in the envelope, documented; up to 16 KiB is served", async () => {
  for (const padding of [17_000, 60_000]) {
    const answer = await server.request("GET", `/api/platform/config?pad=${"a".repeat(padding)}`);
    expectErrorEnvelope(answer, 431, "HEADERS_TOO_LARGE");
  }
  const header = await server.request("GET", "/api/apps/", { key, headers: { "x-padding": "a".repeat(20_000) } });
  expectErrorEnvelope(header, 431, "HEADERS_TOO_LARGE");
  expect((await server.request("GET", `/api/platform/config?pad=${"a".repeat(15_000)}`)).status).toBe(200);
});
