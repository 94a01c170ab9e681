// The Docker side of one database, through the driver: its container spec (pure), creating the
// container with its volumes on the workspace network, writing config files before a start,
// running engine commands with secrets kept out of argv and out of error texts, waiting until the
// engine answers a real query, and removing everything.
import type { Config } from "../config";
import type { databases } from "../db/schema";
import type { DockerDriver } from "../docker/driver";
import { LABEL_DATABASE, LABEL_MANAGED, LABEL_WORKSPACE, type ContainerSpec } from "../docker/container-spec";
import { ensureWorkspaceNetwork, releaseWorkspaceNetwork, workspaceNetworkName } from "../docker/workspace-network";
import { ApiError } from "../http/errors";
import { redact } from "../crypto/redact";
import { resolveImage, type Credentials, type EngineCommand, type EngineDefinition } from "./engines";

export type DatabaseRow = typeof databases.$inferSelect;

/** The database, its engine and its plaintext credentials on the machine it lives on. */
export interface DatabaseTarget {
  driver: DockerDriver;
  definition: EngineDefinition;
  row: DatabaseRow;
  credentials: Credentials;
  config: Config;
}

export interface CommandResult {
  ok: boolean;
  exitCode: number;
  stdout: string;
  stderr: string;
}

const COMMAND_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_SECONDS = 30;
const PROBE_INTERVAL_MS = 500;

export function containerNameOf(databaseId: string): string {
  return `platform-db-${databaseId}`;
}

export function volumeNameOf(databaseId: string): string {
  return `platform-db-${databaseId}-data`;
}

export function labelsOf(row: Pick<DatabaseRow, "id" | "workspaceId">): Record<string, string> {
  return { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: row.workspaceId, [LABEL_DATABASE]: row.id };
}

/** Every named volume of the database: the data volume plus any other VOLUME its image declares. */
export function volumesOf(definition: EngineDefinition, row: Pick<DatabaseRow, "volumeName" | "version">) {
  return definition.volumes(row.version).map((mount) => ({ volumeName: row.volumeName + mount.suffix, containerPath: mount.containerPath }));
}

export function containerSpecOf(target: Omit<DatabaseTarget, "driver">): ContainerSpec {
  const { definition, row, credentials, config } = target;
  const settings = { credentials, version: row.version, memoryMB: row.memoryMB };
  return {
    name: containerNameOf(row.id),
    image: resolveImage(config.images[definition.engine], definition, row.version),
    command: definition.command(settings),
    env: definition.environment(settings),
    labels: labelsOf(row),
    memoryMB: row.memoryMB,
    cpus: row.cpus ?? config.defaultCpus,
    capabilities: definition.capabilities,
    network: { name: workspaceNetworkName(row.workspaceId), aliases: [row.name] },
    publish: { containerPort: definition.port, hostIp: config.dbBindAddress, hostPort: row.hostPort ?? undefined },
    volumes: volumesOf(definition, row),
    restartPolicy: "unless-stopped",
  };
}

/** Docker's own refusals become 409 OPERATION_FAILED with its message; API errors (503 DOCKER_UNAVAILABLE...) pass through. */
export function dockerFailure(error: unknown, what: string): Error {
  if (error instanceof ApiError) return error;
  return new ApiError("OPERATION_FAILED", `${what}: ${(error as Error).message}`);
}

function lastLine(text: string): string {
  return text.trim().split("\n").filter(Boolean).at(-1) ?? "";
}

/** Creates volumes, network and container (not started); answers the container id. */
export async function createContainer(target: DatabaseTarget, onProgress?: (line: string) => void): Promise<string> {
  const spec = containerSpecOf(target);
  await target.driver.ensureImage(spec.image, onProgress);
  for (const volume of spec.volumes ?? []) await target.driver.createVolume(volume.volumeName, labelsOf(target.row));
  await ensureWorkspaceNetwork(target.driver, target.row.workspaceId);
  return target.driver.createContainer(spec);
}

/** Writes the engine's config files (Redis' ACL and settings) into the container, running or not. */
export async function writeConfigFiles(target: DatabaseTarget, containerId: string, files?: Record<string, string>) {
  const settings = { credentials: target.credentials, version: target.row.version, memoryMB: target.row.memoryMB };
  const wanted = files ?? target.definition.configFiles(settings);
  if (Object.keys(wanted).length === 0) return;
  await target.driver.copyToContainer(containerId, "/", Object.fromEntries(Object.entries(wanted).map(([path, text]) => [path.replace(/^\/+/, ""), text])));
}

