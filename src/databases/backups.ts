// Database backups: the engine's own dump tool run inside the database's container (by argv, never
// through a shell), streamed through gzip to a file with its SHA-256 (../backups/storage.ts), and
// listed only as `completed` when the tool exited 0 and its output is a whole dump of that engine
// (its header and end marker, ./engines). Anything else is `failed` with the reason. A backup runs
// in the background: POST answers at once with the backup `running`, like the other long
// operations, and it is in the database's operations history.
//
// A backup does not claim the database the way start or stop do: the database stays usable, and a
// stop while a dump runs makes that backup fail, not the stop wait.
import { and, desc, eq, inArray, ne, sql } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import { databaseBackups } from "../db/schema";
import { newId } from "../crypto/tokens";
import { redact } from "../crypto/redact";
import { ApiError, notFound } from "../http/errors";
import { assertWithinQuota } from "../quotas/limits";
import { MIN_ENTRY_BYTES, type DiskWrite, type WorkspaceDisk } from "../quotas/usage";
import { resolveImage } from "./engines";
import type { BackupSchema, BackupStatus, BackupType, BackupVerificationSchema } from "./model";
import type { OperationActor } from "./operations";
import { containerNameOf, writeConfigFiles, type DatabaseRow } from "./runtime";
import type { BackupStorage } from "../backups/storage";
import type { BackupDestinations } from "../backups/model";
import { BackupFiles, copiesOf } from "../backups/files";
import { pauseForTest } from "../config/test-pause";
import type { DatabaseService } from "./service";

export type BackupRow = typeof databaseBackups.$inferSelect;
export type BackupView = Static<typeof BackupSchema>;
export type BackupVerification = Static<typeof BackupVerificationSchema>;
const INTERRUPTED_BACKUP = "interrupted: the platform stopped while this backup ran";
/** The backups PLATFORM_QUOTA_BACKUPS_PER_DATABASE caps: those a user asks for. Scheduled ones have their schedule's retention. */
const CAPPED_TYPES: BackupType[] = ["manual", "uploaded"];

export function backupView(row: BackupRow): BackupView {
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
    verification: row.verification === null ? null : (JSON.parse(row.verification) as BackupVerification),
    copies: copiesOf(row),
    createdAt: new Date(row.createdAt).toISOString(),
    finishedAt: row.finishedAt === null ? null : new Date(row.finishedAt).toISOString(),
  };
}

export class DatabaseBackups {
  private readonly files: BackupFiles;

  constructor(
    readonly service: DatabaseService,
    readonly storage: BackupStorage,
    readonly destinations: BackupDestinations | null,
    readonly disk: WorkspaceDisk,
  ) {
    this.files = new BackupFiles(storage, destinations);
    // A backup's file counts from the moment its size is recorded; failed ones keep no file.
    disk.register("backups", async (workspaceId) => {
      const total = service.db
        .select({ bytes: sql<number>`coalesce(sum(max(${databaseBackups.sizeBytes}, ${MIN_ENTRY_BYTES})), 0)` })
        .from(databaseBackups)
        .where(and(eq(databaseBackups.workspaceId, workspaceId), ne(databaseBackups.status, "failed")))
        .get();
      return total?.bytes ?? 0;
    });
  }

  /**
   * At start, before anything is served: backups cut off by a stop or crash are closed. One whose
   * file was finished, checked and recorded (size and SHA-256) before it took its name is finished
   * from that file once it is found to match; any other is failed. A failed backup keeps no file,
   * and partial files are removed. The promise settles once the recorded ones are checked; their
   * copies to remote destinations (retries, stall timeouts) go on in the background.
   */
  async closeInterrupted(): Promise<void> {
    const cut = this.service.db.select().from(databaseBackups).where(eq(databaseBackups.status, "running")).all();
    const unrecorded = cut.filter((row) => row.sha256 === null).map((row) => row.id);
    if (unrecorded.length) {
      this.service.db
        .update(databaseBackups)
        .set({ status: "failed", error: INTERRUPTED_BACKUP, finishedAt: this.service.now() })
        .where(inArray(databaseBackups.id, unrecorded))
        .run();
    }
    this.storage.removePartials();
    return this.settleInterrupted(cut.filter((row) => row.sha256 !== null));
  }

