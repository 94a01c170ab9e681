// Database backups: the engine's own dump tool run inside the database's container (by argv, never
// through a shell), streamed through gzip to a file with its SHA-256 (./backup-storage.ts), and
// listed only as `completed` when the tool exited 0 and its output is a whole dump of that engine
// (its header and end marker, ./engines). Anything else is `failed` with the reason. A backup runs
// in the background: POST answers at once with the backup `running`, like the other long
// operations, and it is in the database's operations history.
//
// A backup does not claim the database the way start or stop do: the database stays usable, and a
// stop while a dump runs makes that backup fail, not the stop wait.
import { and, desc, eq, sql } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import { databaseBackups } from "../db/schema";
import { newId } from "../crypto/tokens";
import { redact } from "../crypto/redact";
import { ApiError, notFound } from "../http/errors";
import { resolveImage } from "./engines";
import type { BackupSchema, BackupStatus, BackupType } from "./model";
import type { OperationActor } from "./operations";
import { containerNameOf, writeConfigFiles, type DatabaseRow } from "./runtime";
import type { BackupStorage } from "./backup-storage";
import type { DatabaseService } from "./service";


type BackupRow = typeof databaseBackups.$inferSelect;
const INTERRUPTED_BACKUP = "interrupted: the platform stopped while this backup ran";

function backupView(row: BackupRow): Static<typeof BackupSchema> {
  return {
    id: row.id,
    databaseId: row.databaseId,
    type: row.type as BackupType,
    status: row.status as BackupStatus,
    storageKey: row.storageKey,
    sizeBytes: row.sizeBytes,
    sha256: row.sha256,
    format: row.format as Static<typeof BackupSchema>["format"],
    engine: row.engine as Static<typeof BackupSchema>["engine"],
    engineVersion: row.engineVersion,
    error: row.error,
    verifiedAt: row.verifiedAt === null ? null : new Date(row.verifiedAt).toISOString(),
    createdAt: new Date(row.createdAt).toISOString(),
    finishedAt: row.finishedAt === null ? null : new Date(row.finishedAt).toISOString(),
  };
}

export class DatabaseBackups {
  constructor(
    private readonly service: DatabaseService,
    private readonly storage: BackupStorage,
  ) {}

  /** At start: backups cut off by a stop or crash are failed, and their partial files removed. */
  async closeInterrupted() {
    this.service.db
      .update(databaseBackups)
      .set({ status: "failed", error: INTERRUPTED_BACKUP, finishedAt: this.service.now() })
      .where(eq(databaseBackups.status, "running"))
      .run();
    await this.storage.removePartials();
  }

  list(workspaceId: string, databaseId: string) {
    this.service.find(workspaceId, databaseId);
    return this.service.db
      .select()
      .from(databaseBackups)
      .where(eq(databaseBackups.databaseId, databaseId))
      .orderBy(desc(databaseBackups.createdAt), desc(sql`rowid`))
      .all()
      .map(backupView);
  }

  private row(workspaceId: string, databaseId: string, backupId: string): BackupRow {
    this.service.find(workspaceId, databaseId);
    const row = this.service.db
      .select()
      .from(databaseBackups)
      .where(and(eq(databaseBackups.id, backupId), eq(databaseBackups.databaseId, databaseId)))
      .get();
    if (!row) throw notFound("Backup");
    return row;
  }

  get(workspaceId: string, databaseId: string, backupId: string) {
    return backupView(this.row(workspaceId, databaseId, backupId));
  }

  /** Starts a backup of a running database; it is `running` until its file is whole and checked. */
  start(workspaceId: string, databaseId: string, type: BackupType, actor: OperationActor) {
    const database = this.service.find(workspaceId, databaseId);
    if (database.status !== "running") throw new ApiError("NOT_RUNNING", `The database is ${database.status}; a backup is made by the running engine, so start it first`);
    const running = this.service.db
      .select({ id: databaseBackups.id })
      .from(databaseBackups)
      .where(and(eq(databaseBackups.databaseId, databaseId), eq(databaseBackups.status, "running")))
      .get();
    if (running) throw new ApiError("BACKUP_IN_PROGRESS", `A backup of this database is already running (${running.id}); try again when it has finished`);
    // The operation first: while another one holds the database (409 BUSY), no backup row is made.
    const operation = this.service.operations.begin(database, "backup", actor, { exclusive: false });
    const row = this.newRow(database, type);
    this.service.track(
      operation
        .run(() => this.dump(database, row))
        .catch(() => {
          // Recorded on the backup and its operation.
        }),
    );
    return backupView(row);
  }

