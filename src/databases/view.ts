// How a database looks in API answers, and how its live state is read from its container: pure
// functions over a row, its credentials and what the engine reports.
import type { Static } from "@sinclair/typebox";
import type { Config } from "../config";
import { connectionStringOf, type Credentials, type EngineDefinition } from "./engines";
import type { DatabaseSchema, DatabaseStatus, DatabaseStorageSchema } from "./model";
import type { DatabaseRow } from "./runtime";

const GIB = 1024 ** 3;

export function databaseView(row: DatabaseRow, credentials: Credentials, definition: EngineDefinition, config: Config, masked: boolean): Static<typeof DatabaseSchema> {
  return {
    id: row.id,
    name: row.name,
    engine: row.engine,
    version: row.version,
    status: row.status as DatabaseStatus,
    statusReason: row.statusReason,
    memoryMB: row.memoryMB,
    /** The CPU limit the container has: its own, or PLATFORM_DEFAULT_CPUS. */
    cpus: row.cpus ?? config.defaultCpus,
    storageGB: row.storageGB,
    username: row.username,
    databaseName: row.databaseName,
    machineId: row.machineId,
    host: config.publicHost,
    port: row.hostPort,
    /** Host name and port the workspace's apps use on their network. */
    internalHost: row.name,
    internalPort: definition.port,
    connectionString: row.hostPort === null ? null : connectionStringOf(definition, credentials, config.publicHost, row.hostPort, masked),
    internalConnectionString: connectionStringOf(definition, credentials, row.name, definition.port, masked),
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

export type DatabaseView = ReturnType<typeof databaseView>;

/** Docker local volumes cannot enforce a size: the real use is measured and compared with the allowance. */
export function storageView(usedBytes: number | null, storageGB: number): Static<typeof DatabaseStorageSchema> {
  const allowanceBytes = storageGB * GIB;
  const overAllowance = usedBytes !== null && usedBytes > allowanceBytes;
  return {
    allowanceBytes,
    usedBytes,
    overAllowance,
    warning: overAllowance
      ? `The database uses ${(usedBytes! / GIB).toFixed(2)} GB of its ${storageGB} GB allowance; the volume cannot be capped, ` +
        "so writes go on until the machine's disk is full: raise storageGB or free space"
      : null,
  };
}

export interface ContainerState {
  /** Docker's state: running, restarting, exited, created, paused, dead. */
  state: string;
  exitCode: number | null;
}

/** The status a database has given its container (null: the container is gone). */
export function liveStatus(
  current: { status: DatabaseStatus; reason: string | null },
  container: ContainerState | null,
): { status: DatabaseStatus; reason: string | null } {
  // A failed create removes its container: its reason says more than that the container is gone.
  if (container === null) {
    if (current.status === "failed" && current.reason) return current;
    return { status: "failed", reason: "The container is missing; POST start creates it again on the kept volume" };
  }
  if (container.state === "running") return { status: "running", reason: null };
  if (container.state === "restarting") return { status: "failed", reason: "The engine keeps exiting and Docker is restarting it; see the logs" };
  if (current.status === "stopped") return { status: "stopped", reason: null };
  if (container.exitCode !== null && container.exitCode !== 0) {
    return { status: "failed", reason: `The engine exited with code ${container.exitCode}; see the logs, then POST start` };
  }
  if (current.status === "failed") return current;
  return { status: "stopped", reason: "Stopped outside the platform" };
}
