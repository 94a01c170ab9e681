// What /api/volumes answers, as the volumes pages use it (src/volumes/model.ts and backup-model.ts have the whole schemas).
import type { BackupRow } from "../../components/backups";

export interface Volume {
  id: string;
  name: string;
  appId: string | null;
  appName: string | null;
  detached: boolean;
  mountPath: string;
  machineId: string;
  sizeBytes: number | null;
  sizeMeasuredAt: string | null;
  createdAt: string;
}

export interface VolumeBackup extends BackupRow {
  sha256: string | null;
  verification: { status: string; files: number; directories: number; symlinks: number; otherEntries: number; fileBytes: number; error: string | null } | null;
}

export interface VolumeRestore {
  id: string;
  backupId: string;
  status: string;
  error: string | null;
  startedAt: string;
  finishedAt: string | null;
}

export const volumePath = (volumeId: string, rest = "") => `/api/volumes/${encodeURIComponent(volumeId)}${rest}`;
