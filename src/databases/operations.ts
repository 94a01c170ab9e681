// The operations history of databases and the rule that one database runs one operation at a
// time. Every operation is a database_operations row (pending -> running -> succeeded | failed,
// with the error text, the actor and its times); while it runs, the database is held in memory
// and a second operation gets 409 BUSY, except a delete, which preempts whatever runs. The platform is one process, so an in-memory hold is the
// whole truth; rows left pending or running by a crash are closed as failed at the next start.
import { and, desc, eq, inArray, sql } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { databaseOperations } from "../db/schema";
import { newId } from "../crypto/tokens";
import { ApiError } from "../http/errors";
import type { Static } from "@sinclair/typebox";
import type { OperationActorSchema, OperationSchema, OperationStatus, OperationType } from "./model";

export interface OperationActor {
  type: string;
  id: string | null;
}

/** The platform itself: schedules, and the clean-up of work a crash cut off. */
export const SYSTEM_ACTOR: OperationActor = { type: "system", id: null };

function operationView(row: typeof databaseOperations.$inferSelect): Static<typeof OperationSchema> {
  return {
    id: row.id,
    databaseId: row.databaseId,
    type: row.type as Static<typeof OperationSchema>["type"],
    status: row.status as OperationStatus,
    error: row.error,
    actor: { type: row.actorType as Static<typeof OperationActorSchema>["type"], id: row.actorId },
    backupId: row.backupId,
    startedAt: new Date(row.startedAt).toISOString(),
    finishedAt: row.finishedAt === null ? null : new Date(row.finishedAt).toISOString(),
  };
}

export const INTERRUPTED = "interrupted: the platform stopped while this operation ran";

export class Operation {
  private readonly controller = new AbortController();
  /** Aborted (with the reason as an Error) when a delete of the database preempts this operation. */
  readonly signal = this.controller.signal;
  private settle!: () => void;
  /** Resolves once the operation has ended (run to its end, or released without running). */
  readonly ended = new Promise<void>((resolve) => (this.settle = resolve));
  private finished = false;

  constructor(
    readonly id: string,
    readonly type: OperationType,
    private readonly operations: Operations,
    private readonly databaseId: string,
  ) {}

  preempt(reason: string) {
    this.controller.abort(new Error(reason));
  }

  /** Runs the work as this operation: marks it running, then succeeded or failed, and frees the database. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    this.operations.mark(this.id, "running");
    try {
      const result = await work();
      this.operations.mark(this.id, "succeeded");
      return result;
    } catch (error) {
      this.operations.mark(this.id, "failed", (error as Error).message || String(error));
      throw error;
    } finally {
      this.release();
    }
  }

  /** Records the backup this operation is about, once it exists. */
  concerns(backupId: string) {
    this.operations.setBackup(this.id, backupId);
  }

  /** Frees the database without running (the work could not even start). */
  release() {
    if (this.finished) return;
    this.finished = true;
    this.operations.release(this.databaseId, this);
    this.settle();
  }
}

export class Operations {
  private readonly held = new Map<string, { operationId: string; type: OperationType }>();
  /** Database id -> its operations that have not ended, exclusive or not. */
  private readonly unfinished = new Map<string, Set<Operation>>();

