// Databases of a workspace: reading them (with the live status of their containers), and the
// operations that change them. Plain TypeScript with its dependencies passed in (SQLite, the
// machines' Docker drivers, the secret box, settings, a clock), so tests can hand it real ones.
// Long operations (create, start, rotate-password) answer at once and finish in the background;
// their progress is their row in the operations history, and the database's status.
import { and, eq, inArray } from "drizzle-orm";
import type { Config } from "../config";
import type { PlatformDb } from "../db";
import { apps, databases } from "../db/schema";
import type { SecretBox } from "../crypto/secrets";
import { newId, randomBase62 } from "../crypto/tokens";
import { redact } from "../crypto/redact";
import { DockerNotFound, type ContainerSummary } from "../docker/driver";
import { LABEL_DATABASE } from "../docker/container-spec";
import { ApiError, notFound } from "../http/errors";
import type { Machines } from "../machines/service";
import type { ContainerOwner, ManagedContainer } from "../machines/reconciler";
import { ENGINES, type Credentials, type EngineDefinition } from "./engines";
import type { Static } from "@sinclair/typebox";
import { LIMITS, type CreateDatabaseInput, type DatabaseSchema, type DatabaseStatsSchema, type DatabaseStatus } from "./model";
import { INTERRUPTED, Operations, type OperationActor } from "./operations";
import {
  containerNameOf,
  createContainer,
  problemOf,
  runCommand,
  removeEverything,
  startContainer,
  volumeNameOf,
  volumesOf,
  waitUntilReady,
  type DatabaseRow,
  type DatabaseTarget,
} from "./runtime";
import { databaseView, liveStatus, storageView, type ContainerState } from "./view";
import { bindCheck, chooseHostPort } from "./ports";
import { assertWithinQuota } from "../quotas/limits";
import { workspaceUsage } from "../quotas/usage";

export interface DatabaseServiceDeps {
  db: PlatformDb;
  machines: Machines;
  secrets: SecretBox;
  config: Config;
  now?: () => number;
}

const CREATE_READY_TIMEOUT_MS = 180_000;
const VOLUME_USAGE_TTL_MS = 2_000;
const GENERATED_PASSWORD_LENGTH = 32;

function randomLowercase(length: number): string {
  return randomBase62(length).toLowerCase();
}

export class DatabaseService {
  readonly db: PlatformDb;
  readonly machines: Machines;
  readonly secrets: SecretBox;
  readonly config: Config;
  readonly now: () => number;
  readonly operations: Operations;
  private readonly volumeUsageCache = new Map<string, { at: number; sizes: Promise<Record<string, number>> }>();
  /** Ports chosen for databases whose rows are not written yet. */
  private readonly portsBeingTaken = new Set<number>();

  constructor(deps: DatabaseServiceDeps) {
    this.db = deps.db;
    this.machines = deps.machines;
    this.secrets = deps.secrets;
    this.config = deps.config;
    this.now = deps.now ?? Date.now;
    this.operations = new Operations(this.db, this.now);
    this.closeInterrupted();
  }

  // ---- rows, credentials, targets ----------------------------------------------------------

  /** The database with this id in this workspace; any other workspace's id is simply not found. */
  find(workspaceId: string, databaseId: string): DatabaseRow {
    const row = this.db
      .select()
      .from(databases)
      .where(and(eq(databases.id, databaseId), eq(databases.workspaceId, workspaceId)))
      .get();
    if (!row) throw notFound("Database");
    return row;
  }

  reload(row: DatabaseRow): DatabaseRow {
    return this.db.select().from(databases).where(eq(databases.id, row.id)).get() ?? row;
  }

  update(databaseId: string, changes: Partial<DatabaseRow>) {
    this.db.update(databases).set({ ...changes, updatedAt: this.now() }).where(eq(databases.id, databaseId)).run();
  }

  credentialsOf(row: DatabaseRow): Credentials {
    return { username: row.username, password: this.secrets.decrypt(row.passwordCiphertext, row.id), databaseName: row.databaseName };
  }

  definitionOf(row: DatabaseRow): EngineDefinition {
    return ENGINES[row.engine];
  }

  targetOf(row: DatabaseRow, credentials = this.credentialsOf(row)): DatabaseTarget {
    return { driver: this.machines.get(row.machineId), definition: this.definitionOf(row), row, credentials, config: this.config };
  }

  view(row: DatabaseRow, options: { masked: boolean }) {
    return databaseView(row, this.credentialsOf(row), this.definitionOf(row), this.config, options.masked);
  }

  /** The container by its fixed name, or null when it is gone. */
  async containerOf(target: DatabaseTarget): Promise<ContainerSummary | null> {
    try {
      return await target.driver.inspectContainer(containerNameOf(target.row.id));
    } catch (error) {
      if (error instanceof DockerNotFound) return null;
      throw error;
    }
  }