  /** A new backup of the database, `running`, written to the table. */
  private newRow(database: DatabaseRow, type: BackupType): BackupRow {
    const definition = this.service.definitionOf(database);
    const id = newId("bk");
    const row: BackupRow = {
      id,
      databaseId: database.id,
      workspaceId: database.workspaceId,
      type,
      status: "running",
      storageKey: this.storage.keyOf(database.id, id, definition.dumpFormat),
      sizeBytes: 0,
      sha256: null,
      engine: database.engine,
      engineVersion: resolveImage(this.service.config.images[database.engine], definition, database.version),
      format: definition.dumpFormat,
      error: null,
      verifiedAt: null,
      createdAt: this.service.now(),
      finishedAt: null,
    };
    this.service.db.insert(databaseBackups).values(row).run();
    return row;
  }

  /**
   * Puts a completed backup of this database back. Checked first, before anything is touched: its
   * file must be whole and its checksum the one recorded (422 BACKUP_CORRUPT otherwise). Then, in
   * the background as a `restore` operation: a `pre-restore` backup, and the dump fed to the
   * engine's own client. When loading fails, the pre-restore backup is loaded back, so the
   * database is never left half restored; the operation says what happened.
   */
  async restore(workspaceId: string, databaseId: string, backupId: string, actor: OperationActor) {
    const database = this.service.find(workspaceId, databaseId);
    const backup = this.row(workspaceId, databaseId, backupId);
    if (backup.status !== "completed") throw new ApiError("BACKUP_NOT_READY", `The backup is ${backup.status}; only a completed backup can be restored`);
    if (database.status !== "running") throw new ApiError("NOT_RUNNING", `The database is ${database.status}; a restore is loaded by the running engine, so start it first`);
    const definition = this.service.definitionOf(database);
    const plan = definition.restore({ credentials: this.service.credentialsOf(database), version: database.version, memoryMB: database.memoryMB });
    if (plan.mode !== "stream") {
      throw new ApiError("RESTORE_UNSUPPORTED", `${definition.title} backups cannot be restored through the API yet: download the file and load it with the engine's own tools`);
    }
    if (backup.engine !== database.engine || backup.format !== definition.dumpFormat) {
      throw new ApiError("BACKUP_CORRUPT", `The backup is a ${backup.engine} ${backup.format} dump; this database is ${database.engine}`);
    }
    const problem = await this.storage.problemWith(backup.storageKey, backup.sha256);
    if (problem) throw new ApiError("BACKUP_CORRUPT", `The backup cannot be restored: ${problem}. Nothing was changed`);
    const operation = this.service.operations.begin(database, "restore", actor);
    this.service.track(
      operation
        .run(async () => {
          const before = this.newRow(database, "pre-restore");
          await this.dump(database, before);
          try {
            await this.load(database, backup);
          } catch (error) {
            const reason = (error as Error).message;
            try {
              await this.load(database, before);
            } catch (rollback) {
              throw new Error(`${reason}; loading the pre-restore backup ${before.id} back failed too: ${(rollback as Error).message}`);
            }
            throw new Error(`${reason}; the database was put back as it was, from the pre-restore backup ${before.id}`);
          }
        })
        .catch(() => {
          // Recorded on the operation.
        }),
    );
    return { database: this.service.view(database, { masked: false }), operationId: operation.id };
  }

