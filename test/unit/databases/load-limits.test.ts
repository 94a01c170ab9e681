// Every engine whose restore feeds a dump to its client (PostgreSQL's psql, MySQL's mysql,
// MongoDB's mongorestore) runs that client with the load limits: its output discarded and bounded,
// and an inactivity timeout from PLATFORM_BACKUP_IDLE_TIMEOUT_SECONDS. Against a stand-in driver
// that records each exec (MongoDB cannot run on these machines; the real engines are covered by
// test/integration/databases/load-limits.test.ts).
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../../src/config";
import type { DockerDriver } from "../../../src/docker/driver";
import type { RunOptions } from "../../../src/docker/exec";
import { ENGINES, ENGINE_NAMES, type Engine, type RestorePlan } from "../../../src/databases/engines";
import { DatabaseRestores } from "../../../src/databases/backup-restore";
import type { DatabaseBackups, BackupRow } from "../../../src/databases/backups";
import type { DatabaseTarget } from "../../../src/databases/runtime";
import { credentials, databaseRowOf } from "../../helpers/database-rows";

const planOf = (engine: Engine) => ENGINES[engine].restore({ credentials, version: "1", memoryMB: 256 });
const STREAMED = ENGINE_NAMES.filter((engine) => planOf(engine).mode === "stream");

function recordingDriver(execs: RunOptions[]) {
  return {
    copyToContainer: async () => undefined,
    exec: async (_id: string, options: RunOptions) => {
      execs.push(options);
      if (options.stdin instanceof ReadableStream) await new Response(options.stdin).arrayBuffer();
      return { exitCode: 0, stdout: "", stderr: "" };
    },
  };
}

const dumpStorage = { storage: { dumpOf: () => new Blob(["-- a dump\n"]).stream() } } as unknown as DatabaseBackups;

describe("the client of a load is bounded", () => {
  test("the engines that stream a dump to a client are PostgreSQL, MySQL and MongoDB", () => {
    expect(STREAMED.sort()).toEqual(["mongodb", "mysql", "postgresql"]);
  });

  for (const engine of STREAMED) {
    test(`${engine}: output discarded past 16 MiB, and stopped after PLATFORM_BACKUP_IDLE_TIMEOUT_SECONDS without progress`, async () => {
      const execs: RunOptions[] = [];
      const target: DatabaseTarget = {
        driver: recordingDriver(execs) as unknown as DockerDriver,
        definition: ENGINES[engine],
        row: databaseRowOf(engine),
        credentials,
        config: loadConfig({ PLATFORM_BACKUP_IDLE_TIMEOUT_SECONDS: "37" }),
      };
      await new DatabaseRestores(dumpStorage).loadInto(target, "c1", { storageKey: "k" } as BackupRow);
      const load = execs.find((exec) => exec.stdin !== undefined)!;
      expect(load.command).toEqual((planOf(engine) as Extract<RestorePlan, { mode: "stream" }>).command.argv);
      expect(load).toMatchObject({ discardStdout: true, maxOutputBytes: 16 * 1024 * 1024, idleTimeoutMs: 37_000 });
    });
  }

  test("the default inactivity timeout is 15 minutes", () => {
    expect(loadConfig({}).backups.idleTimeoutSeconds).toBe(900);
  });
});
