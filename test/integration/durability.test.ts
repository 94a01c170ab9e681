// What the data dir holds and keeps: no secret in plain text, and a key answered with 2xx
// survives the server being killed right after.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../helpers/server";
import { sessionCookieOf } from "../helpers/auth-matrix";
import { sha256Hex } from "../../src/crypto/tokens";

let server: TestServer;
beforeAll(async () => (server = await TestServer.start()));
afterAll(() => server.stop());

/** Every file under the data dir (platform.sqlite, -wal, -shm, and any folder's) as one string of bytes. */
function dataDirBytes(): string {
  return readdirSync(server.dataDir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name)).toString("latin1"))
    .join("\n");
}

test("no plaintext key, password or session token is stored in the data dir", async () => {
  const fromCli = await server.createKey("from cli");
  const fromApi = await server.request("POST", "/api/api-keys/", { key: fromCli.key, body: { name: "from api", prefix: "ci" } });
  expect(fromApi.status).toBe(201);
  const password = "correct horse battery staple";
  // Keys were made on the command line first, so the setup must present one of them (SETUP_KEY_REQUIRED otherwise).
  const setup = await server.request("POST", "/api/auth/setup", { body: { email: "owner@example.com", password }, key: fromCli.key });
  expect(setup.status).toBe(201);
  const sessionToken = sessionCookieOf(setup).split("=")[1]!;

  // While the server runs, recent writes sit in the WAL file: it must be among the files read.
  expect(readdirSync(server.dataDir)).toEqual(expect.arrayContaining(["platform.sqlite", "platform.sqlite-wal"]));
  const stored = dataDirBytes();
  for (const key of [fromCli.key, fromApi.body.key as string]) {
    // The hash is there: the bytes read are the ones the server writes to.
    expect(stored).toContain(sha256Hex(key));
    expect(stored).not.toContain(key);
    expect(stored).not.toContain(key.slice(-40));
  }
  expect(stored).toContain(sha256Hex(sessionToken));
  expect(stored).not.toContain(sessionToken);
  expect(stored).not.toContain(password);
});

test("a key created with 2xx survives SIGKILL right after and authenticates after a restart", async () => {
  const admin = await server.createKey("admin");
  const created = await server.request("POST", "/api/api-keys/", { key: admin.key, body: { name: "must survive", remaining: 10 } });
  expect(created.status).toBe(201);
  await server.stop("SIGKILL");
  await server.boot();

  const session = await server.request("GET", "/api/auth/session", { key: created.body.key });
  expect(session.status).toBe(200);
  const listed = await server.request("GET", "/api/api-keys/", { key: admin.key });
  const survivor = listed.body.keys.find((key: { id: string }) => key.id === created.body.id);
  expect(survivor).toEqual(expect.objectContaining({ name: "must survive", remaining: 9 }));
});