  /**
   * A name is the database's alias on the workspace network, where apps use their names too:
   * it must be free among the workspace's databases and its apps (src/apps checks the mirror case).
   */
  assertNameFree(workspaceId: string, name: string) {
    const database = this.db
      .select({ id: databases.id })
      .from(databases)
      .where(and(eq(databases.workspaceId, workspaceId), eq(databases.name, name)))
      .get();
    if (database) throw new ApiError("NAME_TAKEN", `A database named '${name}' already exists in this workspace`);
    const app = this.db.select({ id: apps.id }).from(apps).where(and(eq(apps.workspaceId, workspaceId), eq(apps.name, name))).get();
    if (app) {
      throw new ApiError("NAME_TAKEN", `An app named '${name}' exists in this workspace; apps and databases share names on the workspace network`);
    }
  }

  /**
   * A host port for a new database on the machine, from PLATFORM_DB_PORT_RANGE: not held by
   * another database (recorded, or being created right now) and free on the bind address. The
   * caller writes the row, then calls `release`.
   */
  async takeHostPort(machineId: string): Promise<{ port: number; release: () => void }> {
    for (;;) {
      const recorded = this.db.select({ hostPort: databases.hostPort }).from(databases).where(eq(databases.machineId, machineId)).all();
      const taken = new Set([...recorded.map((row) => row.hostPort).filter((port) => port !== null), ...this.portsBeingTaken]);
      const port = await chooseHostPort(this.config.dbPortRange, taken, bindCheck(this.config.dbBindAddress));
      // Another creation may have chosen the same port while this one was checking: choose again.
      if (this.portsBeingTaken.has(port)) continue;
      this.portsBeingTaken.add(port);
      return { port, release: () => this.portsBeingTaken.delete(port) };
    }
  }

  /** A new database with a host port and `memoryMB`: within the workspace's quotas? */
  private assertQuotas(workspaceId: string, memoryMB: number) {
    const usage = workspaceUsage(this.db, workspaceId);
    const quotas = this.config.quotas;
    assertWithinQuota("databases", usage.databases, 1, quotas.databases);
    assertWithinQuota("dbPorts", usage.dbPorts, 1, quotas.dbPorts);
    assertWithinQuota("memoryMB", usage.memoryMB, memoryMB, quotas.memoryMB);
  }

  /** Lets a background operation finish on its own; its outcome is already recorded in its operation row. */
  track(work: Promise<unknown>) {
    work.catch(() => undefined);
  }

  // ---- reading ------------------------------------------------------------------------------

  list(workspaceId: string) {
    const rows = this.db.select().from(databases).where(eq(databases.workspaceId, workspaceId)).orderBy(databases.createdAt).all();
    return rows.map((row) => this.view(row, { masked: true }));
  }

  /** One database with its live status (read from its container) and its measured storage. */
  async get(workspaceId: string, databaseId: string): Promise<Static<typeof DatabaseSchema>> {
    const row = await this.syncStatus(this.find(workspaceId, databaseId));
    return { ...this.view(row, { masked: false }), storage: storageView(await this.storageUsed(row), row.storageGB) };
  }

  /** Reads the container and records what it says, unless an operation owns the status right now. */
  async syncStatus(row: DatabaseRow): Promise<DatabaseRow> {
    if (this.operations.isBusy(row.id)) return row;
    const target = this.targetOf(row);
    const container = await this.containerOf(target);
    const next = await this.confirmedStatus(target, container);
    // The port is fixed at creation; only a row from before that (hostPort null) adopts what Docker published.
    const hostPort = row.hostPort ?? (container?.running ? (container.ports[target.definition.port] ?? null) : null);
    // Docker and the probe took time: an operation that began meanwhile owns the status now.
    if (this.operations.isBusy(row.id)) return this.reload(row);
    if (next.status !== row.status || next.reason !== row.statusReason || hostPort !== row.hostPort) {
      this.update(row.id, { status: next.status, statusReason: next.reason, hostPort });
      return this.reload(row);
    }
    return row;
  }

  /**
   * The status the container implies. `running` promises an engine that answers, so a database
   * becomes running only once the engine answers its readiness query.
   */
  async confirmedStatus(target: DatabaseTarget, container: ContainerState | null) {
    const { row, definition, credentials } = target;
    const current = { status: row.status as DatabaseStatus, reason: row.statusReason };
    const next = liveStatus(current, container);
    if (next.status !== "running" || current.status === "running") return next;
    const answer = await runCommand(target, containerNameOf(row.id), definition.readinessProbe(credentials), [credentials.password]).catch(
      (error: Error) => ({ ok: false, exitCode: -1, stdout: "", stderr: error.message }),
    );
    if (answer.ok) return next;
    return { status: current.status, reason: `The container runs but ${definition.title} does not answer yet: ${problemOf(answer)}` };
  }

