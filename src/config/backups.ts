// Backup settings: upload and timeout limits, and the optional S3 copy (PLATFORM_BACKUP_*).
import { integerSetting, textSetting } from "./parse";

/** An S3-compatible bucket that receives a copy of every backup. */
export interface BackupBucket {
  endpoint: string;
  region: string;
  bucket: string;
  /** Put before every object key ("" or ending in "/"). */
  prefix: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Most seconds one request to the bucket may go without progress before the copy fails. */
  stallSeconds: number;
}

export interface BackupSettings {
  /** The largest dump `POST .../backups/upload` accepts, as sent (gzip or not). */
  uploadMaxBytes: number;
  /** A dump or a load (restore, verify) whose command moves no byte this long is stopped. */
  idleTimeoutSeconds: number;
  /** A load may run idleTimeoutSeconds plus this per MiB of its backup file, in all; past it, it is stopped. */
  loadSecondsPerMB: number;
  /** The longest a volume's archive (backup) or its extraction (restore) may take in all. */
  volumeTimeoutSeconds: number;
  /** Null unless PLATFORM_BACKUP_S3_BUCKET is set. */
  s3: BackupBucket | null;
}

/** The PLATFORM_BACKUP_S3_* settings; all of bucket, access key and secret, or none. */
export function backupBucketSetting(env: Record<string, string | undefined>): BackupBucket | null {
  const bucket = env.PLATFORM_BACKUP_S3_BUCKET;
  if (!bucket) return null;
  const accessKeyId = env.PLATFORM_BACKUP_S3_ACCESS_KEY_ID;
  const secretAccessKey = env.PLATFORM_BACKUP_S3_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw new Error("PLATFORM_BACKUP_S3_BUCKET needs PLATFORM_BACKUP_S3_ACCESS_KEY_ID and PLATFORM_BACKUP_S3_SECRET_ACCESS_KEY");
  }
  const prefix = textSetting(env, "PLATFORM_BACKUP_S3_PREFIX", "");
  return {
    endpoint: textSetting(env, "PLATFORM_BACKUP_S3_ENDPOINT", "https://s3.amazonaws.com"),
    region: textSetting(env, "PLATFORM_BACKUP_S3_REGION", "us-east-1"),
    bucket,
    prefix: prefix === "" || prefix.endsWith("/") ? prefix : `${prefix}/`,
    accessKeyId,
    secretAccessKey,
    stallSeconds: integerSetting(env, "PLATFORM_BACKUP_S3_STALL_SECONDS", 120, 1),
  };
}
