// The life of one database of an engine, on the real Docker engine with the stand-in image, as
// a user sees it: create, connect with a real client through the returned connection string,
// list, stats, logs, a memory change, password rotation, stop/start, history, delete. The tests
// of a file share that one database and run in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { dockerCli, dockerJson } from "../../helpers/docker";
import {
  connectionError,
  createDatabase,
  deleteAllDatabases,
  removeWorkspaceNetworks,
  waitForOperation,
  waitForStatus,
  type EngineClient,
} from "../../helpers/databases";

const MIB = 1024 * 1024;

async function containerOf(databaseId: string): Promise<any> {
  const ids = (await dockerCli("ps", "-aq", "--filter", `label=platform.database=${databaseId}`)).trim().split("\n").filter(Boolean);
  if (ids.length !== 1) throw new Error(`expected one container for ${databaseId}, found ${ids.length}`);
  return (await dockerJson("inspect", ids[0]!))[0];
}

export function describeDatabaseLifecycle(engine: "postgresql" | "mysql" | "redis", client: EngineClient) {
  describe(`${engine} database`, () => {
    let server: TestServer;
    let key: string;
    let workspaceId: string;
    let database: any;
    // URL-reserved characters, quotes and a backslash: encoding and engine quoting are exercised for real.
    const firstPassword = `F1rst/${engine}:p@ss#?&%`;
    const secondPassword = `S2cond'${engine}"\\pass;--`;
    let urlBeforeRotation = "";

    beforeAll(async () => {
      server = await TestServer.start();
      ({ key, workspaceId } = await server.createKey(`${engine} tests`));
    });
    afterAll(async () => {
      // Leaves nothing behind even when a test failed before the delete test.
      await deleteAllDatabases(server, key);
      await server.stop();
      removeWorkspaceNetworks(workspaceId);
    });

    test("create answers at once with the real connection string, then the engine answers with it", async () => {
      const created = await createDatabase(server, key, { name: `app-${engine}`, engine, memoryMB: 256, storageGB: 1, password: firstPassword });
      database = created.database;
      expect(database.status).toBe("provisioning");
      expect(database.connectionString).toContain(`:${encodeURIComponent(firstPassword)}@localhost:${database.port}`);
      expect(database.connectionString.startsWith(`${engine === "redis" ? "redis" : engine}://`)).toBe(true);
      expect(created.operation).toMatchObject({ id: created.operationId, type: "create" });

      const running = await waitForStatus(server, key, database.id, ["running"]);
      expect(running.storage).toMatchObject({ allowanceBytes: 1024 ** 3, overAllowance: false, warning: null });
      const operation = await waitForOperation(server, key, database.id, created.operationId);
      expect(operation.status).toBe("succeeded");
    });

    test("the container is hardened, on the workspace network under the database's name, published on 127.0.0.1 only", async () => {
      const container = await containerOf(database.id);
      expect(container.HostConfig.Memory).toBe(256 * MIB);
      expect(container.HostConfig.CapDrop).toEqual(["ALL"]);
      expect(container.HostConfig.SecurityOpt).toContain("no-new-privileges:true");
      const [binding] = Object.values<any>(container.HostConfig.PortBindings)[0];
      expect(binding.HostIp).toBe("127.0.0.1");
      const networks = container.NetworkSettings.Networks;
      const network = `platform-${workspaceId.toLowerCase()}`;
      expect(Object.keys(networks)).toEqual([network]);
      expect(networks[network].Aliases).toContain(`app-${engine}`);
      // Another container on the workspace network reaches it by name (as the workspace's apps do).
      const image = process.env[`PLATFORM_IMAGE_${engine.toUpperCase()}`]!;
      const reach = `getent hosts ${database.internalHost} && exec 3<>/dev/tcp/${database.internalHost}/${database.internalPort}`;
      await dockerCli("run", "--rm", "--network", network, "--entrypoint", "bash", image, "-c", reach);
      const mounts = container.Mounts.map((mount: any) => ({ type: mount.Type, name: mount.Name }));
      expect(mounts.every((mount: any) => mount.type === "volume" && mount.name.startsWith("platform-db-"))).toBe(true);
      // No process in the container shows the password on its command line.
      const processes = await dockerCli("exec", container.Id, "ps", "-eo", "args");
      expect(processes).not.toContain(firstPassword);
      expect(JSON.stringify([container.Path, container.Args])).not.toContain(firstPassword);
    });

    test("a real client connects from the host with the connection string and keeps what it writes", async () => {
      await client.write(database.connectionString, "alpha");
      await client.write(database.connectionString, "beta");
      expect(await client.read(database.connectionString)).toEqual(["alpha", "beta"]);
    });

    test("the list masks the password", async () => {
      const { status, body } = await server.request("GET", "/api/databases/", { key });
      expect(status).toBe(200);
      expect(body.meta.total).toBe(1);
      const [listed] = body.databases;
      expect(listed.connectionString).toBe(database.connectionString.replace(`:${encodeURIComponent(firstPassword)}@`, ":****@"));
      expect(JSON.stringify(body)).not.toContain(firstPassword);
    });

    test("stats name CPU, memory, network and storage", async () => {
      let { status, body } = await server.request("GET", `/api/databases/${database.id}/stats`, { key });
      if (body.stats?.storageUsedBytes === 0) {
        // Volume use is measured at most every 2 s: the last measure may be from before the first write.
        await Bun.sleep(2_100);
        ({ status, body } = await server.request("GET", `/api/databases/${database.id}/stats`, { key }));
      }
      expect(status).toBe(200);
      const stats = body.stats;
      expect(stats.running).toBe(true);
      expect(stats.memoryLimitBytes).toBe(256 * MIB);
      expect(stats.memoryUsedBytes).toBeGreaterThan(0);
      expect(stats.memoryUsedBytes).toBeLessThan(256 * MIB);
      expect(typeof stats.cpuPercent).toBe("number");
      expect(stats.networkRxBytes).toBeGreaterThan(0); // the client's traffic
      expect(stats.networkTxBytes).toBeGreaterThan(0);
      expect(stats.storageUsedBytes).toBeGreaterThan(0);
      expect(stats.storageAllowanceBytes).toBe(1024 ** 3);
    });

    test("logs honour tail and timestamps", async () => {
      const plain = await server.request("GET", `/api/databases/${database.id}/logs?tail=3`, { key });
      expect(plain.status).toBe(200);
      expect(plain.body.lines.length).toBeGreaterThan(0);
      expect(plain.body.lines.length).toBeLessThanOrEqual(3);
      expect(plain.body.lines.every((line: unknown) => typeof line === "string")).toBe(true);
      const stamped = await server.request("GET", `/api/databases/${database.id}/logs?tail=2000&timestamps=true`, { key });
      expect(stamped.body.lines.length).toBeGreaterThan(plain.body.lines.length - 1);
      for (const line of stamped.body.lines) expect(line).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z /);
    });

    test("a new memory limit applies to the running container, with no restart and no data lost", async () => {
      const before = await containerOf(database.id);
      const { status, body } = await server.request("PATCH", `/api/databases/${database.id}/settings`, { key, body: { memoryMB: 384 } });
      expect(status).toBe(200);
      expect(body.database.memoryMB).toBe(384);
      expect(body.operation).toMatchObject({ type: "settings", status: "succeeded" });
      const after = await containerOf(database.id);
      expect(after.HostConfig.Memory).toBe(384 * MIB);
      expect(after.HostConfig.MemorySwap).toBe(384 * MIB);
      expect(after.State.StartedAt).toBe(before.State.StartedAt);
      expect(await client.read(body.database.connectionString)).toEqual(["alpha", "beta"]);
    });

    test("rotating the password changes it inside the engine: the old one is refused, the new one works", async () => {
      urlBeforeRotation = (await waitForStatus(server, key, database.id, ["running"])).connectionString;
      const { status, body } = await server.request("POST", `/api/databases/${database.id}/rotate-password`, { key, body: { password: secondPassword } });
      expect(status).toBe(202);
      const operation = await waitForOperation(server, key, database.id, body.operationId);
      expect(operation).toMatchObject({ type: "rotate-password", status: "succeeded", error: null });

      const rotated = await waitForStatus(server, key, database.id, ["running"]);
      expect(rotated.connectionString).toContain(`:${encodeURIComponent(secondPassword)}@`);
      expect(await client.read(rotated.connectionString)).toEqual(["alpha", "beta"]);
      expect(await connectionError(client, urlBeforeRotation)).not.toBeNull();
    });

    test("stop, a rename while stopped, and start keep the data, the rotated password and the connection string", async () => {
      const before = (await server.request("GET", `/api/databases/${database.id}`, { key })).body.database;
      const stopped = await server.request("POST", `/api/databases/${database.id}/stop`, { key });
      expect(stopped.status).toBe(202); // answered at once; the engine stops in the background
      expect(stopped.body.operation).toMatchObject({ type: "stop" });
      expect((await waitForStatus(server, key, database.id, ["stopped", "failed"])).status).toBe("stopped");
      expect((await containerOf(database.id)).State.Running).toBe(false);
      expect((await server.request("GET", `/api/databases/${database.id}`, { key })).body.database.status).toBe("stopped");

      // A stopped container publishes no port; the rename must not read the port from it.
      const renamed = await server.request("PATCH", `/api/databases/${database.id}/settings`, { key, body: { name: `renamed-${engine}` } });
      expect(renamed.status).toBe(200);
      expect(renamed.body.database).toMatchObject({ name: `renamed-${engine}`, port: before.port, connectionString: before.connectionString });
      expect((await server.request("GET", `/api/databases/${database.id}`, { key })).body.database.connectionString).toBe(before.connectionString);

      const started = await server.request("POST", `/api/databases/${database.id}/start`, { key });
      expect(started.status).toBe(202);
      expect(started.body.database.status).toBe("provisioning");
      const running = await waitForStatus(server, key, database.id, ["running"]);
      // The host port was chosen once at creation: connection strings given out stay valid.
      const [bindings] = Object.values<any>((await containerOf(database.id)).NetworkSettings.Ports);
      expect(running.port).toBe(Number(bindings[0].HostPort));
      expect(running.connectionString).toBe(before.connectionString);
      expect(await client.read(running.connectionString)).toEqual(["alpha", "beta"]);
      const withOldPassword = running.connectionString.replace(encodeURIComponent(secondPassword), encodeURIComponent(firstPassword));
      expect(await connectionError(client, withOldPassword)).not.toBeNull();
      const aliases = Object.values<any>((await containerOf(database.id)).NetworkSettings.Networks)[0].Aliases;
      expect(aliases).toContain(`renamed-${engine}`);
      expect(aliases).not.toContain(`app-${engine}`);
    });

    test("the operations history lists every operation, newest first, with its actor", async () => {
      const { body } = await server.request("GET", `/api/databases/${database.id}/operations`, { key });
      expect(body.operations.map((operation: any) => operation.type)).toEqual(["start", "settings", "stop", "rotate-password", "settings", "create"]);
      for (const operation of body.operations) {
        expect(operation.status).toBe("succeeded");
        expect(operation.actor.type).toBe("api_key");
        expect(Date.parse(operation.finishedAt)).toBeGreaterThanOrEqual(Date.parse(operation.startedAt));
      }
    });

    test("delete removes the container and its volume for good", async () => {
      const volumes = (await containerOf(database.id)).Mounts.map((mount: any) => mount.Name);
      const { status, body } = await server.request("DELETE", `/api/databases/${database.id}`, { key });
      expect(status).toBe(200);
      expect(body.deleted).toBe(true);
      expect((await dockerCli("ps", "-aq", "--filter", `label=platform.database=${database.id}`)).trim()).toBe("");
      for (const volume of volumes) await expect(dockerJson("volume", "inspect", volume)).rejects.toThrow();
      expect((await server.request("GET", `/api/databases/${database.id}`, { key })).status).toBe(404);
    });
  });
}
