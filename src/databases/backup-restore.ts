// Restoring a backup. Checked before anything is touched (file whole, checksum, engine and format);
// then, as one `restore` operation: a `pre-restore` backup, and the dump loaded by the engine's own
// means (./engines: fed to its client, or for Redis written as its data file and booted from).
// What stops a restore from leaving the database half restored:
// - PostgreSQL loads in one transaction that only the platform's last bytes commit: a load cut off
//   (failure, crash, kill) rolls back by itself;
// - a load's client is bounded (its output, how long it may go without moving a byte, and how long
//   it may run in all for the size of its dump): one stopped at a bound is ended with a restart of
//   the engine, so nothing it sent runs on;
// - on any other failure the pre-restore backup is loaded back at once (its load bounded and ended
//   the same way);
// - a restore a delete preempts stops at the step it is in: the container is gone, nothing to put back;
// - a restore cut off by a crash or kill is taken up at the next start: the pre-restore backup is
//   loaded back (recoverInterrupted), in a `restore` operation of its own.
import { and, eq } from "drizzle-orm";
import { databaseBackups, databases } from "../db/schema";
import { redact } from "../crypto/redact";
import { ApiError } from "../http/errors";
import { tarStream } from "../docker/tar";
import type { RestorePlan } from "./engines";
import { INTERRUPTED, SYSTEM_ACTOR, type OperationActor } from "./operations";
import { ExecStopped } from "../docker/driver";
import { containerNameOf, runCommand, problemOf, startContainer, stopContainer, waitUntilReady, writeConfigFiles, type DatabaseRow, type DatabaseTarget } from "./runtime";
import { lastLine, type BackupRow, type DatabaseBackups } from "./backups";

/** How long a data-file restore waits for the engine to answer after booting from the file. */
const BOOT_TIMEOUT_MS = 120_000;
/** How long the engine may take to settle after loading (Redis rewriting its AOF). */
const SETTLE_TIMEOUT_MS = 600_000;
/**
 * What a load's client may print (both streams together) before it is stopped. Loading a dump
 * prints next to nothing (psql a line per sequence set); a dump that makes it print more is
 * running queries, not loading data, and would print without end.
 */
const LOAD_OUTPUT_MAX_BYTES = 16 * 1024 * 1024;
const MIB = 1024 * 1024;
/** How long the recovery at start waits for a database to be running again. */
const RECOVERY_WAIT_MS = 120_000;

export class DatabaseRestores {
  constructor(private readonly backups: DatabaseBackups) {}

  private get service() {
    return this.backups.service;
  }

  /**
   * Puts a completed backup of this database back. Checked first, before anything is touched: its
   * file must be whole and its checksum the one recorded (422 BACKUP_CORRUPT otherwise). Then, in
   * the background as a `restore` operation: a `pre-restore` backup, and the dump loaded; when
   * loading fails, the pre-restore backup is loaded back and the operation says what happened.
   */
  async restore(workspaceId: string, databaseId: string, backupId: string, actor: OperationActor) {
    const database = this.service.find(workspaceId, databaseId);
    const backup = this.backups.row(workspaceId, databaseId, backupId);
    if (backup.status !== "completed") throw new ApiError("BACKUP_NOT_READY", `The backup is ${backup.status}; only a completed backup can be restored`);
    if (database.status !== "running") throw new ApiError("NOT_RUNNING", `The database is ${database.status}; a restore is loaded by the running engine, so start it first`);
    const definition = this.service.definitionOf(database);
    if (backup.engine !== database.engine || backup.format !== definition.dumpFormat) {
      throw new ApiError("BACKUP_CORRUPT", `The backup is a ${backup.engine} ${backup.format} dump; this database is ${database.engine}`);
    }
    await this.backups.ensureLocalFile(backup);
    const problem = await this.backups.storage.problemWith(backup.storageKey, backup.sizeBytes, backup.sha256);
    if (problem) throw new ApiError("BACKUP_CORRUPT", `The backup cannot be restored: ${problem}. Nothing was changed`);
    const operation = this.service.operations.begin(database, "restore", actor, { backupId: backup.id });
    // Preempted by a delete, the container is gone: nothing is left to end or put back, so each
    // step's failure is the delete's reason and no further step is taken.
    const { signal } = operation;
    this.service.track(
      operation
        .run(async () => {
          const before = this.backups.newRow(database, "pre-restore", operation.id);
          await this.backups.dump(database, before);
          signal.throwIfAborted();
          try {
            await this.load(database, backup);
          } catch (error) {
            signal.throwIfAborted();
            const reason = (error as Error).message;
            await this.endLoad(database, error, reason, signal);
            await this.rollBack(database, before, reason, signal);
            throw new Error(`${reason}; the database was put back as it was, from the pre-restore backup ${before.id}`);
          }
        })
        .catch(() => {
          // Recorded on the operation.
        }),
    );
    return { database: this.service.view(database, { masked: false }), operationId: operation.id };
  }

