// Build logs: appended to a file per build as they are produced, readable whole afterwards,
// and followable live by any number of readers while the build runs.
import { appendFileSync, existsSync, readFileSync } from "node:fs";

type Listener = (line: string | null) => void;

export class BuildLogs {
  private readonly listeners = new Map<string, Set<Listener>>();

  constructor(private readonly fileOf: (appId: string, buildId: string) => string) {}

  append(appId: string, buildId: string, line: string) {
    const text = line.endsWith("\n") ? line : `${line}\n`;
    appendFileSync(this.fileOf(appId, buildId), text, { mode: 0o600 });
    for (const listener of this.listeners.get(buildId) ?? []) listener(text);
  }

  read(appId: string, buildId: string): string {
    const file = this.fileOf(appId, buildId);
    return existsSync(file) ? readFileSync(file, "utf8") : "";
  }

  /** The build is over: live readers get the end of their stream. */
  close(buildId: string) {
    for (const listener of this.listeners.get(buildId) ?? []) listener(null);
    this.listeners.delete(buildId);
  }

  private readonly live = new Set<string>();

  open(buildId: string) {
    this.live.add(buildId);
  }

  finish(buildId: string) {
    this.live.delete(buildId);
    this.close(buildId);
  }

  /** What was logged so far, then each new line until the build ends. */
  follow(appId: string, buildId: string, signal?: AbortSignal): ReadableStream<Uint8Array> {
    const encoder = new TextEncoder();
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        const existing = this.read(appId, buildId);
        if (existing) controller.enqueue(encoder.encode(existing));
        if (!this.live.has(buildId)) return controller.close();
        const listener: Listener = (line) => {
          if (line === null) {
            this.listeners.get(buildId)?.delete(listener);
            controller.close();
          } else controller.enqueue(encoder.encode(line));
        };
        const set = this.listeners.get(buildId) ?? new Set<Listener>();
        set.add(listener);
        this.listeners.set(buildId, set);
        signal?.addEventListener("abort", () => set.delete(listener), { once: true });
      },
    });
  }
}
