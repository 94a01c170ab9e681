// What /api/databases answers, as the databases pages use it (src/databases/model.ts has the whole schemas).
import type { BackupRow, BackupSchedule } from "../../components/backups";

export const ENGINES: [value: string, text: string, defaultVersion: string][] = [
  ["postgresql", "PostgreSQL", "17"],
  ["mysql", "MySQL", "8.4"],
  ["mongodb", "MongoDB", "8"],
  ["redis", "Redis", "7"],
];

export const engineName = (engine: string) => ENGINES.find(([value]) => value === engine)?.[1] ?? engine;

export interface Database {
  id: string;
  name: string;
  engine: string;
  version: string;
  status: string;
  statusReason: string | null;
  memoryMB: number;
  cpus: number;
  storageGB: number;
  username: string;
  databaseName: string;
  host: string;
  port: number | null;
  internalHost: string;
  internalPort: number;
  connectionString: string | null;
  internalConnectionString: string;
  createdAt: string;
  storage?: { allowanceBytes: number; usedBytes: number | null; overAllowance: boolean; warning: string | null };
}

export interface BackupSummary {
  lastCompletedAt: string | null;
  schedule: BackupSchedule | null;
  warning: string | null;
}

export interface Backup extends BackupRow {
  verification: { status: string; checks: { name: string; count: number }[]; error: string | null } | null;
}

export interface Operation {
  id: string;
  type: string;
  status: string;
  error: string | null;
  actor: { type: string; id: string | null };
  backupId: string | null;
  startedAt: string;
  finishedAt: string | null;
}

export interface DatabaseStats {
  running: boolean;
  cpuPercent: number;
  memoryUsedBytes: number;
  memoryLimitBytes: number;
  networkRxBytes: number;
  networkTxBytes: number;
}

export const databasePath = (databaseId: string, rest = "") => `/api/databases/${encodeURIComponent(databaseId)}${rest}`;