  /** Bytes used by the database's volumes; `system df` is costly, so it is cached for a few seconds per machine. */
  async storageUsed(row: DatabaseRow): Promise<number | null> {
    const names = volumesOf(this.definitionOf(row), row).map((volume) => volume.volumeName);
    let sizes = await this.volumeUsage(row.machineId, false);
    // A volume newer than the cached measure: measure again rather than answer "unknown".
    if (names.every((name) => sizes[name] === undefined)) sizes = await this.volumeUsage(row.machineId, true);
    if (names.every((name) => sizes[name] === undefined)) return null;
    return names.reduce((sum, name) => sum + Math.max(0, sizes[name] ?? 0), 0);
  }

  private volumeUsage(machineId: string, fresh: boolean): Promise<Record<string, number>> {
    const cached = this.volumeUsageCache.get(machineId);
    if (!fresh && cached && this.now() - cached.at < VOLUME_USAGE_TTL_MS) return cached.sizes;
    const sizes = this.machines.get(machineId).volumeUsage();
    this.volumeUsageCache.set(machineId, { at: this.now(), sizes });
    sizes.catch(() => this.volumeUsageCache.delete(machineId));
    return sizes;
  }

  async stats(workspaceId: string, databaseId: string): Promise<Static<typeof DatabaseStatsSchema>> {
    const row = this.find(workspaceId, databaseId);
    const target = this.targetOf(row);
    const container = await this.containerOf(target);
    const storage = storageView(await this.storageUsed(row), row.storageGB);
    const live = container?.running ? await target.driver.stats(container.id) : null;
    return {
      running: live !== null,
      cpuPercent: live?.cpuPercent ?? 0,
      memoryUsedBytes: live?.memoryUsedBytes ?? 0,
      memoryLimitBytes: live?.memoryLimitBytes ?? row.memoryMB * 1024 * 1024,
      networkRxBytes: live?.networkRxBytes ?? 0,
      networkTxBytes: live?.networkTxBytes ?? 0,
      blockReadBytes: live?.blockReadBytes ?? 0,
      blockWriteBytes: live?.blockWriteBytes ?? 0,
      pids: live?.pids ?? 0,
      storageUsedBytes: storage.usedBytes,
      storageAllowanceBytes: storage.allowanceBytes,
      storageWarning: storage.warning,
    };
  }

  async logs(workspaceId: string, databaseId: string, options: { tail: number; timestamps: boolean }): Promise<string[]> {
    const row = this.find(workspaceId, databaseId);
    const target = this.targetOf(row);
    const container = await this.containerOf(target);
    if (!container) return [];
    const lines = await target.driver.logs(container.id, options);
    const secrets = [target.credentials.password];
    return lines.map((line) => redact(line.timestamp ? `${line.timestamp} ${line.text}` : line.text, secrets));
  }

  listOperations(workspaceId: string, databaseId: string) {
    return this.operations.list(this.find(workspaceId, databaseId).id);
  }

  // ---- create -------------------------------------------------------------------------------

  private credentialsFor(input: CreateDatabaseInput, definition: EngineDefinition): Credentials {
    const derived = input.name.replaceAll("-", "_").slice(0, 60);
    let databaseName = input.databaseName ?? (/^[a-z_]/.test(derived) ? derived : `db_${derived}`);
    if (!input.databaseName && definition.credentialProblems({ username: "user", databaseName }).length > 0) databaseName = `db_${databaseName}`;
    const credentials = {
      username: input.username ?? `user_${randomLowercase(8)}`,
      password: input.password ?? randomBase62(GENERATED_PASSWORD_LENGTH),
      databaseName,
    };
    const problems = definition.credentialProblems(credentials);
    if (problems.length > 0) throw new ApiError("VALIDATION_FAILED", problems.join("; "));
    return credentials;
  }

