// A delete preempts the operation in progress (issue 32, item 16): deleting a database while it is
// being created, or while one of its backups is verified, answers 200 at once (not 409 BUSY) and
// leaves nothing: no container or volume carrying the workspace's label (the verify's throwaway
// copy included), and no database or backup for the API.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { createDatabase, deleteAllDatabases, poll, removeWorkspaceNetworks, sqlClient } from "../../helpers/databases";
import { completedBackup, runningDatabase } from "../../helpers/backups";
import { dockerCli } from "../../helpers/docker";

/** What "at once" allows: the removal of a container and its volumes on a busy machine. */
const ANSWER_WITHIN_MS = 15_000;

let server: TestServer;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  server = await TestServer.start();
  ({ key, workspaceId } = await server.createKey("delete preempts"));
});

afterAll(async () => {
  if (!server) return;
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

/** Containers and volumes of the workspace that Docker has, by the platform's label. */
async function leftInDocker(): Promise<string[]> {
  const containers = await dockerCli("ps", "-a", "--filter", `label=platform.workspace=${workspaceId}`, "--format", "container {{.Names}}");
  const volumes = await dockerCli("volume", "ls", "--filter", `label=platform.workspace=${workspaceId}`, "--format", "volume {{.Name}}");
  return `${containers}\n${volumes}`.split("\n").filter(Boolean);
}

/** Running containers carrying `label`. */
async function runningWith(label: string): Promise<string[]> {
  return (await dockerCli("ps", "--filter", `label=${label}`, "--format", "{{.Names}}")).split("\n").filter(Boolean);
}

/** DELETE, timed: it must answer 200 as documented, at once. */
async function deleteNow(databaseId: string) {
  const started = performance.now();
  const answer = await server.request("DELETE", `/api/databases/${databaseId}`, { key });
  const elapsedMs = performance.now() - started;
  expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 200, code: undefined });
  expect(answer.body).toMatchObject({ deleted: true, database: { id: databaseId } });
  expect(elapsedMs).toBeLessThan(ANSWER_WITHIN_MS);
}

/** Nothing of the database is left, now and a moment later (a step the delete raced does not make anything after it). */
async function expectNothingLeft(databaseId: string) {
  expect(await leftInDocker()).toEqual([]);
  expect((await server.request("GET", `/api/databases/${databaseId}`, { key })).status).toBe(404);
  expect((await server.request("GET", "/api/databases/", { key })).body.databases).toEqual([]);
  await Bun.sleep(3_000);
  expect(await leftInDocker()).toEqual([]);
}

describe("a delete preempts the operation in progress", () => {
  test("deleting a database just created (provisioning) -> 200 at once, no container, volume or row left", async () => {
    const { database } = await createDatabase(server, key, { name: "born-deleted", engine: "postgresql", memoryMB: 256, storageGB: 1 });
    expect(database.status).toBe("provisioning");
    await deleteNow(database.id);
    await expectNothingLeft(database.id);
  }, 120_000);

  test("deleting a database whose container runs but whose engine does not answer yet -> 200 at once, nothing left", async () => {
    const { database } = await createDatabase(server, key, { name: "half-born", engine: "mysql", memoryMB: 256, storageGB: 1 });
    await poll("the database's container to run", 60_000, async () => ((await runningWith(`platform.database=${database.id}`)).length ? true : undefined));
    expect((await server.request("GET", `/api/databases/${database.id}`, { key })).body.database.status).toBe("provisioning");
    await deleteNow(database.id);
    await expectNothingLeft(database.id);
  }, 120_000);

  test("deleting a database while one of its backups is verified -> 200 at once, the verify's container and volume gone too", async () => {
    const database = await runningDatabase(server, key, "verified-away", "postgresql");
    await sqlClient.write(database.connectionString, "some-data");
    const backup = await completedBackup(server, key, database.id);
    const verify = await server.request("POST", `/api/databases/${database.id}/backups/${backup.id}/verify`, { key });
    expect(verify.status).toBe(202);
    await poll("the verify's throwaway container to run", 60_000, async () => ((await runningWith(`platform.verify=${backup.id}`)).length ? true : undefined));
    await deleteNow(database.id);
    await expectNothingLeft(database.id);
    expect((await server.request("GET", `/api/databases/${database.id}/backups/${backup.id}`, { key })).status).toBe(404);
  }, 180_000);
});
