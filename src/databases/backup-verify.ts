// Verifying a backup: its file checked (checksum, whole gzip), then restored into a throwaway
// container of the database's image and counted (rows per table, documents per collection, keys
// for Redis). The result is recorded on the backup (`verification`, and `verifiedAt` when it
// passed) and the run is a `verify` operation in the database's history.
//
// The throwaway container never touches the database: it has its own random password, its own
// labelled volumes, no published port and no network at all (the engine's commands reach it on
// its own loopback), and it is removed with its volumes whatever happens. One verify runs per
// database at a time: each is a whole copy of the data with the database's memory.
import { inArray, sql } from "drizzle-orm";
import { databaseBackups } from "../db/schema";
import { randomBase62 } from "../crypto/tokens";
import { redact } from "../crypto/redact";
import { ApiError } from "../http/errors";
import { LABEL_MANAGED, LABEL_WORKSPACE, type ContainerSpec } from "../docker/container-spec";
import type { DockerDriver } from "../docker/driver";
import type { ContainerOwner } from "../machines/reconciler";
import { ENGINES } from "./engines";
import type { InventoryCount } from "./engines/types";
import { SYSTEM_ACTOR, type OperationActor } from "./operations";
import { containerSpecOf, problemOf, waitUntilReady, writeConfigFiles, type DatabaseRow, type DatabaseTarget } from "./runtime";
import type { BackupRow, BackupVerification, BackupView, DatabaseBackups } from "./backups";
import type { DatabaseRestores } from "./backup-restore";

/** Marks a verify's throwaway container and volumes; its value is the backup's id. */
export const LABEL_VERIFY = "platform.verify";
export const INTERRUPTED_VERIFY = "interrupted: the platform stopped while this verify ran; verify the backup again";

/** As for a new database: the first start of an engine initialises its data dir. */
const READY_TIMEOUT_MS = 180_000;
/** Exact counts read every row once: a large copy takes a while, a hung engine must not hold the verify forever. */
const COUNT_TIMEOUT_MS = 30 * 60_000;
const PASSWORD_LENGTH = 32;
/** Every volume suffix any engine uses, so a leftover can be removed without knowing its engine. */
const VOLUME_SUFFIXES = [...new Set(Object.values(ENGINES).flatMap((definition) => definition.volumes(definition.defaultVersion).map((mount) => mount.suffix)))];

export function verifyContainerNameOf(backupId: string): string {
  return `platform-verify-${backupId}`;
}

function verifyVolumeNameOf(backupId: string, suffix: string): string {
  return `${verifyContainerNameOf(backupId)}-data${suffix}`;
}

/**
 * The throwaway container of a verify: the database's own image, environment, command, memory,
 * CPUs and capabilities (with `target`'s fresh credentials), but its own name, labels and
 * volumes, no port, no network, and no restart.
 */
export function verifySpecOf(target: Omit<DatabaseTarget, "driver">, backupId: string): ContainerSpec {
  const spec = containerSpecOf(target);
  return {
    ...spec,
    name: verifyContainerNameOf(backupId),
    labels: { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: target.row.workspaceId, [LABEL_VERIFY]: backupId },
    network: { name: "none", aliases: [] },
    publish: undefined,
    volumes: target.definition.volumes(target.row.version).map((mount) => ({ volumeName: verifyVolumeNameOf(backupId, mount.suffix), containerPath: mount.containerPath })),
    restartPolicy: "no",
  };
}

/** The container and volumes of a backup's verify, gone (missing ones count as removed). */
async function removeThrowaway(driver: DockerDriver, backupId: string) {
  await driver.removeContainer(verifyContainerNameOf(backupId));
  for (const suffix of VOLUME_SUFFIXES) await driver.removeVolume(verifyVolumeNameOf(backupId, suffix));
}

/** Runs `work` unless the verify was preempted; its error says which step of the verify failed. */
async function step<T>(what: string, signal: AbortSignal, work: () => Promise<T>): Promise<T> {
  try {
    signal.throwIfAborted();
    return await work();
  } catch (error) {
    throw new Error(`${what}: ${(error as Error).message || String(error)}`);
  }
}

/** What the engine in the container holds, counted by its inventory command. */
async function countsOf(target: DatabaseTarget, containerId: string): Promise<InventoryCount[]> {
  const command = target.definition.inventory(target.credentials);
  const stdin = command.stdin === undefined ? undefined : new TextEncoder().encode(command.stdin);
  const result = await target.driver.exec(containerId, { command: command.argv, env: command.env, stdin, timeoutMs: COUNT_TIMEOUT_MS });
  if (result.exitCode !== 0) throw new Error(problemOf({ ok: false, ...result }));
  return target.definition.parseInventory(result.stdout);
}

