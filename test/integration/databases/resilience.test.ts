// Databases when things go wrong around them: the Docker engine unreachable or refusing, an
// engine that never comes up, no host port left, the platform killed in the middle of
// provisioning, a container stopped behind the platform's back.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { dockerCli } from "../../helpers/docker";
import { expectErrorEnvelope } from "../../helpers/auth-matrix";
import {
  createDatabase,
  deleteAllDatabases,
  removeWorkspaceNetworks,
  sqlClient,
  waitForOperation,
  waitForStatus,
} from "../../helpers/databases";

describe("with the Docker engine unreachable", () => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await TestServer.start({ PLATFORM_DOCKER_HOST: "unix:///tmp/platform-no-such-docker.sock" });
    ({ key } = await server.createKey("no docker"));
  });
  afterAll(() => server.stop());

  test("create answers 503 DOCKER_UNAVAILABLE with Retry-After and leaves no half-made database", async () => {
    const response = await server.request("POST", "/api/databases/", { key, body: { name: "orders", engine: "redis" } });
    expectErrorEnvelope(response, 503, "DOCKER_UNAVAILABLE");
    expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
    const list = await server.request("GET", "/api/databases/", { key });
    expect(list.status).toBe(200);
    expect(list.body.databases).toEqual([]);
  });
});

describe("with a bind address nothing can publish on", () => {
  let server: TestServer;
  let key: string;
  let workspaceId: string;
  beforeAll(async () => {
    server = await TestServer.start({ PLATFORM_DB_BIND_ADDRESS: "192.0.2.1" }); // TEST-NET-1: on no interface here
    ({ key, workspaceId } = await server.createKey("bad bind address"));
  });
  afterAll(async () => {
    await server.stop();
    removeWorkspaceNetworks(workspaceId);
  });

  test("create answers 409 OPERATION_FAILED naming the address, and keeps nothing", async () => {
    const response = await server.request("POST", "/api/databases/", { key, body: { name: "orders", engine: "redis", memoryMB: 256 } });
    expectErrorEnvelope(response, 409, "OPERATION_FAILED");
    expect(response.body.error).toContain("192.0.2.1");
    expect((await server.request("GET", "/api/databases/", { key })).body.databases).toEqual([]);
    expect((await dockerCli("ps", "-aq", "--filter", `label=platform.workspace=${workspaceId}`)).trim()).toBe("");
    expect((await dockerCli("volume", "ls", "-q", "--filter", `label=platform.workspace=${workspaceId}`)).trim()).toBe("");
  });
});

describe("with an engine image that exits at once, and one that cannot be pulled", () => {
  let server: TestServer;
  let key: string;
  let workspaceId: string;
  beforeAll(async () => {
    // The bare base image: its bash exits at once without a terminal, as a broken engine would.
    server = await TestServer.start({ PLATFORM_IMAGE_POSTGRESQL: "platform-test/base:latest", PLATFORM_IMAGE_REDIS: "platform-test/no-such-image:1" });
    ({ key, workspaceId } = await server.createKey("broken engine"));
  });
  afterAll(async () => {
    await deleteAllDatabases(server, key);
    await server.stop();
    removeWorkspaceNetworks(workspaceId);
  });

  test("create answers 201 at once; in the background the database fails with the reason and leaves nothing in Docker", async () => {
    const created = await createDatabase(server, key, { name: "broken", engine: "postgresql", memoryMB: 256 });
    const { port, connectionString } = created.database;
    expect(created.database.status).toBe("provisioning");
    expect(connectionString).toContain(`@localhost:${port}/`);

    const operation = await waitForOperation(server, key, created.database.id, created.operationId);
    expect(operation).toMatchObject({ type: "create", status: "failed", error: expect.stringContaining("PostgreSQL exited with code 0 before answering") });
    const { body } = await server.request("GET", `/api/databases/${created.database.id}`, { key });
    expect(body.database).toMatchObject({ status: "failed", statusReason: operation.error, port, connectionString });
    expect((await dockerCli("ps", "-aq", "--filter", `label=platform.database=${created.database.id}`)).trim()).toBe("");
    expect((await dockerCli("volume", "ls", "-q", "--filter", `label=platform.database=${created.database.id}`)).trim()).toBe("");

    expect((await server.request("DELETE", `/api/databases/${created.database.id}`, { key })).status).toBe(200);
  });

  test("create answers 201 before the image is pulled; a pull that fails makes the database failed, naming the image", async () => {
    const created = await createDatabase(server, key, { name: "unpullable", engine: "redis", memoryMB: 256 });
    expect(created.database.status).toBe("provisioning");
    const operation = await waitForOperation(server, key, created.database.id, created.operationId);
    expect(operation).toMatchObject({ status: "failed", error: expect.stringContaining("platform-test/no-such-image:1") });
    const { body } = await server.request("GET", `/api/databases/${created.database.id}`, { key });
    expect(body.database).toMatchObject({ status: "failed", statusReason: operation.error });
    expect((await dockerCli("volume", "ls", "-q", "--filter", `label=platform.database=${created.database.id}`)).trim()).toBe("");
  });
});

