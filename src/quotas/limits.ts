// Per-workspace quotas, the pure part: whether a change fits, and the refusal a user reads when
// it does not (409 QUOTA_EXCEEDED naming the quota, the use and the setting that raises it).
import type { WorkspaceQuotas } from "../config";
import { ApiError } from "../http/errors";

export type QuotaName = keyof WorkspaceQuotas;

const MB = 1024 * 1024;

const DESCRIPTIONS: Record<QuotaName, { title: string; setting: string; amount: (value: number) => string }> = {
  apps: { title: "apps", setting: "PLATFORM_QUOTA_APPS", amount: (value) => `${value} app${value === 1 ? "" : "s"}` },
  databases: { title: "databases", setting: "PLATFORM_QUOTA_DATABASES", amount: (value) => `${value} database${value === 1 ? "" : "s"}` },
  memoryMB: { title: "memory", setting: "PLATFORM_QUOTA_MEMORY_MB", amount: (value) => `${value} MB` },
  dbPorts: { title: "database host ports", setting: "PLATFORM_QUOTA_DB_PORTS", amount: (value) => `${value} port${value === 1 ? "" : "s"}` },
  diskMB: { title: "disk", setting: "PLATFORM_QUOTA_DISK_MB", amount: diskAmount },
  backupsPerDatabase: {
    title: "manual and uploaded backups of one database",
    setting: "PLATFORM_QUOTA_BACKUPS_PER_DATABASE",
    amount: (value) => `${value} backup${value === 1 ? "" : "s"}`,
  },
};

/**
 * Null when `growth` more fits next to `used` under `limit`, else the refusal's message. A change
 * that does not grow (growth <= 0) always fits, so a workspace above a lowered quota can shrink.
 * Amounts are in the quota's unit (count or MB).
 */
export function quotaRefusal(quota: QuotaName, used: number, growth: number, limit: number): string | null {
  if (growth <= 0 || used + growth <= limit) return null;
  const { title, setting, amount } = DESCRIPTIONS[quota];
  return (
    `Workspace quota for ${title} exceeded: ${amount(used)} in use of ${amount(limit)}, ` +
    `this needs ${amount(growth)} more (the platform's operator can raise ${setting})`
  );
}

export function assertWithinQuota(quota: QuotaName, used: number, growth: number, limit: number): void {
  const refusal = quotaRefusal(quota, used, growth, limit);
  if (refusal) throw new ApiError("QUOTA_EXCEEDED", refusal);
}

export function bytesToMB(bytes: number): number {
  return bytes / MB;
}

/** MB measured from bytes, with one decimal; under 0.1 MB in KB, so that one small file never reads "0 MB". */
function diskAmount(value: number): string {
  if (value > 0 && value < 0.1) return `${Math.ceil(value * 1024)} KB`;
  return `${Math.round(value * 10) / 10} MB`;
}
