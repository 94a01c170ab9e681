// Every engine whose restore feeds a dump to its client (PostgreSQL's psql, MySQL's mysql,
// MongoDB's mongorestore) runs that client with the load limits: its output discarded and bounded,
// an inactivity timeout from PLATFORM_BACKUP_IDLE_TIMEOUT_SECONDS, and a deadline that grows with
// the backup's size (PLATFORM_BACKUP_LOAD_SECONDS_PER_MB). Against a stand-in driver
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
    test(`${engine}: output discarded past 16 MiB, stopped after PLATFORM_BACKUP_IDLE_TIMEOUT_SECONDS without progress, and after the idle time plus PLATFORM_BACKUP_LOAD_SECONDS_PER_MB per MiB in all`, async () => {
      const execs: RunOptions[] = [];
      const target: DatabaseTarget = {
        driver: recordingDriver(execs) as unknown as DockerDriver,
        definition: ENGINES[engine],
        row: databaseRowOf(engine),
        credentials,
        config: loadConfig({ PLATFORM_BACKUP_IDLE_TIMEOUT_SECONDS: "37", PLATFORM_BACKUP_LOAD_SECONDS_PER_MB: "20" }),
      };
      await new DatabaseRestores(dumpStorage).loadInto(target, "c1", { storageKey: "k", sizeBytes: 10.5 * 1024 * 1024 } as BackupRow);
      const load = execs.find((exec) => exec.stdin !== undefined)!;
      expect(load.command).toEqual((planOf(engine) as Extract<RestorePlan, { mode: "stream" }>).command.argv);
      expect(load).toMatchObject({ discardStdout: true, maxOutputBytes: 16 * 1024 * 1024, idleTimeoutMs: 37_000, timeoutMs: (37 + 10.5 * 20) * 1000 });
    });
  }

  test("the default inactivity timeout is 15 minutes, and a load may take a minute more per MiB of its backup", () => {
    expect(loadConfig({}).backups).toMatchObject({ idleTimeoutSeconds: 900, loadSecondsPerMB: 60 });
  });
});
