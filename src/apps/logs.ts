// An app's output: the last lines of its serving container, or followed as they are written.
import { DockerNotFound } from "../docker/driver";
import { setTimeout as sleep } from "node:timers/promises";
import type { AppRow, AppsContext } from "./deployer";

export interface LogOptions {
  tail: number;
  timestamps: boolean;
}

export async function appLogs(ctx: Pick<AppsContext, "machines">, app: AppRow, options: LogOptions): Promise<string[]> {
  if (!app.containerId) return [];
  try {
    const lines = await ctx.machines.get(app.machineId).logs(app.containerId, options);
    return lines.map((line) => (line.timestamp ? `${line.timestamp} ${line.text}` : line.text));
  } catch (error) {
    if (error instanceof DockerNotFound) return []; // removed behind the platform's back
    throw error;
  }
}

/** How often a follower of an app without a container looks again. */
const CONTAINER_WAIT_MS = 1_000;

/** The lines of the app's container as they are written; until the app has one, waits for its first (null: the app is gone). */
async function* followedLines(ctx: Pick<AppsContext, "machines">, app: AppRow, current: () => AppRow | null, options: LogOptions, signal: AbortSignal) {
  let latest: AppRow | null = app;
  while (latest && !latest.containerId && !signal.aborted) {
    await sleep(CONTAINER_WAIT_MS, undefined, { signal }).catch(() => {});
    latest = current();
  }
  if (!latest?.containerId || signal.aborted) return;
  yield* ctx.machines.get(latest.machineId).followLogs(latest.containerId, { ...options, signal });
}

/**
 * The app's output as it is written, one line per chunk, until the client goes away. An app with
 * no container yet (never deployed, its first build running or failed) is an empty stream that
 * waits for one, as the answer without `follow` is an empty list: it ends when the app is deleted.
 */
export function followAppLogs(ctx: Pick<AppsContext, "machines">, app: AppRow, current: () => AppRow | null, options: LogOptions, signal: AbortSignal): ReadableStream<Uint8Array> {
  const lines = followedLines(ctx, app, current, options, signal);
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      // Bun sends the answer's headers with its first bytes: with no output to send yet, the client
      // would wait for the first heartbeat. An empty line is what a heartbeat is (src/http/streams.ts).
      if (!app.containerId) controller.enqueue(encoder.encode("\n"));
    },
    async pull(controller) {
      const next = await lines.next().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) return controller.close();
      const line = next.value;
      controller.enqueue(encoder.encode(`${line.timestamp ? `${line.timestamp} ` : ""}${line.text}\n`));
    },
    cancel: () => void lines.return(undefined),
  });
}
