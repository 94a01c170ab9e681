// What every kind of backup (database dumps, volume archives) does with its file once it is whole
// on disk: copied to the remote destinations before it counts as completed, brought back from a
// copy when it is gone from the data dir, downloaded, and removed with its copies.
import { ApiError } from "../http/errors";
import type { BackupCopy, BackupDestinations } from "./model";
import type { BackupStorage } from "./storage";

/** What these steps read of a backup's row (database_backups and volume_backups rows fit). */
export interface BackupFileRecord {
  status: string;
  storageKey: string;
  sizeBytes: number;
  sha256: string | null;
  /** JSON list of BackupCopy. */
  copies: string | null;
}

export function copiesOf(row: Pick<BackupFileRecord, "copies">): BackupCopy[] {
  return row.copies === null ? [] : (JSON.parse(row.copies) as BackupCopy[]);
}

export class BackupFiles {
  constructor(
    readonly storage: BackupStorage,
    readonly destinations: BackupDestinations | null,
  ) {}

  /**
   * Copies the whole, checked file of `key` to every destination; `record` is given the copies
   * made (null when there is no destination). When one copy failed, the file and the other copies
   * are removed (a failed backup keeps no file anywhere) and it throws saying which copy failed.
   */
  async copy(key: string, sha256: string, record: (copies: BackupCopy[] | null) => void) {
    if (!this.destinations) return record(null);
    const copies = await this.destinations.copy(key, sha256);
    record(copies);
    const failed = copies.filter((copy) => copy.status !== "completed");
    if (!failed.length) return;
    await this.storage.remove(key);
    await this.destinations.remove(copies.filter((copy) => copy.status === "completed"));
    throw new Error(`the copy to ${failed.map((copy) => `${copy.location} failed: ${copy.error}`).join("; ")}`);
  }

  /**
   * The local file of a completed backup, brought back from a remote copy when it is gone from
   * the data dir; 409 BACKUP_NOT_READY unless completed, 410 BACKUP_FILE_MISSING when no copy has it.
   */
  async ensureLocal(row: BackupFileRecord) {
    if (row.status !== "completed") throw new ApiError("BACKUP_NOT_READY", `The backup is ${row.status}; only a completed backup can be used`);
    if (await this.storage.exists(row.storageKey)) return;
    if (this.destinations && row.sha256 && (await this.destinations.fetchMissing(row.storageKey, row.sha256, copiesOf(row)))) return;
    throw new ApiError("BACKUP_FILE_MISSING", "The backup's file is gone from the data dir and no remote copy could bring it back");
  }

  /** The file of a completed backup as a download, whole or one byte range (416 RANGE_NOT_SATISFIABLE for one outside it). */
  async download(row: BackupFileRecord, filename: string, range: string | null): Promise<Response> {
    await this.ensureLocal(row);
    const response = this.storage.download(row.storageKey, row.sizeBytes, filename, range);
    if (!response) throw new ApiError("RANGE_NOT_SATISFIABLE", `The range ${JSON.stringify(range)} is not within the file's ${row.sizeBytes} bytes`, { "content-range": `bytes */${row.sizeBytes}` });
    return response;
  }

  /** The file and its remote copies, gone. */
  async remove(row: Pick<BackupFileRecord, "storageKey" | "copies">) {
    await this.storage.remove(row.storageKey);
    if (this.destinations && row.copies) await this.destinations.remove(copiesOf(row));
  }
}
