// The services of volume backups (backups, restores, schedules), made once per server beside the
// other domain services (src/http/context.ts), with the recovery of what the last stop cut off begun.
import { join } from "node:path";
import type { Config } from "../config";
import type { PlatformDb } from "../db";
import type { Machines } from "../machines/service";
import type { WorkspaceDisk } from "../quotas/usage";
import { BackupStorage } from "../backups/storage";
import { S3BackupCopies } from "../backups/copies";
import { BackupFiles } from "../backups/files";
import type { Volumes } from "./service";
import { VolumeBackups } from "./backups";
import { VolumeRestores, type VolumeApps } from "./backup-restore";
import { VolumeBackupSchedules } from "./backup-schedules";

export interface VolumeBackupServices {
  backups: VolumeBackups;
  restores: VolumeRestores;
  schedules: VolumeBackupSchedules;
}

export function createVolumeBackupServices(deps: { db: PlatformDb; config: Config; machines: Machines; disk: WorkspaceDisk; volumes: Volumes; apps: VolumeApps }): VolumeBackupServices {
  const { db, config, machines, disk, volumes } = deps;
  const storage = new BackupStorage(join(config.dataDir, "backups"));
  const bucket = config.backups.s3;
  const files = new BackupFiles(storage, bucket ? new S3BackupCopies(bucket, storage) : null);
  const backups = new VolumeBackups({ db, machines, config, files, disk, volumes });
  const restores = new VolumeRestores(backups, deps.apps);
  const schedules = new VolumeBackupSchedules(backups);
  // Schedules start once interrupted backups and restores are settled: a run begun earlier would race them.
  backups.track(
    backups
      .closeInterrupted()
      .then(() => restores.recoverInterrupted())
      .catch((error) => console.error("[volume backups] settling what the last stop cut off failed:", error))
      .finally(() => schedules.start()),
  );
  return { backups, restores, schedules };
}
