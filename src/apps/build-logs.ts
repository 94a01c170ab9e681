// Build logs: appended to a file per build as they are produced, readable whole afterwards,
// and followable live by any number of readers while the build runs.
import { appendFileSync, existsSync, readFileSync } from "node:fs";

type Listener = (line: string | null) => void;

export class BuildLogs {
  /** Builds queued or running, with the readers following each. */
  private readonly live = new Map<string, Set<Listener>>();

  constructor(private readonly fileOf: (appId: string, buildId: string) => string) {}

  /** From now until `finish`, readers of this build's log wait for more lines. */
  open(buildId: string) {
    if (!this.live.has(buildId)) this.live.set(buildId, new Set());
  }

  append(appId: string, buildId: string, line: string) {
    const text = line.endsWith("\n") ? line : `${line}\n`;
    appendFileSync(this.fileOf(appId, buildId), text, { mode: 0o600 });
    for (const listener of this.live.get(buildId) ?? []) listener(text);
  }

  read(appId: string, buildId: string): string {
    const file = this.fileOf(appId, buildId);
    return existsSync(file) ? readFileSync(file, "utf8") : "";
  }

  /** The build is over: live readers get the end of their stream. */
  finish(buildId: string) {
    for (const listener of this.live.get(buildId) ?? []) listener(null);
    this.live.delete(buildId);
  }

  /** What was logged so far, then each new line until the build ends. */
  follow(appId: string, buildId: string, signal?: AbortSignal): ReadableStream<Uint8Array> {
    const encoder = new TextEncoder();
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        const existing = this.read(appId, buildId);
        if (existing) controller.enqueue(encoder.encode(existing));
        const listeners = this.live.get(buildId);
        if (!listeners) return controller.close();
        const listener: Listener = (line) => (line === null ? controller.close() : controller.enqueue(encoder.encode(line)));
        listeners.add(listener);
        signal?.addEventListener("abort", () => listeners.delete(listener), { once: true });
      },
    });
  }
}
