// Schemas of /api/volumes/{volumeId}/backups, /restore(s) and /backup-schedule.
import { t } from "elysia";
import { oneOf, ref, resource, timestamp } from "../http/responses";
import { BackupCopySchema, SCHEDULE_FIELDS } from "../backups/model";

export const VOLUME_BACKUP_TYPES = ["manual", "scheduled", "pre-restore"] as const;
export type VolumeBackupType = (typeof VOLUME_BACKUP_TYPES)[number];
export const VOLUME_BACKUP_STATUSES = ["running", "completed", "failed"] as const;
export const RESTORE_STATUSES = ["pending", "running", "succeeded", "failed"] as const;

export const VolumeArchiveVerificationSchema = resource(
  "VolumeArchiveVerification",
  {
    status: oneOf(["running", "passed", "failed"] as const, "`running` -> `passed` | `failed`"),
    files: t.Integer({ minimum: 0, description: "Regular files in the archive" }),
    directories: t.Integer({ minimum: 0 }),
    symlinks: t.Integer({ minimum: 0 }),
    otherEntries: t.Integer({ minimum: 0, description: "Hard links, devices, fifos" }),
    fileBytes: t.Integer({ minimum: 0, description: "Bytes of the files' content" }),
    error: t.Nullable(t.String({ description: "Why it failed: the file's checksum, its gzip, or the tar inside" })),
    startedAt: timestamp(),
    finishedAt: t.Nullable(timestamp()),
  },
  "The last verify of a volume backup: its file read back, gunzipped and walked to the end of its tar.",
);

export const VolumeBackupSchema = resource(
  "VolumeBackup",
  {
    id: t.String(),
    volumeId: t.String(),
    machineId: t.String({ description: "The machine whose engine held the volume" }),
    type: oneOf(VOLUME_BACKUP_TYPES, "`manual`, `scheduled`, or `pre-restore` (made by a restore before it replaced the content)"),
    status: oneOf(VOLUME_BACKUP_STATUSES, "`running` -> `completed` | `failed`"),
    sizeBytes: t.Integer({ minimum: 0, description: "Of the gzip file" }),
    sha256: t.Nullable(t.String({ description: "Of the gzip file, computed while it was written" })),
    archiveBytes: t.Nullable(t.Integer({ minimum: 0, description: "Of the tar inside, before compression" })),
    error: t.Nullable(t.String()),
    verifiedAt: t.Nullable(timestamp("When a verify last passed")),
    verification: t.Nullable(ref(VolumeArchiveVerificationSchema)),
    copies: t.Array(ref(BackupCopySchema), { description: "Its copies at remote destinations; empty when none is configured" }),
    createdAt: timestamp(),
    finishedAt: t.Nullable(timestamp()),
  },
  "A backup of a volume's content: a tar made by the engine, gzipped, with its SHA-256.",
);

export const VolumeRestoreSchema = resource(
  "VolumeRestore",
  {
    id: t.String(),
    volumeId: t.String(),
    backupId: t.String(),
    status: oneOf(RESTORE_STATUSES, "`pending` -> `running` -> `succeeded` | `failed`"),
    error: t.Nullable(t.String({ description: "Why it failed; the volume then still holds its old content" })),
    actor: t.Object({ type: t.String(), id: t.Nullable(t.String()) }),
    stoppedAppId: t.Nullable(t.String({ description: "The app stopped for the restore and started again after it" })),
    startedAt: timestamp(),
    finishedAt: t.Nullable(timestamp()),
  },
  "A restore of a volume from one of its backups.",
);

export const VolumeBackupScheduleSchema = resource(
  "VolumeBackupSchedule",
  {
    volumeId: t.String(),
    ...SCHEDULE_FIELDS,
    createdAt: timestamp("When the volume first got a schedule"),
    updatedAt: timestamp("When the schedule was last set"),
  },
  "A volume's backup schedule (times in UTC) and its retention.",
);

export const volumeBackupParams = t.Object({ volumeId: t.String({ minLength: 1, maxLength: 64 }), backupId: t.String({ minLength: 1, maxLength: 64 }) });
export const volumeRestoreParams = t.Object({ volumeId: t.String({ minLength: 1, maxLength: 64 }), restoreId: t.String({ minLength: 1, maxLength: 64 }) });
export const volumeRestoreBody = t.Object({ backupId: t.String({ minLength: 1, maxLength: 64, description: "A completed backup of this volume" }) });

export const VOLUME_BACKUP_RESOURCES = [VolumeArchiveVerificationSchema, VolumeBackupSchema, VolumeRestoreSchema, VolumeBackupScheduleSchema];
