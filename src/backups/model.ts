// What backups of any kind share (database dumps, volume archives): the record of a copy at a
// remote destination, and the interface of those destinations (./copies.ts).
import { t } from "elysia";
import type { Static } from "@sinclair/typebox";
import { oneOf, resource, timestamp } from "../http/responses";

export const COPY_STATUSES = ["uploading", "completed", "failed"] as const;

export const BackupCopySchema = resource(
  "BackupCopy",
  {
    destination: oneOf(["s3"] as const, "Where the copy is: `s3`, the PLATFORM_BACKUP_S3_* bucket"),
    location: t.String({ description: "`s3://bucket/key`" }),
    status: oneOf(COPY_STATUSES, "`uploading` -> `completed` (read back, checksum confirmed) | `failed`"),
    error: t.Nullable(t.String({ description: "Why the copy failed; never holds credentials" })),
    confirmedAt: t.Nullable(timestamp()),
  },
  "A copy of a backup's file at a remote destination.",
);

export type BackupCopy = Static<typeof BackupCopySchema>;

/**
 * Remote destinations that keep a copy of every backup's file (./copies.ts). A backup is
 * `completed` only once every destination has its copy with the checksum confirmed.
 */
export interface BackupDestinations {
  /** Copies the local file of `key` to every destination and reads each copy back to confirm `sha256`. */
  copy(key: string, sha256: string): Promise<BackupCopy[]>;
  /** Brings the file of `key` back from a completed copy when it is missing locally; false when no copy could. */
  fetchMissing(key: string, sha256: string, copies: BackupCopy[]): Promise<boolean>;
  /** Removes the copies (a backup deleted, or failed after some copies were made). */
  remove(copies: BackupCopy[]): Promise<void>;
}
