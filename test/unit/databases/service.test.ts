// The database service's own rules, on a real SQLite file with a stand-in Docker driver that
// answers only what a test scripts: what a GET may overwrite, and which names a database may take.
import { beforeEach, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { loadConfig } from "../../../src/config";
import { SecretBox } from "../../../src/crypto/secrets";
import { openDatabase, type PlatformDb } from "../../../src/db";
import { apps, databases, workspaces } from "../../../src/db/schema";
import type { ContainerSummary, DockerDriver } from "../../../src/docker/driver";
import { Machines } from "../../../src/machines/service";
import { DatabaseService } from "../../../src/databases/service";
import { updateSettings } from "../../../src/databases/lifecycle";
import { ApiError } from "../../../src/http/errors";
import { bindCheck } from "../../../src/databases/ports";
import { tempDir } from "../../helpers/temp";

const actor = { type: "api_key", id: "key_1" };

/** A Docker driver whose container inspection waits until the test answers it. */
class ScriptedDriver {
  readonly machineId = "local";
  private answer: ((container: Partial<ContainerSummary>) => void) | null = null;
  inspected = Promise.withResolvers<void>();

  inspectContainer(): Promise<Partial<ContainerSummary>> {
    this.inspected.resolve();
    return new Promise((resolve) => (this.answer = resolve));
  }

  answerInspect(container: Partial<ContainerSummary>) {
    this.answer!(container);
  }
}

let db: PlatformDb;
let driver: ScriptedDriver;
let service: DatabaseService;
let secrets: SecretBox;

function insertDatabase(id: string, name: string, status = "running", hostPort = 15_400) {
  db.insert(databases)
    .values({
      id, workspaceId: "ws_1", name, engine: "redis", version: "7", status, memoryMB: 256, storageGB: 1, username: "app_user",
      passwordCiphertext: secrets.encrypt("a-long-password", id), databaseName: "app_db", machineId: "local",
      volumeName: `platform-db-${id}-data`, hostPort, createdAt: 0, updatedAt: 0,
    })
    .run();
  return db.select().from(databases).all().find((row) => row.id === id)!;
}

function insertApp(workspaceId: string, name: string) {
  db.insert(apps)
    .values({
      id: `app_${workspaceId}_${name}`, workspaceId, name, runtime: "node", status: "running", memoryMB: 256, startupCommand: "auto",
      autoRestart: true, autoDeploy: false, machineId: "local", createdAt: 0, updatedAt: 0,
    })
    .run();
}

function refusal(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    return error as ApiError;
  }
  throw new Error("expected a refusal");
}

beforeEach(() => {
  db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values([{ id: "ws_1", name: "one", createdAt: 0 }, { id: "ws_2", name: "two", createdAt: 0 }]).run();
  driver = new ScriptedDriver();
  secrets = new SecretBox(randomBytes(32));
  const machines = new Machines(new Map([["local", driver as unknown as DockerDriver]]));
  service = new DatabaseService({ db, machines, secrets, config: loadConfig({}) });
});

describe("the status sync of a GET", () => {
  test("does not overwrite the status an operation set while Docker was being asked", async () => {
    const row = insertDatabase("db_1", "orders");
    const sync = service.syncStatus(row);
    await driver.inspected.promise;
    // A start begins while the GET waits for Docker: it owns the status from now on.
    service.operations.begin(row, "start", actor);
    service.update(row.id, { status: "provisioning", statusReason: null });
    driver.answerInspect({ id: "c1", state: "exited", running: false, exitCode: 0, ports: {} });

    expect((await sync).status).toBe("provisioning");
    expect(service.find("ws_1", row.id).status).toBe("provisioning");
  });

  test("records what the container says when nothing else runs", async () => {
    const row = insertDatabase("db_1", "orders");
    const sync = service.syncStatus(row);
    await driver.inspected.promise;
    driver.answerInspect({ id: "c1", state: "exited", running: false, exitCode: 0, ports: {} });
    expect(await sync).toMatchObject({ status: "stopped", statusReason: "Stopped outside the platform" });
  });
});

describe("a database's name is its alias on the workspace network", () => {
  test("creating one with the name of an app of the workspace -> 409 NAME_TAKEN, before Docker is asked", async () => {
    insertApp("ws_1", "shop");
    const refused = await service.create("ws_1", { name: "shop", engine: "redis" }, actor).catch((error: ApiError) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ code: "NAME_TAKEN", status: 409, message: expect.stringContaining("app named 'shop'") });
    expect(db.select().from(databases).all()).toEqual([]);
  });

  test("renaming one to the name of an app of the workspace -> 409 NAME_TAKEN, nothing changed", async () => {
    insertApp("ws_1", "shop");
    const row = insertDatabase("db_1", "orders");
    const refused = await updateSettings(service, "ws_1", row.id, { name: "shop" }, actor).catch((error: ApiError) => error);
    expect(refused).toMatchObject({ code: "NAME_TAKEN", status: 409 });
    expect(service.find("ws_1", row.id).name).toBe("orders");
    expect(service.listOperations("ws_1", row.id)).toEqual([]);
  });

  test("an app of another workspace does not hold the name", () => {
    insertApp("ws_2", "shop");
    expect(() => service.assertNameFree("ws_1", "shop")).not.toThrow();
    expect(refusal(() => service.assertNameFree("ws_2", "shop")).code).toBe("NAME_TAKEN");
  });
});

describe("host ports", () => {
  /** The first of `count` consecutive ports that can be bound now. */
  async function freePorts(count: number): Promise<number> {
    const canBind = bindCheck("127.0.0.1");
    for (let first = 20_000; first < 30_000; first += count) {
      let free = true;
      for (let port = first; free && port < first + count; port++) free = await canBind(port);
      if (free) return first;
    }
    throw new Error("no free ports to test with");
  }

  test("a new database gets a port no other database holds, nor one being created at the same time", async () => {
    const first = await freePorts(3);
    const machines = new Machines(new Map([["local", driver as unknown as DockerDriver]]));
    service = new DatabaseService({ db, machines, secrets, config: loadConfig({ PLATFORM_DB_PORT_RANGE: `${first}-${first + 2}` }) });
    insertDatabase("db_1", "orders", "stopped", first);

    const [one, two] = await Promise.all([service.takeHostPort("local"), service.takeHostPort("local")]);
    expect([one.port, two.port].sort()).toEqual([first + 1, first + 2]);
    const refused = await service.takeHostPort("local").catch((error: ApiError) => error);
    expect(refused).toMatchObject({ code: "PORT_RANGE_EXHAUSTED", status: 409 });

    one.release(); // its creation failed before its row was written
    expect((await service.takeHostPort("local")).port).toBe(one.port);
  });
});