  constructor(
    private readonly db: PlatformDb,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Claims the database for one operation (409 BUSY while another one runs) and records it as
   * pending. `exclusive: false` (a backup) records it without claiming the database, though not
   * while another operation holds it. `backupId`: the backup it is about, when known up front.
   */
  begin(
    database: { id: string; workspaceId: string },
    type: OperationType,
    actor: OperationActor,
    options: { exclusive?: boolean; backupId?: string } = {},
  ): Operation {
    const current = this.held.get(database.id);
    if (current) {
      throw new ApiError("BUSY", `The database is busy with a '${current.type}' operation (${current.operationId}); try again when it has finished`);
    }
    const id = newId("op");
    if (options.exclusive !== false) this.held.set(database.id, { operationId: id, type });
    try {
      this.db
        .insert(databaseOperations)
        .values({
          id,
          databaseId: database.id,
          workspaceId: database.workspaceId,
          type,
          status: "pending",
          actorType: actor.type,
          actorId: actor.id,
          backupId: options.backupId ?? null,
          startedAt: this.now(),
        })
        .run();
    } catch (error) {
      this.held.delete(database.id);
      throw error;
    }
    const operation = new Operation(id, type, this, database.id);
    const unfinished = this.unfinished.get(database.id) ?? new Set();
    this.unfinished.set(database.id, unfinished.add(operation));
    return operation;
  }

  /**
   * Claims the database for `type` even while other operations run (a delete): each of them is
   * preempted (its signal aborted with `reason`) and `preempted` resolves once all have ended.
   * Refused with 409 BUSY only while another operation of the same type holds it.
   */
  takeOver(database: { id: string; workspaceId: string }, type: OperationType, actor: OperationActor, reason: string) {
    const current = this.held.get(database.id);
    if (current?.type === type) {
      throw new ApiError("BUSY", `The database is busy with a '${current.type}' operation (${current.operationId}); try again when it has finished`);
    }
    const running = [...(this.unfinished.get(database.id) ?? [])];
    for (const operation of running) operation.preempt(reason);
    this.held.delete(database.id);
    const operation = this.begin(database, type, actor);
    return { operation, preempted: Promise.all(running.map((preempted) => preempted.ended)).then(() => running.length) };
  }

  isBusy(databaseId: string): boolean {
    return this.held.has(databaseId);
  }

  mark(operationId: string, status: OperationStatus, error: string | null = null) {
    const done = status === "succeeded" || status === "failed";
    // The row is gone when its database was deleted (the history goes with it).
    this.db
      .update(databaseOperations)
      .set({ status, error, ...(done ? { finishedAt: this.now() } : {}) })
      .where(eq(databaseOperations.id, operationId))
      .run();
  }

  setBackup(operationId: string, backupId: string) {
    this.db.update(databaseOperations).set({ backupId }).where(eq(databaseOperations.id, operationId)).run();
  }

  /** Operations of `type` that a stop or crash cut off and that nobody has dealt with since. */
  interrupted(type: OperationType) {
    return this.db
      .select()
      .from(databaseOperations)
      .where(and(eq(databaseOperations.type, type), eq(databaseOperations.status, "failed"), eq(databaseOperations.error, INTERRUPTED)))
      .all();
  }

  /** Replaces the reason an operation failed (once what it left behind was dealt with). */
  explain(operationId: string, error: string) {
    this.db.update(databaseOperations).set({ error }).where(eq(databaseOperations.id, operationId)).run();
  }

  release(databaseId: string, operation: Operation) {
    if (this.held.get(databaseId)?.operationId === operation.id) this.held.delete(databaseId);
    const unfinished = this.unfinished.get(databaseId);
    unfinished?.delete(operation);
    if (unfinished?.size === 0) this.unfinished.delete(databaseId);
  }

  list(databaseId: string) {
    return this.db
      .select()
      .from(databaseOperations)
      .where(eq(databaseOperations.databaseId, databaseId))
      .orderBy(desc(databaseOperations.startedAt), desc(sql`rowid`)) // rowid: insertion order within one millisecond
      .all()
      .map(operationView);
  }

  get(operationId: string) {
    const row = this.db.select().from(databaseOperations).where(eq(databaseOperations.id, operationId)).get();
    return row ? operationView(row) : null;
  }

  /** At start: nothing runs yet, so rows still pending or running were cut off by a stop or crash. */
  failInterrupted(): void {
    this.db
      .update(databaseOperations)
      .set({ status: "failed", error: INTERRUPTED, finishedAt: this.now() })
      .where(inArray(databaseOperations.status, ["pending", "running"]))
      .run();
  }
}
