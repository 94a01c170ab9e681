// What the driver's parts (./driver.ts, ./images.ts, ./exec.ts) share: the dockerode client with
// the driver's wrapper around each engine call, the errors that wrapper lets through, and helpers.
import type Docker from "dockerode";

export class DockerNotFound extends Error {}
/** The engine refused for the state of what was named (409): a volume a container still uses, a name taken. */
export class DockerConflict extends Error {}
/** The Dockerfile itself failed (a RUN step exited non-zero...): the user's problem, not the engine's. */
export class BuildFailed extends Error {}

/** Calls whose work grows with what they touch: removing, copying, committing, measuring disks. */
export const SLOW_CALL_TIMEOUT_MS = 300_000;

/**
 * One engine call through the driver (DockerDriver.call): failures mapped to the platform's errors,
 * aborted past `timeoutMs` (omitted: the driver's default; null: as long as the work lasts).
 */
export type EngineCall = <T>(what: string, run: (signal: AbortSignal) => Promise<T>, timeoutMs?: number | null) => Promise<T>;

/** A machine's engine: the client, and the wrapper every call to it goes through. */
export interface Engine {
  docker: Docker;
  call: EngineCall;
}

export function labelFilter(labels: Record<string, string>): string[] {
  return Object.entries(labels).map(([name, value]) => `${name}=${value}`);
}