  /**
   * Checks what can be checked at once (input, name, that the engine answers, a host port),
   * writes the row as `provisioning` and answers: the connection string is already complete, as
   * the port is known. The image pull (minutes, the first time), volumes, network, container,
   * start and readiness run in the background as the create operation (see `provision`).
   */
  async create(workspaceId: string, input: CreateDatabaseInput, actor: OperationActor) {
    const definition = ENGINES[input.engine];
    const driver = this.machines.place(input.machineId);
    const credentials = this.credentialsFor(input, definition);
    this.assertNameFree(workspaceId, input.name);
    // An unreachable engine answers 503 DOCKER_UNAVAILABLE now, not a failed database later.
    await driver.ping();
    const id = newId("db");
    const hostPort = await this.takeHostPort(driver.machineId);
    const now = this.now();
    const row: DatabaseRow = {
      id,
      workspaceId,
      name: input.name,
      engine: input.engine,
      version: input.version ?? definition.defaultVersion,
      status: "provisioning",
      statusReason: null,
      cpus: input.cpus ?? null,
      memoryMB: input.memoryMB ?? LIMITS.memoryMB.default,
      storageGB: input.storageGB ?? LIMITS.storageGB.default,
      username: credentials.username,
      passwordCiphertext: this.secrets.encrypt(credentials.password, id),
      databaseName: credentials.databaseName,
      machineId: driver.machineId,
      containerId: null,
      volumeName: volumeNameOf(id),
      hostPort: hostPort.port,
      createdAt: now,
      updatedAt: now,
    };
    try {
      // Checked here, after the last await: no other create can slip in between check and insert.
      this.assertQuotas(workspaceId, row.memoryMB);
      this.db.insert(databases).values(row).run();
    } catch (error) {
      if (String(error).includes("UNIQUE")) throw new ApiError("NAME_TAKEN", `A database named '${input.name}' already exists in this workspace`);
      throw error;
    } finally {
      hostPort.release();
    }
    const operation = this.operations.begin(row, "create", actor);
    const target: DatabaseTarget = { driver, definition, row, credentials, config: this.config };
    this.track(operation.run(() => this.provision(target, operation.signal)));
    return { database: this.view(row, { masked: false }), operationId: operation.id };
  }

  /**
   * Makes the database's Docker side and waits until the engine answers: running, or failed with
   * the reason and nothing left in Docker. A first start that failed holds no data, and a
   * half-initialised data dir would only make the next attempt fail: POST start makes it all anew.
   * Preempted (`signal`, a delete), it stops at its next step and removes what it made; the
   * status is then the delete's.
   */
  private async provision(target: DatabaseTarget, signal: AbortSignal): Promise<void> {
    const { row, credentials } = target;
    try {
      const containerId = await createContainer(target);
      signal.throwIfAborted();
      this.update(row.id, { containerId });
      await startContainer(target, containerId);
      signal.throwIfAborted();
      await waitUntilReady(target, containerId, CREATE_READY_TIMEOUT_MS, signal);
      this.update(row.id, { status: "running", statusReason: null });
    } catch (error) {
      let reason = `Create failed: ${(error as Error).message}`;
      await removeEverything(target).catch((cleanup: Error) => {
        reason += `; what was made could not be removed (${cleanup.message}): DELETE removes it`;
      });
      reason = redact(reason, [credentials.password]);
      if (!signal.aborted) this.update(row.id, { status: "failed", statusReason: reason, containerId: null });
      throw new Error(reason);
    }
  }

  /** Waits for the engine; running when it answers, else failed with the reason and the container stopped. */
  async becomeReady(target: DatabaseTarget, timeoutMs: number): Promise<void> {
    try {
      await waitUntilReady(target, containerNameOf(target.row.id), timeoutMs);
      this.update(target.row.id, { status: "running", statusReason: null });
    } catch (error) {
      const reason = redact((error as Error).message, [target.credentials.password]);
      this.update(target.row.id, { status: "failed", statusReason: reason });
      await target.driver.stopContainer(containerNameOf(target.row.id), 5).catch(() => undefined);
      throw new Error(reason);
    }
  }

  // ---- the reconciler and restarts ----------------------------------------------------------

  /** Syncs the status of every database container the reconciler lists. */
  containerOwner(): ContainerOwner {
    return {
      label: LABEL_DATABASE,
      sync: async (containers: ManagedContainer[]) => {
        const known = new Set<string>();
        const ids = containers.map((container) => container.labels[LABEL_DATABASE]!);
        const rows = ids.length ? this.db.select().from(databases).where(inArray(databases.id, ids)).all() : [];
        const byId = new Map(rows.map((row) => [row.id, row]));
        for (const container of containers) {
          const row = byId.get(container.labels[LABEL_DATABASE]!);
          if (!row || row.machineId !== container.machineId) continue;
          known.add(row.id);
          if (this.operations.isBusy(row.id)) continue;
          const next = await this.confirmedStatus(this.targetOf(row), { state: container.state, exitCode: null }).catch(() => null);
          if (next && (next.status !== row.status || next.reason !== row.statusReason) && !this.operations.isBusy(row.id)) {
            this.update(row.id, { status: next.status, statusReason: next.reason });
          }
        }
        return known;
      },
    };
  }

  /** At start nothing runs yet: operations cut off by a stop or crash are closed, their databases marked. */
  private closeInterrupted() {
    this.operations.failInterrupted();
    this.db
      .update(databases)
      .set({ status: "failed", statusReason: INTERRUPTED, updatedAt: this.now() })
      .where(inArray(databases.status, ["provisioning", "deleting"]))
      .run();
  }
}