/** Starts the container with fresh config files; it publishes the host port chosen at creation. */
export async function startContainer(target: DatabaseTarget, containerId: string): Promise<void> {
  await writeConfigFiles(target, containerId);
  await target.driver.startContainer(containerId);
}

export async function stopContainer(target: Pick<DatabaseTarget, "driver">, containerId: string) {
  await target.driver.stopContainer(containerId, STOP_TIMEOUT_SECONDS);
}

/** Runs an engine command inside the container; secrets never reach the command line or the answer. */
export async function runCommand(target: DatabaseTarget, containerId: string, command: EngineCommand, secrets: string[]): Promise<CommandResult> {
  const files = Object.keys(command.files ?? {});
  if (files.length > 0) await writeConfigFiles(target, containerId, command.files);
  try {
    // On timeout the driver ends the command (kills it in the container), so nothing keeps running behind the error.
    const result = await target.driver.exec(containerId, {
      command: command.argv,
      env: command.env,
      stdin: command.stdin === undefined ? undefined : new TextEncoder().encode(command.stdin),
      timeoutMs: COMMAND_TIMEOUT_MS,
    });
    const ok = result.exitCode === 0 && (command.expectOutput === undefined || result.stdout.trim() === command.expectOutput);
    return { ok, exitCode: result.exitCode, stdout: redact(result.stdout, secrets), stderr: redact(result.stderr, secrets) };
  } finally {
    if (files.length > 0) await target.driver.exec(containerId, { command: ["rm", "-f", ...files] }).catch(() => undefined);
  }
}

/** `timeout`'s exit code when it had to end the command (Redis' short commands run under it). */
const TIMED_OUT_EXIT_CODE = 124;

/** What a failed command said, for an error text. */
export function problemOf(result: CommandResult): string {
  if (result.exitCode === TIMED_OUT_EXIT_CODE && !result.stderr.trim()) return "no answer within the command's time limit";
  return lastLine(result.stderr) || lastLine(result.stdout) || `exit code ${result.exitCode}`;
}

async function recentLogs(target: DatabaseTarget, containerId: string): Promise<string> {
  try {
    const lines = await target.driver.logs(containerId, { tail: 5, timestamps: false });
    return redact(lines.map((line) => line.text).join(" | "), [target.credentials.password]);
  } catch {
    return "";
  }
}

/** Polls the engine with a real query until it answers, the container dies, time runs out, or `signal` aborts. */
export async function waitUntilReady(target: DatabaseTarget, containerId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const { definition, credentials } = target;
  const deadline = Date.now() + timeoutMs;
  let lastProblem = "no answer yet";
  for (;;) {
    signal?.throwIfAborted();
    const container = await target.driver.inspectContainer(containerId);
    if (!container.running || container.state === "restarting") {
      const logs = await recentLogs(target, containerId);
      throw new Error(`${definition.title} exited with code ${container.exitCode ?? "?"} before answering${logs ? `: ${logs}` : ""}`);
    }
    // Docker refuses an exec while the container restarts or once it has exited: look at the container again.
    const result = await runCommand(target, containerId, definition.readinessProbe(credentials), [credentials.password]).catch(
      (error: Error): CommandResult => ({ ok: false, exitCode: -1, stdout: "", stderr: redact(error.message, [credentials.password]) }),
    );
    if (result.ok) return;
    lastProblem = problemOf(result);
    if (Date.now() > deadline) {
      throw new Error(`${definition.title} did not answer a query within ${Math.round(timeoutMs / 1000)} s (last answer: ${lastProblem})`);
    }
    await Bun.sleep(PROBE_INTERVAL_MS);
  }
}

/** Removes the container and every volume of the database (only volumes carrying the platform's label). */
export async function removeEverything(target: Pick<DatabaseTarget, "driver" | "definition" | "row">): Promise<void> {
  await target.driver.removeContainer(containerNameOf(target.row.id));
  for (const volume of volumesOf(target.definition, target.row)) await target.driver.removeVolume(volume.volumeName);
  await releaseWorkspaceNetwork(target.driver, target.row.workspaceId);
}