  private async settleInterrupted(recorded: BackupRow[]) {
    const completions: Promise<void>[] = [];
    for (const row of recorded) {
      const problem = await this.storage.problemWith(row.storageKey, row.sizeBytes, row.sha256).catch((error: Error) => error.message);
      if (problem) {
        this.finish(row.id, { status: "failed", error: `${INTERRUPTED_BACKUP}, and ${problem}` });
        continue;
      }
      completions.push(
        this.completeStored(row, row.sizeBytes, row.sha256!)
          .catch((error: Error) => this.finish(row.id, { status: "failed", error: error.message }))
          .catch((error) => console.error(`[backups] the interrupted backup ${row.id} could not be closed:`, error)),
      );
    }
    // Files of failed backups go once every copy has settled: a failed copy fails its backup.
    this.service.track(Promise.all(completions).then(() => this.removeFailedFiles()));
  }

  private async removeFailedFiles() {
    const failed = this.service.db.select({ storageKey: databaseBackups.storageKey }).from(databaseBackups).where(eq(databaseBackups.status, "failed")).all();
    for (const row of failed) await this.storage.remove(row.storageKey).catch(() => undefined);
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

  row(workspaceId: string, databaseId: string, backupId: string): BackupRow {
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

  /** Room on the workspace's disk for a new backup's file, counted as it is written (409 QUOTA_EXCEEDED when there is none left). */
  roomFor(database: DatabaseRow): Promise<DiskWrite> {
    return this.disk.openWrite(database.workspaceId, this.service.config.quotas.diskMB);
  }

  /**
   * 409 QUOTA_EXCEEDED when the database holds PLATFORM_QUOTA_BACKUPS_PER_DATABASE backups of a
   * type the user asks for. Called with nothing awaited until the row is made, so two requests
   * cannot both pass it.
   */
  assertBelowCap(databaseId: string, type: BackupType) {
    if (!CAPPED_TYPES.includes(type)) return;
    const kept = this.service.db
      .select({ count: sql<number>`count(*)` })
      .from(databaseBackups)
      .where(and(eq(databaseBackups.databaseId, databaseId), inArray(databaseBackups.type, CAPPED_TYPES), ne(databaseBackups.status, "failed")))
      .get();
    assertWithinQuota("backupsPerDatabase", kept?.count ?? 0, 1, this.service.config.quotas.backupsPerDatabase);
  }

  /** Starts a backup of a running database, once the quotas have room for it; it is `running` until its file is whole and checked. */
  async start(workspaceId: string, databaseId: string, type: BackupType, actor: OperationActor): Promise<BackupView> {
    const found = this.service.find(workspaceId, databaseId);
    this.assertRunning(found);
    this.assertBelowCap(found.id, type);
    const room = await this.roomFor(found);
    try {
      return this.begin(this.service.find(workspaceId, databaseId), type, actor, room).backup;
    } catch (error) {
      room.release();
      throw error;
    }
  }

  private assertRunning(database: DatabaseRow) {
    if (database.status !== "running") throw new ApiError("NOT_RUNNING", `The database is ${database.status}; a backup is made by the running engine, so start it first`);
  }

  /**
   * As start, with `done`: the backup as it ended (completed or failed; it never rejects). Without
   * `room` (a scheduled run), the room on the disk is asked for when the dump begins, and a
   * refusal fails the backup with the reason.
   */
  begin(database: DatabaseRow, type: BackupType, actor: OperationActor, room?: DiskWrite): { backup: BackupView; done: Promise<BackupView> } {
    this.assertRunning(database);
    this.assertBelowCap(database.id, type);
    const running = this.service.db
      .select({ id: databaseBackups.id })
      .from(databaseBackups)
      .where(and(eq(databaseBackups.databaseId, database.id), eq(databaseBackups.status, "running")))
      .get();
    if (running) throw new ApiError("BACKUP_IN_PROGRESS", `A backup of this database is already running (${running.id}); try again when it has finished`);
    // The operation first: while another one holds the database (409 BUSY), no backup row is made.
    const operation = this.service.operations.begin(database, "backup", actor, { exclusive: false });
    const row = this.newRow(database, type, operation.id);
    operation.concerns(row.id);
    const done = operation
      .run(() => this.dump(database, row, room ? async () => room : () => this.roomFor(database)))
      .catch(() => {
        // Recorded on the backup and its operation.
      })
      .then(() => this.viewOf(row.id));
    this.service.track(done);
    return { backup: backupView(row), done };
  }

  /** A backup that could not even begin (a schedule's run while the database was stopped), listed as `failed` with the reason. */
  recordFailure(database: DatabaseRow, type: BackupType, reason: string): BackupView {
    const row = this.newRow(database, type, null);
    this.finish(row.id, { status: "failed", error: reason });
    return this.viewOf(row.id);
  }

  /** The backup as it is now (as it was, for one deleted meanwhile). */
  viewOf(backupId: string): BackupView {
    const row = this.service.db.select().from(databaseBackups).where(eq(databaseBackups.id, backupId)).get();
    if (!row) throw notFound("Backup");
    return backupView(row);
  }

  /** A new backup of the database, `running`, written to the table. */
  newRow(database: DatabaseRow, type: BackupType, operationId: string | null): BackupRow {
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
      verification: null,
      copies: null,
      operationId,
      createdAt: this.service.now(),
      finishedAt: null,
    };
    this.service.db.insert(databaseBackups).values(row).run();
    return row;
  }

  /**
   * Makes the dump of a `running` backup row; throws (after recording it) when it fails. With
   * `openRoom`, its file counts against the workspace's disk quota as it is written, and the
   * backup fails once it would pass it.
   */
  async dump(database: DatabaseRow, row: BackupRow, openRoom?: () => Promise<DiskWrite>) {
    const target = this.service.targetOf(database);
    const secrets = [target.credentials.password];
    const command = target.definition.dump(target.credentials);
    const containerId = containerNameOf(database.id);
    const files = [...Object.keys(command.files ?? {}), ...(command.outputFile ? [command.outputFile] : [])];
    let room: DiskWrite | null = null;
    try {
      room = openRoom ? await openRoom() : null;
      if (command.files) await writeConfigFiles(target, containerId, command.files);
      const idleTimeoutMs = this.service.config.backups.idleTimeoutSeconds * 1000;
      let exec;
      if (command.outputFile) {
        // The tool writes a file in the container: once it is done, the file is what is read out.
        const made = await target.driver.exec(containerId, { command: command.argv, env: command.env, idleTimeoutMs, discardStdout: true });
        if (made.exitCode !== 0) throw new Error(`${command.argv[0]} exited with ${made.exitCode}: ${lastLine(made.stderr) || "no message"}`);
        if (command.outputCheck) {
          const checked = await target.driver.exec(containerId, { command: command.outputCheck, idleTimeoutMs });
          if (checked.exitCode !== 0) throw new Error(`${command.outputCheck[0]} rejected the snapshot: ${lastLine(checked.stdout) || lastLine(checked.stderr) || `exit code ${checked.exitCode}`}`);
        }
        exec = await target.driver.execStream(containerId, { command: ["cat", command.outputFile], idleTimeoutMs });
      } else {
        exec = await target.driver.execStream(containerId, { command: command.argv, env: command.env, idleTimeoutMs });
      }
      const ended = exec.done;
      // Awaited only once the file is written: a write that fails first must not leave it unheard.
      ended.catch(() => undefined);
      const stored = await this.storage.write(row.storageKey, exec.stdout, {
        onWrite: room?.add,
        accept: async (written) => {
          const result = await ended;
          const problem =
            result.exitCode !== 0
              ? `${command.argv[0]} exited with ${result.exitCode}: ${lastLine(result.stderr) || "no message"}`
              : target.definition.dumpProblem(written.dump);
          if (problem) throw new Error(problem);
          this.recordStored(row.id, written);
        },
      });
      await pauseForTest("backup.placed");
      await this.completeStored(row, stored.sizeBytes, stored.sha256);
    } catch (error) {
      // A refusal by the quota cancels the dump's stream, which the exec may then report first.
      const failure = room?.refusal ?? (error as Error);
      const reason = redact(failure.message || String(failure), secrets);
      this.finish(row.id, { status: "failed", error: reason });
      throw new Error(reason);
    } finally {
      room?.release();
      if (files.length) await target.driver.exec(containerId, { command: ["rm", "-f", ...files] }).catch(() => undefined);
    }
  }

  /**
   * The file of a backup is whole and checked locally: copied to every remote destination, then
   * `completed` (or `failed`, with what each destination answered, when one copy failed).
   */
  async completeStored(row: BackupRow, sizeBytes: number, sha256: string) {
    // A failed copy leaves the copies list on the row, which still says which destination failed.
    let copies: string | null = null;
    await this.files.copy(row.storageKey, sha256, (made) => {
      copies = made && JSON.stringify(made);
      if (copies) this.finish(row.id, { copies }, { finished: false });
    });
    this.finish(row.id, { status: "completed", ...(copies ? { copies } : {}) });
  }

  /** The size and SHA-256 of a running backup's finished file, recorded before the file takes its name. */
  recordStored(backupId: string, stored: { sizeBytes: number; sha256: string }) {
    this.finish(backupId, { sizeBytes: stored.sizeBytes, sha256: stored.sha256 }, { finished: false });
  }

  /** Updates a backup; `finishedAt` is set unless it goes on. */
  finish(backupId: string, changes: Partial<BackupRow>, options: { finished: boolean } = { finished: true }) {
    this.service.db
      .update(databaseBackups)
      .set({ ...changes, ...(options.finished ? { finishedAt: this.service.now() } : {}) })
      .where(eq(databaseBackups.id, backupId))
      .run();
  }

  /**
   * The local file of a completed backup, brought back from a remote copy when it is gone from
   * the data dir; 409 BACKUP_NOT_READY unless completed, 410 BACKUP_FILE_MISSING when no copy has it.
   */
  ensureLocalFile(row: BackupRow) {
    return this.files.ensureLocal(row);
  }

  /** The file of a completed backup, whole or one byte range; 409 while it is not. */
  async download(workspaceId: string, databaseId: string, backupId: string, range: string | null): Promise<Response> {
    const row = this.row(workspaceId, databaseId, backupId);
    const database = this.service.find(workspaceId, databaseId);
    const stamp = new Date(row.createdAt).toISOString().replace(/[:.]/g, "-");
    return this.files.download(row, `${database.name}-${stamp}.${row.format}.gz`, range);
  }

  /** Deletes a backup that is not running: its row, its file and its remote copies. */
  async delete(workspaceId: string, databaseId: string, backupId: string): Promise<BackupView> {
    const row = this.row(workspaceId, databaseId, backupId);
    if (row.status === "running") throw new ApiError("BACKUP_NOT_READY", "The backup is running; delete it once it has finished");
    await this.remove(row);
    return backupView(row);
  }

  /** Removes a backup's row, file and remote copies (retention, delete). */
  async remove(row: BackupRow) {
    this.service.db.delete(databaseBackups).where(eq(databaseBackups.id, row.id)).run();
    await this.files.remove(row);
  }

  rowsOf(databaseId: string): BackupRow[] {
    return this.service.db.select().from(databaseBackups).where(eq(databaseBackups.databaseId, databaseId)).all();
  }

  /**
   * A deleted database's backups (`rows`, read before it went) go with it, unless kept: their files
   * then stay under the data dir and in the bucket.
   */
  async forgetDatabase(databaseId: string, rows: BackupRow[], keepFiles: boolean) {
    this.service.db.delete(databaseBackups).where(eq(databaseBackups.databaseId, databaseId)).run();
    if (keepFiles) return;
    await this.storage.removeOwner(databaseId);
    for (const row of rows) if (this.destinations && row.copies) await this.destinations.remove(copiesOf(row));
  }
}

export function lastLine(text: string): string {
  return text.trim().split("\n").at(-1)?.slice(0, 300) ?? "";
}
