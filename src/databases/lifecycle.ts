// Start, stop, settings and delete of a database. Each is one operation in the history and holds
// the database while it runs (a second operation meanwhile gets 409 BUSY; a delete preempts it). Start and stop answer
// at once and finish in the background; the others finish before answering.
import { eq } from "drizzle-orm";
import { databases } from "../db/schema";
import { ApiError } from "../http/errors";
import { workspaceNetworkName } from "../docker/workspace-network";
import type { SettingsInput } from "./model";
import { assertWithinQuota } from "../quotas/limits";
import { workspaceUsage } from "../quotas/usage";
import type { OperationActor } from "./operations";
import {
  createContainer,
  dockerFailure,
  problemOf,
  removeEverything,
  runCommand,
  startContainer,
  stopContainer,
  writeConfigFiles,
  type DatabaseTarget,
} from "./runtime";
import type { DatabaseService } from "./service";

const START_READY_TIMEOUT_MS = 120_000;
/** How long a delete waits for the operations it preempted to end before it goes on without them. */
const PREEMPTED_WAIT_MS = 30_000;

/** The container, created again on the kept volumes when it has gone missing. */
async function ensureContainer(service: DatabaseService, target: DatabaseTarget): Promise<string> {
  const existing = await service.containerOf(target);
  if (existing) return existing.id;
  const containerId = await createContainer(target);
  service.update(target.row.id, { containerId });
  return containerId;
}

/** Starts the engine (recreating a missing container); running once it answers a real query. */
export function startDatabase(service: DatabaseService, workspaceId: string, databaseId: string, actor: OperationActor) {
  const row = service.find(workspaceId, databaseId);
  const target = service.targetOf(row);
  const operation = service.operations.begin(row, "start", actor);
  service.update(row.id, { status: "provisioning", statusReason: null });
  service.track(
    operation.run(async () => {
      try {
        await startContainer(target, await ensureContainer(service, target));
      } catch (error) {
        service.update(row.id, { status: "failed", statusReason: `Start failed: ${(error as Error).message}` });
        throw error;
      }
      await service.becomeReady(target, START_READY_TIMEOUT_MS);
    }),
  );
  return { database: service.view(service.reload(row), { masked: false }), operationId: operation.id };
}

/** Stops the engine cleanly in the background (it may take its time to flush); `stopped` once it has. */
export function stopDatabase(service: DatabaseService, workspaceId: string, databaseId: string, actor: OperationActor) {
  const row = service.find(workspaceId, databaseId);
  const target = service.targetOf(row);
  const operation = service.operations.begin(row, "stop", actor);
  service.track(
    operation.run(async () => {
      const container = await service.containerOf(target).catch((error) => Promise.reject(dockerFailure(error, "Docker could not stop the database")));
      if (container) await stopContainer(target, container.id).catch((error) => Promise.reject(dockerFailure(error, "Docker could not stop the database")));
      service.update(row.id, { status: "stopped", statusReason: null });
    }),
  );
  return { database: service.view(service.reload(row), { masked: false }), operationId: operation.id };
}

/**
 * Renames (the alias on the workspace network follows; the host port stays) and/or
 * applies a new memory or CPU limit to the container as it runs, with no restart and no data loss.
 */
export async function updateSettings(service: DatabaseService, workspaceId: string, databaseId: string, input: SettingsInput, actor: OperationActor) {
  const row = service.find(workspaceId, databaseId);
  const rename = input.name !== undefined && input.name !== row.name;
  const resize = input.memoryMB !== undefined && input.memoryMB !== row.memoryMB;
  const cpus = input.cpus === undefined ? row.cpus : input.cpus;
  if (rename) service.assertNameFree(workspaceId, input.name!);
  if (resize) assertWithinQuota("memoryMB", workspaceUsage(service.db, workspaceId).memoryMB, input.memoryMB! - row.memoryMB, service.config.quotas.memoryMB);
  const operation = service.operations.begin(row, "settings", actor);
  await operation.run(async () => {
    const updated = { ...row, name: input.name ?? row.name, memoryMB: input.memoryMB ?? row.memoryMB, cpus };
    const target = service.targetOf(updated);
    const container = await service.containerOf(target);
    if (resize && container) {
      await target.driver.updateContainerMemory(container.id, updated.memoryMB).catch((error) => {
        throw dockerFailure(error, "Docker refused the new memory limit");
      });
      await writeConfigFiles(target, container.id);
      const applyMemory = target.definition.applyMemory(target.credentials, updated.memoryMB);
      if (applyMemory && container.running) {
        const result = await runCommand(target, container.id, applyMemory, [target.credentials.password]);
        if (!result.ok) throw new ApiError("OPERATION_FAILED", `${target.definition.title} refused the new memory size: ${problemOf(result)}`);
      }
    }
    if (cpus !== row.cpus && container) {
      await target.driver.updateContainerCpus(container.id, cpus ?? service.config.defaultCpus).catch((error) => {
        throw dockerFailure(error, "Docker refused the new CPU limit");
      });
    }
    if (rename && container) {
      await target.driver.setNetworkAliases(container.id, workspaceNetworkName(row.workspaceId), [updated.name]).catch((error) => {
        throw dockerFailure(error, "Docker could not give the container its new alias");
      });
    }
    try {
      // hostPort is left as it is: it was chosen at creation and the container keeps publishing it.
      service.update(row.id, { name: updated.name, memoryMB: updated.memoryMB, cpus: updated.cpus });
    } catch (error) {
      if (String(error).includes("UNIQUE")) throw new ApiError("NAME_TAKEN", `A database named '${updated.name}' already exists in this workspace`);
      throw error;
    }
  });
  return { database: service.view(service.reload(row), { masked: false }), operationId: operation.id };
}

/**
 * Removes the container and the volumes for good, then the row (its operations history goes
 * with it). Operations still running (a create, a verify, a restore...) are preempted: the
 * container goes first, which ends whatever runs in it, each of them is awaited (a verify removes
 * its throwaway copy), then what a late step of theirs may have made is removed too.
 */
export async function deleteDatabase(service: DatabaseService, workspaceId: string, databaseId: string, actor: OperationActor) {
  const row = service.find(workspaceId, databaseId);
  const target = service.targetOf(row);
  const { operation, preempted } = service.operations.takeOver(row, "delete", actor, "canceled: the database was deleted");
  try {
    await operation.run(async () => {
      service.update(row.id, { status: "deleting", statusReason: null });
      await removeEverything(target);
      const ended = await Promise.race([preempted, Bun.sleep(PREEMPTED_WAIT_MS).then(() => -1)]);
      if (ended === -1) console.warn(`[databases] operations of ${row.id} still run ${PREEMPTED_WAIT_MS / 1000} s after its delete preempted them`);
      if (ended !== 0) await removeEverything(target);
      service.db.delete(databases).where(eq(databases.id, row.id)).run();
    });
  } catch (error) {
    service.update(row.id, { status: "failed", statusReason: `Delete failed: ${(error as Error).message}; DELETE again to retry` });
    throw dockerFailure(error, "Docker could not remove the database");
  }
  return { database: { ...service.view(row, { masked: true }), status: "deleting" as const }, operationId: operation.id };
}
