// The steps a restore takes after a load fails, on a real SQLite file and backup storage with a
// stand-in Docker driver whose loads the test scripts: a load stopped at a limit is ended with a
// restart of the engine, the pre-restore backup's load back included; a restore a delete preempts
// stops there (no restart, no load back into a container that is gone).
import { beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import type { PlatformDb } from "../../../src/db";
import { databaseBackups, databaseOperations } from "../../../src/db/schema";
import { ExecStopped } from "../../../src/docker/driver";
import type { ExecStream, RunOptions } from "../../../src/docker/exec";
import type { DatabaseService } from "../../../src/databases/service";
import { DatabaseBackups } from "../../../src/databases/backups";
import { BackupStorage } from "../../../src/backups/storage";
import { DatabaseRestores } from "../../../src/databases/backup-restore";
import { WorkspaceDisk } from "../../../src/quotas/usage";
import { serviceWithOneDatabase } from "../../helpers/database-service";

const DUMP = "--\n-- PostgreSQL database dump\n--\n\nSELECT 1;\n\n--\n-- PostgreSQL database dump complete\n--\n";
const actor = { type: "api_key", id: "key_1" };

/** Answers each load (an exec fed a dump) with the next scripted outcome; every other command succeeds. */
class ScriptedDriver {
  readonly machineId = "local";
  readonly calls: string[] = [];
  loads: Array<() => Promise<never>> = [];

  async execStream(): Promise<ExecStream> {
    return { stdout: new Blob([DUMP]).stream(), done: Promise.resolve({ exitCode: 0, stderr: "" }) };
  }

  async exec(_id: string, options: RunOptions) {
    if (!(options.stdin instanceof ReadableStream)) return { exitCode: 0, stdout: "1\n", stderr: "" };
    this.calls.push("load");
    await new Response(options.stdin).arrayBuffer();
    const outcome = this.loads.shift();
    if (!outcome) return { exitCode: 0, stdout: "", stderr: "" };
    return outcome();
  }

  async stopContainer() {
    this.calls.push("stop");
  }

  async startContainer() {
    this.calls.push("start");
  }

  async copyToContainer() {}

  async inspectContainer() {
    return { running: true, state: "running" };
  }
}

let db: PlatformDb;
let driver: ScriptedDriver;
let service: DatabaseService;
let restores: DatabaseRestores;
let tracked: Promise<unknown>[];

beforeEach(async () => {
  driver = new ScriptedDriver();
  let dataDir: string;
  ({ dataDir, db, service } = serviceWithOneDatabase(driver));
  tracked = [];
  service.track = (work) => void tracked.push(work);
  const storage = new BackupStorage(join(dataDir, "backups"));
  const backups = new DatabaseBackups(service, storage, null, new WorkspaceDisk());
  restores = new DatabaseRestores(backups);
  const row = backups.newRow(service.find("ws_1", "db_1"), "manual", null);
  const stored = await storage.write(row.storageKey, new Blob([DUMP]).stream());
  db.update(databaseBackups).set({ status: "completed", sizeBytes: stored.sizeBytes, sha256: stored.sha256 }).where(eq(databaseBackups.id, row.id)).run();
});

async function restoreToEnd() {
  const backup = db.select().from(databaseBackups).where(eq(databaseBackups.type, "manual")).get()!;
  const { operationId } = await restores.restore("ws_1", "db_1", backup.id, actor);
  await Promise.all(tracked);
  return db.select().from(databaseOperations).where(eq(databaseOperations.id, operationId)).get()!;
}

const stopped = (reason: string) => async (): Promise<never> => {
  throw new ExecStopped(reason);
};

describe("a restore whose load fails", () => {
  test("a load stopped at a limit, and the pre-restore backup's load back stopped too: the engine is restarted after each", async () => {
    driver.loads = [stopped("psql did not finish within 5 s and was stopped"), stopped("psql made no progress for 4 s and was stopped")];
    const operation = await restoreToEnd();
    expect(driver.calls).toEqual(["load", "stop", "start", "load", "stop", "start"]);
    expect(operation.status).toBe("failed");
    expect(operation.error).toStartWith("psql did not finish within 5 s and was stopped; loading the pre-restore backup bk_");
    expect(operation.error).toEndWith("back failed too: psql made no progress for 4 s and was stopped");
  });

  test("preempted by a delete during the load: it stops there, without a restart or a load back, and says it was canceled", async () => {
    const loading = Promise.withResolvers<void>();
    const containerRemoved = Promise.withResolvers<void>();
    driver.loads = [
      async () => {
        loading.resolve();
        await containerRemoved.promise;
        throw new ExecStopped("psql made no progress for 4 s and was stopped");
      },
    ];
    const ended = restoreToEnd();
    await loading.promise;
    service.operations.takeOver(service.find("ws_1", "db_1"), "delete", actor, "canceled: the database was deleted");
    containerRemoved.resolve();
    const operation = await ended;
    expect(driver.calls).toEqual(["load"]);
    expect(operation).toMatchObject({ status: "failed", error: "canceled: the database was deleted" });
  });
});
