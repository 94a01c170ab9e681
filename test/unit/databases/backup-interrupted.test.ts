// Backups cut off by a stop or crash, closed at the next start (src/databases/backups.ts,
// closeInterrupted), on a real SQLite file and backup storage: start-up waits for the local check
// of each recorded file, not for its copies to S3 (retries, stall timeouts), which go on behind.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { databaseBackups } from "../../../src/db/schema";
import { DatabaseBackups } from "../../../src/databases/backups";
import type { BackupCopy, BackupDestinations } from "../../../src/backups/model";
import { BackupStorage } from "../../../src/backups/storage";
import { WorkspaceDisk } from "../../../src/quotas/usage";
import { serviceWithOneDatabase } from "../../helpers/database-service";

/** A remote destination whose copies hang until released, as an S3 endpoint that stalls. */
class StalledDestination implements BackupDestinations {
  private release!: (copies: BackupCopy[]) => void;
  readonly released = new Promise<BackupCopy[]>((resolve) => (this.release = resolve));
  copies = 0;
  copy() {
    this.copies++;
    return this.released;
  }
  finish(copies: BackupCopy[]) {
    this.release(copies);
  }
  async fetchMissing() {
    return false;
  }
  async remove() {}
}

test("closing an interrupted backup at start waits for its local check, not for its copies to S3", async () => {
  const { dataDir, db, service } = serviceWithOneDatabase();
  const storage = new BackupStorage(join(dataDir, "backups"));
  const destination = new StalledDestination();
  const backups = new DatabaseBackups(service, storage, destination, new WorkspaceDisk());
  // Cut off after its file took its name, size and SHA-256 recorded: still `running`.
  const row = backups.newRow(service.find("ws_1", "db_1"), "manual", null);
  const stored = await storage.write(row.storageKey, new Blob(["SELECT 1;\n"]).stream());
  backups.recordStored(row.id, stored);
  const statusOf = () => db.select().from(databaseBackups).where(eq(databaseBackups.id, row.id)).get()!.status;

  const closed = await Promise.race([backups.closeInterrupted().then(() => "closed"), Bun.sleep(3_000).then(() => "waiting on S3")]);
  expect(closed).toBe("closed");
  expect(destination.copies).toBe(1);
  expect(statusOf()).toBe("running");

  destination.finish([{ location: "s3://bucket/key", status: "completed" } as BackupCopy]);
  const deadline = Date.now() + 5_000;
  while (statusOf() === "running" && Date.now() < deadline) await Bun.sleep(10);
  expect(statusOf()).toBe("completed");
});