describe("with a port range of two ports, one of them in use on the host", () => {
  let server: TestServer;
  let key: string;
  let workspaceId: string;
  let holder: { stop(closeActiveConnections?: boolean): void } | undefined;
  let first = 0;
  beforeAll(async () => {
    // Two neighbouring free ports outside the default range; the first is then held by this test.
    for (first = 21_000; first < 31_000; first += 2) {
      try {
        Bun.listen({ hostname: "127.0.0.1", port: first + 1, socket: { data() {} } }).stop(true);
        holder = Bun.listen({ hostname: "127.0.0.1", port: first, socket: { data() {} } });
        break;
      } catch {
        continue;
      }
    }
    server = await TestServer.start({ PLATFORM_DB_PORT_RANGE: `${first}-${first + 1}` });
    ({ key, workspaceId } = await server.createKey("port range"));
  });
  afterAll(async () => {
    holder?.stop(true);
    await deleteAllDatabases(server, key);
    await server.stop();
    removeWorkspaceNetworks(workspaceId);
  });

  test("a database gets the port nothing holds; the next one -> 409 PORT_RANGE_EXHAUSTED", async () => {
    const { database } = await createDatabase(server, key, { name: "first", engine: "redis", memoryMB: 256 });
    expect(database.port).toBe(first + 1);
    const response = await server.request("POST", "/api/databases/", { key, body: { name: "second", engine: "redis", memoryMB: 256 } });
    expectErrorEnvelope(response, 409, "PORT_RANGE_EXHAUSTED");
    expect(response.body.error).toContain(`PLATFORM_DB_PORT_RANGE (${first}-${first + 1})`);
    expect((await server.request("GET", "/api/databases/", { key })).body.databases.map((listed: any) => listed.name)).toEqual(["first"]);
  });
});

describe("with the real engine", () => {
  let server: TestServer;
  let key: string;
  let workspaceId: string;
  let database: any;
  beforeAll(async () => {
    server = await TestServer.start();
    ({ key, workspaceId } = await server.createKey("resilience"));
  });
  afterAll(async () => {
    await deleteAllDatabases(server, key);
    await server.stop();
    removeWorkspaceNetworks(workspaceId);
  });

  test("a platform killed during provisioning closes the operation as interrupted; start finishes the database", async () => {
    ({ database } = await createDatabase(server, key, { name: "survivor", engine: "postgresql", memoryMB: 256 }));
    await server.stop("SIGKILL");
    await server.boot();

    const { body } = await server.request("GET", `/api/databases/${database.id}/operations`, { key });
    expect(body.operations).toEqual([expect.objectContaining({ type: "create", status: "failed", error: expect.stringContaining("interrupted") })]);
    // Provisioning runs after the answer, so how far it got before the kill varies: a container
    // already up is found again by the live status; otherwise the database is failed and start
    // makes (or finishes making) it, on the port the connection string already names.
    const after = await waitForStatus(server, key, database.id, ["running", "failed"], { patient: true });
    if (after.status === "failed") expect((await server.request("POST", `/api/databases/${database.id}/start`, { key })).status).toBe(202);
    const running = await waitForStatus(server, key, database.id, ["running"], { patient: true });
    expect(running.connectionString).toBe(database.connectionString);
    await sqlClient.write(running.connectionString, "kept");
    expect(await sqlClient.read(running.connectionString)).toEqual(["kept"]);
  });

  test("a container stopped outside the platform shows as stopped on the next read, and start brings it back", async () => {
    const containerId = (await dockerCli("ps", "-q", "--filter", `label=platform.database=${database.id}`)).trim();
    await dockerCli("stop", containerId);
    const { body } = await server.request("GET", `/api/databases/${database.id}`, { key });
    expect(body.database).toMatchObject({ status: "stopped", statusReason: "Stopped outside the platform" });

    expect((await server.request("POST", `/api/databases/${database.id}/start`, { key })).status).toBe(202);
    const running = await waitForStatus(server, key, database.id, ["running"]);
    expect(await sqlClient.read(running.connectionString)).toEqual(["kept"]);
  });

  test("DELETE with keepBackups=true still removes the volume (it only spares backups)", async () => {
    const response = await server.request("DELETE", `/api/databases/${database.id}?keepBackups=true`, { key });
    expect(response.status).toBe(200);
    expect((await dockerCli("volume", "ls", "-q", "--filter", `label=platform.database=${database.id}`)).trim()).toBe("");
  });
});
