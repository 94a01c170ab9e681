// Build slots: at most `perWorkspace` builds run at once in one workspace and `total` on the whole
// platform; the others wait in one first-come-first-served line. A waiter whose workspace is full
// does not hold up a later waiter of another workspace (no head-of-line blocking), and a waiter
// that gives up (its build canceled) leaves the line at once.

interface Waiter {
  buildId: string;
  workspaceId: string;
  grant: (release: () => void) => void;
}

export class BuildCanceledWhileQueued extends Error {}

export class BuildSlots {
  private readonly waiting: Waiter[] = [];
  private readonly runningPerWorkspace = new Map<string, number>();
  private runningTotal = 0;

  constructor(private readonly limits: { perWorkspace: number; total: number }) {}

  /**
   * Resolves with a release function once the build may run; rejects with
   * BuildCanceledWhileQueued when `signal` aborts first.
   */
  acquire(workspaceId: string, buildId: string, signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(new BuildCanceledWhileQueued());
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        buildId,
        workspaceId,
        grant: (release) => {
          signal.removeEventListener("abort", leave);
          resolve(release);
        },
      };
      const leave = () => {
        const index = this.waiting.indexOf(waiter);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(new BuildCanceledWhileQueued());
      };
      signal.addEventListener("abort", leave, { once: true });
      this.waiting.push(waiter);
      this.grantFree();
    });
  }

  /** 1 for the next build to run, 2 after it...; null when the build is not waiting. */
  position(buildId: string): number | null {
    const index = this.waiting.findIndex((waiter) => waiter.buildId === buildId);
    return index < 0 ? null : index + 1;
  }

  private hasRoom(workspaceId: string): boolean {
    return this.runningTotal < this.limits.total && (this.runningPerWorkspace.get(workspaceId) ?? 0) < this.limits.perWorkspace;
  }

  private grantFree() {
    for (let index = 0; index < this.waiting.length && this.runningTotal < this.limits.total; ) {
      const waiter = this.waiting[index]!;
      if (!this.hasRoom(waiter.workspaceId)) {
        index++;
        continue;
      }
      this.waiting.splice(index, 1);
      this.runningTotal++;
      this.runningPerWorkspace.set(waiter.workspaceId, (this.runningPerWorkspace.get(waiter.workspaceId) ?? 0) + 1);
      let released = false;
      waiter.grant(() => {
        if (released) return;
        released = true;
        this.runningTotal--;
        const left = (this.runningPerWorkspace.get(waiter.workspaceId) ?? 1) - 1;
        if (left > 0) this.runningPerWorkspace.set(waiter.workspaceId, left);
        else this.runningPerWorkspace.delete(waiter.workspaceId);
        this.grantFree();
      });
    }
  }
}