  /**
   * A load whose client was stopped (a limit) may have sent what still runs in the engine (a
   * pg_sleep, a loop): a restart ends it, and an open transaction rolls back.
   */
  private async endLoad(database: DatabaseRow, failure: unknown, reason: string, signal: AbortSignal) {
    if (!(failure instanceof ExecStopped)) return;
    const target = this.service.targetOf(database);
    const containerId = containerNameOf(database.id);
    try {
      await stopContainer(target, containerId);
      await startContainer(target, containerId);
      await waitUntilReady(target, containerId, BOOT_TIMEOUT_MS, signal);
    } catch (error) {
      signal.throwIfAborted();
      throw new Error(`${reason}; restarting the engine to end what the load had started failed: ${(error as Error).message}`);
    }
  }

  private async rollBack(database: DatabaseRow, before: BackupRow, reason: string, signal: AbortSignal) {
    const row = this.service.db.select().from(databaseBackups).where(eq(databaseBackups.id, before.id)).get();
    if (!row) throw new Error(`${reason}; the pre-restore backup ${before.id} is gone, so nothing could be put back`);
    signal.throwIfAborted();
    try {
      await this.load(database, row);
    } catch (rollback) {
      signal.throwIfAborted();
      const why = `${reason}; loading the pre-restore backup ${before.id} back failed too: ${(rollback as Error).message}`;
      await this.endLoad(database, rollback, why, signal);
      throw new Error(why);
    }
  }

  /** Loads the backup's dump into the database; throws with the engine's reason when it fails. */
  private load(database: DatabaseRow, backup: BackupRow) {
    return this.loadInto(this.service.targetOf(database), containerNameOf(database.id), backup);
  }

  /**
   * Loads the backup's dump into the engine of `containerId` (the database's own container, or a
   * throwaway one of the same image), as `target` describes it; throws with the engine's reason.
   */
  async loadInto(target: DatabaseTarget, containerId: string, backup: BackupRow) {
    const plan = target.definition.restore({ credentials: target.credentials, version: target.row.version, memoryMB: target.row.memoryMB });
    if (plan.mode === "stream") await this.stream(target, containerId, backup, plan);
    else await this.bootFrom(target, containerId, backup, plan);
  }

  /** Feeds the dump (between the plan's opening and closing text) to the engine's client. */
  private async stream(target: DatabaseTarget, containerId: string, backup: BackupRow, plan: Extract<RestorePlan, { mode: "stream" }>) {
    const { command } = plan;
    const files = Object.keys(command.files ?? {});
    try {
      if (command.files) await writeConfigFiles(target, containerId, command.files);
      const stdin = wrapped(this.backups.storage.dumpOf(backup.storageKey), plan.opening ?? "", plan.closing ?? "");
      const result = await target.driver.exec(containerId, {
        command: command.argv,
        env: command.env,
        stdin,
        discardStdout: true,
        maxOutputBytes: LOAD_OUTPUT_MAX_BYTES,
        idleTimeoutMs: target.config.backups.idleTimeoutSeconds * 1000,
        timeoutMs: loadDeadlineSeconds(target, backup) * 1000,
      });
      if (result.exitCode !== 0) {
        throw new Error(redact(`${command.argv[0]} exited with ${result.exitCode}: ${lastLine(result.stderr) || "no message"}`, [target.credentials.password]));
      }
    } finally {
      if (files.length) await target.driver.exec(containerId, { command: ["rm", "-f", ...files] }).catch(() => undefined);
    }
  }

  /**
   * The engine stopped, the dump written as its data file, a start with the plan's boot files so it
   * loads that file, then the plan's commands until it has settled, and its own config back.
   * (A crash midway leaves the boot files: the next start writes the engine's own config first.)
   */
  private async bootFrom(target: DatabaseTarget, containerId: string, backup: BackupRow, plan: Extract<RestorePlan, { mode: "data-file" }>) {
    const secrets = [target.credentials.password];
    const unpacked = await this.backups.storage.unpack(backup.storageKey);
    try {
      await stopContainer(target, containerId);
      await target.driver.extractToContainer(
        containerId,
        plan.directory,
        tarStream([{ path: plan.fileName, mode: 0o644, content: { file: unpacked.path, size: unpacked.sizeBytes } }]),
      );
      await writeConfigFiles(target, containerId, plan.bootFiles);
      await target.driver.startContainer(containerId);
      await waitUntilReady(target, containerId, BOOT_TIMEOUT_MS);
      for (const command of plan.afterStart) {
        const result = await runCommand(target, containerId, command, secrets);
        if (!result.ok) throw new Error(`${command.argv.join(" ")} failed after loading the data file: ${problemOf(result)}`);
      }
      await this.waitUntilSettled(target, containerId, plan.settled);
      // From now on every start uses the engine's own config again.
      await writeConfigFiles(target, containerId);
    } finally {
      await unpacked.remove();
    }
  }