export interface VerifyStart {
  backup: BackupView;
  operationId: string;
  /** The backup once the verify has ended (passed or failed); never rejects. */
  done: Promise<BackupView>;
}

export class BackupVerifier {
  /** Database id -> the backup being verified and the verify's end. */
  private readonly running = new Map<string, { backupId: string; done: Promise<BackupView> }>();

  constructor(
    private readonly backups: DatabaseBackups,
    private readonly restores: DatabaseRestores,
  ) {}

  private get service() {
    return this.backups.service;
  }

  /** Starts a verify of a completed backup (POST .../verify); it runs in the background. */
  start(workspaceId: string, databaseId: string, backupId: string, actor: OperationActor): VerifyStart {
    const database = this.service.find(workspaceId, databaseId);
    return this.begin(database, this.backups.row(workspaceId, databaseId, backupId), actor);
  }

  /**
   * Verifies a backup once the verify of the database running now (if any) has ended, and
   * resolves with the backup as it ended (schedules with `verify` set). Never rejects: a verify
   * that cannot begin (another operation holds the database) is recorded as failed with the reason.
   */
  async verify(database: DatabaseRow, backup: BackupView, actor: OperationActor = SYSTEM_ACTOR): Promise<BackupView> {
    for (let current = this.running.get(database.id); current; current = this.running.get(database.id)) await current.done;
    try {
      const row = this.backups.row(database.workspaceId, database.id, backup.id);
      return await this.begin(this.service.reload(database), row, actor).done;
    } catch (error) {
      const now = this.isoNow();
      this.record(backup.id, { status: "failed", checks: [], error: `the verify could not begin: ${(error as Error).message}`, startedAt: now, finishedAt: now });
      return this.viewOr(backup);
    }
  }

  private begin(database: DatabaseRow, row: BackupRow, actor: OperationActor): VerifyStart {
    if (row.status !== "completed") throw new ApiError("BACKUP_NOT_READY", `The backup is ${row.status}; only a completed backup can be verified`);
    const current = this.running.get(database.id);
    if (current) {
      throw new ApiError("VERIFY_IN_PROGRESS", `A verify of this database's backup ${current.backupId} is running; try again when it has finished`);
    }
    const operation = this.service.operations.begin(database, "verify", actor, { exclusive: false, backupId: row.id });
    const startedAt = this.isoNow();
    this.record(row.id, { status: "running", checks: [], error: null, startedAt, finishedAt: null });
    const started = this.backups.viewOf(row.id);
    const done = operation
      .run(() => this.check(database, row, startedAt, operation.signal))
      .catch(() => {
        // Recorded on the backup and its operation.
      })
      .finally(() => {
        if (this.running.get(database.id)?.backupId === row.id) this.running.delete(database.id);
      })
      .then(() => this.viewOr(started));
    this.running.set(database.id, { backupId: row.id, done });
    this.service.track(done);
    return { backup: started, operationId: operation.id, done };
  }

  /** The verify itself: records its result on the backup, and throws (failing the operation) when it failed. */
  private async check(database: DatabaseRow, row: BackupRow, startedAt: string, signal: AbortSignal) {
    try {
      const checks = await this.restoreAndCount(database, row, signal);
      this.record(row.id, { status: "passed", checks, error: null, startedAt, finishedAt: this.isoNow() }, this.service.now());
    } catch (error) {
      const reason = (error as Error).message || String(error);
      this.record(row.id, { status: "failed", checks: [], error: reason, startedAt, finishedAt: this.isoNow() });
      throw new Error(reason);
    }
  }

