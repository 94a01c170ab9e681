// How many uploads of one workspace are handled at once: each may extract up to the uncompressed
// limit to disk, so a workspace cannot fill it by sending many in parallel.
import { ApiError } from "../http/errors";

/** Uploads of one workspace handled at once: each may extract up to the uncompressed limit to disk. */
export const UPLOADS_PER_WORKSPACE = 2;

export class UploadSlots {
  private readonly inUse = new Map<string, number>();

  constructor(private readonly perWorkspace: number) {}

  /** Takes a slot or refuses with 429; returns the function that gives it back. */
  take(workspaceId: string): () => void {
    const used = this.inUse.get(workspaceId) ?? 0;
    if (used >= this.perWorkspace) {
      throw new ApiError("RATE_LIMITED", `At most ${this.perWorkspace} uploads of a workspace are handled at once`, { "Retry-After": "5" });
    }
    this.inUse.set(workspaceId, used + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inUse.get(workspaceId) ?? 1) - 1;
      if (left > 0) this.inUse.set(workspaceId, left);
      else this.inUse.delete(workspaceId);
    };
  }
}