  private async waitUntilSettled(target: DatabaseTarget, containerId: string, settled: Extract<RestorePlan, { mode: "data-file" }>["settled"]) {
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    for (;;) {
      const result = await runCommand(target, containerId, settled.command, [target.credentials.password]);
      if (result.ok && settled.isDone(result.stdout)) return;
      if (Date.now() > deadline) throw new Error(`the engine did not settle after loading the data file (last answer: ${problemOf(result) || result.stdout.slice(0, 200)})`);
      await Bun.sleep(250);
    }
  }

  /**
   * At start: restores a crash or kill cut off are taken up. When their pre-restore backup was
   * completed (so the load may have begun), it is loaded back in a `restore` operation of its own;
   * the interrupted operation then says what was done.
   */
  async recoverInterrupted() {
    for (const interrupted of this.service.operations.interrupted("restore")) {
      const before = this.service.db
        .select()
        .from(databaseBackups)
        .where(and(eq(databaseBackups.operationId, interrupted.id), eq(databaseBackups.type, "pre-restore")))
        .get();
      if (!before || before.status !== "completed") {
        this.service.operations.explain(interrupted.id, `${INTERRUPTED} before loading anything: the database was not changed`);
        continue;
      }
      const database = await this.runningDatabase(interrupted.databaseId);
      if (!database) {
        this.service.operations.explain(interrupted.id, `${INTERRUPTED}; the database was not running at start: restore the pre-restore backup ${before.id} to put it back as it was`);
        continue;
      }
      const operation = this.service.operations.begin(database, "restore", SYSTEM_ACTOR, { backupId: before.id });
      this.service.operations.explain(interrupted.id, `${INTERRUPTED}; the pre-restore backup ${before.id} is being loaded back (operation ${operation.id})`);
      await operation
        .run(async () => {
          await this.backups.ensureLocalFile(before);
          await this.load(database, before);
        })
        .then(
          () => this.service.operations.explain(interrupted.id, `${INTERRUPTED}; the database was put back as it was, from the pre-restore backup ${before.id}`),
          (error: Error) => this.service.operations.explain(interrupted.id, `${INTERRUPTED}; loading the pre-restore backup ${before.id} back failed: ${error.message}`),
        );
    }
  }

  /** The database once it is running again after a start (the reconciler sees its container), or null. */
  private async runningDatabase(databaseId: string): Promise<DatabaseRow | null> {
    const deadline = Date.now() + RECOVERY_WAIT_MS;
    for (;;) {
      const database = this.service.db.select().from(databases).where(eq(databases.id, databaseId)).get();
      if (!database) return null;
      if (database.status === "running") return database;
      if (Date.now() > deadline) return null;
      await Bun.sleep(1000);
    }
  }
}

/**
 * How long a load may run in all: the idle time (its last statement may run that long without a
 * byte moving) plus PLATFORM_BACKUP_LOAD_SECONDS_PER_MB for each MiB of the backup file. A "dump"
 * that keeps the client printing a line a second (a loop of RAISE NOTICE) passes neither the idle
 * nor the output bound, and would otherwise hold the database (or a verify's container) for days.
 */
function loadDeadlineSeconds(target: DatabaseTarget, backup: Pick<BackupRow, "sizeBytes">): number {
  const { idleTimeoutSeconds, loadSecondsPerMB } = target.config.backups;
  return Math.ceil(idleTimeoutSeconds + (backup.sizeBytes / MIB) * loadSecondsPerMB);
}

/** `opening`, then the dump, then `closing`: nothing of `closing` is sent unless the whole dump was. */
function wrapped(dump: ReadableStream<Uint8Array>, opening: string, closing: string): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const reader = dump.getReader();
  let opened = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!opened) {
        opened = true;
        if (opening) {
          controller.enqueue(encoder.encode(opening));
          return;
        }
      }
      const { value, done } = await reader.read();
      if (done) {
        if (closing) controller.enqueue(encoder.encode(closing));
        controller.close();
        return;
      }
      controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