  /**
   * Preempted (`signal`, a delete of the database), the throwaway copy is removed at once, which
   * ends the step in progress; the next one is not taken.
   */
  private async restoreAndCount(database: DatabaseRow, row: BackupRow, signal: AbortSignal): Promise<InventoryCount[]> {
    const definition = this.service.definitionOf(database);
    if (row.engine !== database.engine || row.format !== definition.dumpFormat) {
      throw new Error(`the backup is a ${row.engine} ${row.format} dump; this database is ${database.engine}`);
    }
    await this.backups.ensureLocalFile(row);
    const problem = await this.backups.storage.problemWith(row.storageKey, row.sizeBytes, row.sha256);
    if (problem) throw new Error(`the backup cannot be trusted: ${problem}`);
    const credentials = { username: database.username, password: randomBase62(PASSWORD_LENGTH), databaseName: database.databaseName };
    const target = this.service.targetOf(database, credentials);
    const spec = verifySpecOf(target, row.id);
    let removedEarly: Promise<void> | undefined;
    const removeNow = () => void (removedEarly = removeThrowaway(target.driver, row.id).catch(() => undefined));
    signal.addEventListener("abort", removeNow, { once: true });
    try {
      await step("the throwaway copy could not be made", signal, async () => {
        await removeThrowaway(target.driver, row.id); // a leftover of an earlier run would hold the name
        await target.driver.ensureImage(spec.image);
        for (const volume of spec.volumes ?? []) await target.driver.createVolume(volume.volumeName, spec.labels);
        await target.driver.createContainer(spec);
        await writeConfigFiles(target, spec.name);
        await target.driver.startContainer(spec.name);
      });
      await step("the throwaway copy did not come up", signal, () => waitUntilReady(target, spec.name, READY_TIMEOUT_MS, signal));
      await step("loading the backup failed", signal, () => this.restores.loadInto(target, spec.name, row));
      return await step("counting what the restored copy holds failed", signal, () => countsOf(target, spec.name));
    } catch (error) {
      throw new Error(redact((error as Error).message, [credentials.password]));
    } finally {
      signal.removeEventListener("abort", removeNow);
      // Again after an early removal: a step it raced may have made something since.
      await removedEarly;
      await removeThrowaway(target.driver, row.id).catch((error: Error) => {
        console.warn(`[verify] could not remove ${spec.name} (removed at the next start): ${error.message}`);
      });
    }
  }

  /**
   * At start: verifies a stop or crash cut off are failed, and their throwaway containers and
   * volumes removed (their operations were already failed as interrupted).
   */
  async recoverInterrupted() {
    const interrupted = this.service.db
      .select()
      .from(databaseBackups)
      .where(sql`json_extract(${databaseBackups.verification}, '$.status') = 'running'`)
      .all();
    for (const row of interrupted) {
      const verification = JSON.parse(row.verification!) as BackupVerification;
      this.record(row.id, { ...verification, status: "failed", error: INTERRUPTED_VERIFY, finishedAt: this.isoNow() });
    }
    for (const machineId of this.service.machines.ids()) {
      const driver = this.service.machines.get(machineId);
      try {
        const listed = (await driver.listContainers({ [LABEL_MANAGED]: "true" })).flatMap((container) => container.labels[LABEL_VERIFY] ?? []);
        const leftovers = new Set([...interrupted.map((row) => row.id), ...this.knownBackups(listed)]);
        for (const backupId of leftovers) if (!this.isVerifying(backupId)) await removeThrowaway(driver, backupId);
      } catch (error) {
        console.warn(`[verify] leftover verify containers on ${machineId} could not be removed: ${(error as Error).message}`);
      }
    }
  }

  /** For the reconciler: the verify containers of verifies running now are known, any other is a leftover. */
  containerOwner(): ContainerOwner {
    return {
      label: LABEL_VERIFY,
      sync: (containers) => new Set(containers.map((container) => container.labels[LABEL_VERIFY]!).filter((backupId) => this.isVerifying(backupId))),
    };
  }

  /** Of these backup ids, those of this platform's backups: an engine may be shared, and others' verifies are theirs. */
  private knownBackups(backupIds: string[]): string[] {
    if (backupIds.length === 0) return [];
    return this.service.db.select({ id: databaseBackups.id }).from(databaseBackups).where(inArray(databaseBackups.id, backupIds)).all().map((row) => row.id);
  }

  private isVerifying(backupId: string): boolean {
    return [...this.running.values()].some((current) => current.backupId === backupId);
  }

  /** Writes the verification on the backup (a deleted backup is left alone); `verifiedAt` only when it passed. */
  private record(backupId: string, verification: BackupVerification, verifiedAt?: number) {
    this.backups.finish(backupId, { verification: JSON.stringify(verification), ...(verifiedAt === undefined ? {} : { verifiedAt }) }, { finished: false });
  }

  /** The backup as it is now, or as `fallback` says when it was deleted meanwhile. */
  private viewOr(fallback: BackupView): BackupView {
    try {
      return this.backups.viewOf(fallback.id);
    } catch {
      return fallback;
    }
  }

  private isoNow(): string {
    return new Date(this.service.now()).toISOString();
  }
}
