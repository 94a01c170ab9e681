// CPU limits on app and database containers: `cpus` per app and per database (0.1-16), the
// platform default (PLATFORM_DEFAULT_CPUS) otherwise, read back from the engine as NanoCpus.
// Apps get a new container on a change; a database's running container is updated in place.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TestServer } from "../helpers/server";
import { appZip, deleteAllApps, deployZip, waitForStatus } from "../helpers/apps";
import { createDatabase, deleteAllDatabases, waitForOperation, waitForStatus as waitForDatabase } from "../helpers/databases";

// Per file: this Bun reads no timeout from bunfig.toml, and a preload's setting holds for its first file only.
setDefaultTimeout(120_000);

let server: TestServer;
let key: string;

/** Null for a container removed since it was listed (the old one of a release retires). */
function hostConfigOf(container: string): { NanoCpus: number } | null {
  const inspected = Bun.spawnSync(["docker", "inspect", container]);
  return inspected.exitCode === 0 ? JSON.parse(inspected.stdout.toString())[0].HostConfig : null;
}

/** NanoCpus of each running container of the app (two for a moment during a release). */
function appNanoCpus(appId: string): number[] {
  const ids = Bun.spawnSync(["docker", "ps", "-q", "--filter", `label=platform.app=${appId}`]).stdout.toString().split("\n").filter(Boolean);
  return ids.flatMap((id) => hostConfigOf(id)?.NanoCpus ?? []);
}

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_DEFAULT_CPUS: "0.75" });
  key = (await server.createKey("cpus", "cpus")).key;
});

afterAll(async () => {
  await deleteAllApps(server, key);
  await deleteAllDatabases(server, key);
  await server.stop();
});

describe("CPU limits", () => {
  test("an app gets its cpus, or PLATFORM_DEFAULT_CPUS; a change restarts it with the new limit", async () => {
    const limited = await deployZip(server, key, { name: "limited", runtime: "node", memoryMB: "64", cpus: "0.5" }, appZip({ "index.html": "a" }));
    const plain = await deployZip(server, key, { name: "plain", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "b" }));
    expect(limited.body.app.cpus).toBe(0.5);
    expect(plain.body.app.cpus).toBe(0.75);
    const app = await waitForStatus(server, key, limited.body.app.id, ["running", "failed"]);
    await waitForStatus(server, key, plain.body.app.id, ["running", "failed"]);
    expect(appNanoCpus(app.id)).toEqual([500_000_000]);
    expect(appNanoCpus(plain.body.app.id)).toEqual([750_000_000]);

    const changed = await server.request("PUT", `/api/apps/${app.id}/settings`, { key, body: { cpus: 1.5 } });
    expect(changed.status).toBe(200);
    expect(changed.body.restarted).toBe(true);
    expect(changed.body.app.cpus).toBe(1.5);
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && appNanoCpus(app.id).join() !== "1500000000") await Bun.sleep(250);
    expect(appNanoCpus(app.id)).toEqual([1_500_000_000]);
  });

  test("cpus outside 0.1-16 is refused for apps and databases", async () => {
    const zero = await deployZip(server, key, { name: "zero", runtime: "node", memoryMB: "64", cpus: "0" }, appZip({ "index.html": "z" }));
    expect(zero.status).toBe(400);
    expect(zero.body.code).toBe("VALIDATION_FAILED");
    expect(zero.body.error).toContain("cpus");
    const many = await server.request("POST", "/api/databases/", { key, body: { name: "many", engine: "redis", cpus: 32 } });
    expect(many.status).toBe(400);
    expect(many.body.code).toBe("VALIDATION_FAILED");
  });

  test("a database gets its cpus; a change is applied to the running container in place", async () => {
    const { database } = await createDatabase(server, key, { name: "cache", engine: "redis", cpus: 0.5 });
    expect(database.cpus).toBe(0.5);
    await waitForDatabase(server, key, database.id, ["running"]);
    const container = `platform-db-${database.id}`;
    const idBefore = Bun.spawnSync(["docker", "inspect", "-f", "{{.Id}}", container]).stdout.toString().trim();
    expect(hostConfigOf(container)?.NanoCpus).toBe(500_000_000);
    const changed = await server.request("PATCH", `/api/databases/${database.id}/settings`, { key, body: { cpus: 2 } });
    expect(changed.status).toBe(200);
    expect((await waitForOperation(server, key, database.id, changed.body.operationId)).status).toBe("succeeded");
    expect(changed.body.database.cpus).toBe(2);
    expect(hostConfigOf(container)?.NanoCpus).toBe(2_000_000_000);
    // More CPUs than the machine has means all of them (the engine would refuse the number itself).
    const engineCpus = Number(Bun.spawnSync(["docker", "info", "-f", "{{.NCPU}}"]).stdout.toString().trim());
    const all = await server.request("PATCH", `/api/databases/${database.id}/settings`, { key, body: { cpus: 16 } });
    expect(all.status).toBe(200);
    expect(hostConfigOf(container)?.NanoCpus).toBe(Math.min(16, engineCpus) * 1e9);
    const back = await server.request("PATCH", `/api/databases/${database.id}/settings`, { key, body: { cpus: null } });
    expect(back.body.database.cpus).toBe(0.75);
    expect(hostConfigOf(container)?.NanoCpus).toBe(750_000_000);
    expect(Bun.spawnSync(["docker", "inspect", "-f", "{{.Id}}", container]).stdout.toString().trim()).toBe(idBefore);
  });
});