  /** Feeds the backup's dump to the engine's restore client; throws with the client's reason when it fails. */
  private async load(database: DatabaseRow, backup: BackupRow) {
    const target = this.service.targetOf(database);
    const plan = target.definition.restore({ credentials: target.credentials, version: database.version, memoryMB: database.memoryMB });
    if (plan.mode !== "stream") throw new Error(`${target.definition.title} cannot be restored from a stream`);
    const command = plan.command;
    const containerId = containerNameOf(database.id);
    const files = Object.keys(command.files ?? {});
    try {
      if (command.files) await writeConfigFiles(target, containerId, command.files);
      const exec = await target.driver.execStream(containerId, { command: command.argv, env: command.env, stdin: this.storage.dumpOf(backup.storageKey) });
      const [, result] = await Promise.all([new Response(exec.stdout).arrayBuffer(), exec.done]);
      if (result.exitCode !== 0) {
        throw new Error(redact(`${command.argv[0]} exited with ${result.exitCode}: ${lastLine(result.stderr) || "no message"}`, [target.credentials.password]));
      }
    } finally {
      if (files.length) await target.driver.exec(containerId, { command: ["rm", "-f", ...files] }).catch(() => undefined);
    }
  }

  private async dump(database: DatabaseRow, row: BackupRow) {
    const target = this.service.targetOf(database);
    const secrets = [target.credentials.password];
    const command = target.definition.dump(target.credentials);
    const containerId = containerNameOf(database.id);
    const files = [...Object.keys(command.files ?? {}), ...(command.outputFile ? [command.outputFile] : [])];
    try {
      if (command.files) await writeConfigFiles(target, containerId, command.files);
      let exec = await target.driver.execStream(containerId, { command: command.argv, env: command.env });
      if (command.outputFile) {
        // The tool writes a file in the container: once it is done, the file is what is read out.
        const [, made] = await Promise.all([new Response(exec.stdout).arrayBuffer(), exec.done]);
        if (made.exitCode !== 0) throw new Error(`${command.argv[0]} exited with ${made.exitCode}: ${lastLine(made.stderr) || "no message"}`);
        exec = await target.driver.execStream(containerId, { command: ["cat", command.outputFile] });
      }
      const [stored, result] = await Promise.all([this.storage.write(row.storageKey, exec.stdout), exec.done]);
      const problem =
        result.exitCode !== 0
          ? `${command.argv[0]} exited with ${result.exitCode}: ${lastLine(result.stderr) || "no message"}`
          : target.definition.dumpProblem(stored.dump);
      if (problem) {
        await this.storage.remove(row.storageKey);
        throw new Error(problem);
      }
      this.finish(row.id, { status: "completed", sizeBytes: stored.sizeBytes, sha256: stored.sha256 });
    } catch (error) {
      const reason = redact((error as Error).message || String(error), secrets);
      this.finish(row.id, { status: "failed", error: reason });
      throw new Error(reason);
    } finally {
      if (files.length) await target.driver.exec(containerId, { command: ["rm", "-f", ...files] }).catch(() => undefined);
    }
  }

  private finish(backupId: string, changes: Partial<BackupRow>) {
    this.service.db
      .update(databaseBackups)
      .set({ ...changes, finishedAt: this.service.now() })
      .where(eq(databaseBackups.id, backupId))
      .run();
  }

  /** The file of a completed backup, whole or one byte range; 409 while it is not. */
  download(workspaceId: string, databaseId: string, backupId: string, range: string | null): Response {
    const row = this.row(workspaceId, databaseId, backupId);
    if (row.status !== "completed") throw new ApiError("BACKUP_NOT_READY", `The backup is ${row.status}; only a completed backup can be downloaded`);
    const database = this.service.find(workspaceId, databaseId);
    const stamp = new Date(row.createdAt).toISOString().replace(/[:.]/g, "-");
    const filename = `${database.name}-${stamp}.${row.format}.gz`;
    const response = this.storage.download(row.storageKey, row.sizeBytes, filename, range);
    if (!response) throw new ApiError("RANGE_NOT_SATISFIABLE", `The range ${JSON.stringify(range)} is not within the file's ${row.sizeBytes} bytes`, { "content-range": `bytes */${row.sizeBytes}` });
    return response;
  }

  /** A deleted database's backups go with it, unless kept (their files then stay under the data dir). */
  async forgetDatabase(databaseId: string, keepFiles: boolean) {
    this.service.db.delete(databaseBackups).where(eq(databaseBackups.databaseId, databaseId)).run();
    if (!keepFiles) await this.storage.removeDatabase(databaseId);
  }
}

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1)?.slice(0, 300) ?? "";
}
