// The operations history and the one-operation-at-a-time rule, on a real SQLite file.
import { beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openDatabase, type PlatformDb } from "../../../src/db";
import { databases, workspaces } from "../../../src/db/schema";
import { INTERRUPTED, Operations } from "../../../src/databases/operations";
import { ApiError } from "../../../src/http/errors";
import { tempDir } from "../../helpers/temp";

const actor = { type: "api_key", id: "key_1" };
const database = { id: "db_1", workspaceId: "ws_1" };
let db: PlatformDb;
let clock: number;
let operations: Operations;

beforeEach(() => {
  db = openDatabase(join(tempDir(), "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  db.insert(databases)
    .values({
      ...database, name: "orders", engine: "redis", version: "7", status: "running", memoryMB: 256, storageGB: 1, username: "u",
      passwordCiphertext: "x", databaseName: "d", machineId: "local", volumeName: "v", createdAt: 0, updatedAt: 0,
    })
    .run();
  clock = 1_000;
  operations = new Operations(db, () => clock);
});

describe("operations", () => {
  test("move pending -> running -> succeeded, with their times", async () => {
    const operation = operations.begin(database, "stop", actor);
    expect(operations.get(operation.id)!.status).toBe("pending");
    await operation.run(async () => {
      expect(operations.get(operation.id)!.status).toBe("running");
      clock = 2_000;
    });
    expect(operations.get(operation.id)).toMatchObject({
      type: "stop", status: "succeeded", error: null, actor, startedAt: new Date(1_000).toISOString(), finishedAt: new Date(2_000).toISOString(),
    });
  });

  test("a failure is recorded with its error text and rethrown", async () => {
    const operation = operations.begin(database, "start", actor);
    await expect(operation.run(async () => Promise.reject(new Error("engine did not answer")))).rejects.toThrow("engine did not answer");
    expect(operations.get(operation.id)).toMatchObject({ status: "failed", error: "engine did not answer" });
  });

  test("a second operation while one runs gets 409 BUSY; afterwards it may go", async () => {
    const first = operations.begin(database, "rotate-password", actor);
    let refused: unknown;
    try {
      operations.begin(database, "stop", actor);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).code).toBe("BUSY");
    expect((refused as ApiError).status).toBe(409);
    await first.run(async () => undefined);
    expect(operations.isBusy(database.id)).toBe(false);
    expect(() => operations.begin(database, "stop", actor).release()).not.toThrow();
  });

  test("the history is newest first, also within one millisecond", async () => {
    for (const type of ["create", "settings", "stop", "start"] as const) await operations.begin(database, type, actor).run(async () => undefined);
    expect(operations.list(database.id).map((operation) => operation.type)).toEqual(["start", "stop", "settings", "create"]);
  });

  test("operations cut off by a stop of the platform are closed as failed at the next start", () => {
    const operation = operations.begin(database, "create", actor);
    const afterRestart = new Operations(db, () => 5_000);
    afterRestart.failInterrupted();
    expect(afterRestart.get(operation.id)).toMatchObject({ status: "failed", error: INTERRUPTED, finishedAt: new Date(5_000).toISOString() });
  });

  test("a delete takes over: running operations (exclusive or not) are aborted with the reason, and it holds the database once they ended", async () => {
    const verify = operations.begin(database, "verify", actor, { exclusive: false });
    const create = operations.begin(database, "create", actor);
    const seen: string[] = [];
    const work = (operation: typeof create) =>
      operation.run(() => new Promise((_, reject) => operation.signal.addEventListener("abort", () => reject(operation.signal.reason)))).catch((error: Error) => {
        seen.push(`${operation.type}: ${error.message}`);
      });
    const running = [work(create), work(verify)];
    const { operation: deletion, preempted } = operations.takeOver(database, "delete", actor, "canceled: the database was deleted");
    expect(await preempted).toBe(2);
    await Promise.all(running);
    expect(seen.sort()).toEqual(["create: canceled: the database was deleted", "verify: canceled: the database was deleted"]);
    expect(operations.get(create.id)).toMatchObject({ status: "failed", error: "canceled: the database was deleted" });
    // The preempted ones' ends free nothing: the delete holds the database until it ends.
    expect(() => operations.begin(database, "start", actor)).toThrow("busy with a 'delete' operation");
    expect(() => operations.takeOver(database, "delete", actor, "again")).toThrow("busy with a 'delete' operation");
    await deletion.run(async () => undefined);
    expect(operations.isBusy(database.id)).toBe(false);
    expect(await operations.takeOver(database, "delete", actor, "nothing runs").preempted).toBe(0);
  });
});
