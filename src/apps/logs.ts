// An app's output: the last lines of its serving container, or followed as they are written.
import { DockerNotFound } from "../docker/driver";
import { ApiError } from "../http/errors";
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

/** The app's output as it is written, one line per chunk, until the client goes away. */
export function followAppLogs(ctx: Pick<AppsContext, "machines">, app: AppRow, options: LogOptions, signal: AbortSignal): ReadableStream<Uint8Array> {
  if (!app.containerId) throw new ApiError("NOT_DEPLOYED", "The app has no container yet");
  const lines = ctx.machines.get(app.machineId).followLogs(app.containerId, { ...options, signal });
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await lines.next().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) return controller.close();
      const line = next.value;
      controller.enqueue(encoder.encode(`${line.timestamp ? `${line.timestamp} ` : ""}${line.text}\n`));
    },
    cancel: () => void lines.return(undefined),
  });
}
