// Schemas of GET /api/organization/usage: what the workspace uses of each quota, as named schemas
// of the OpenAPI document.
import { t } from "elysia";
import { resource } from "../http/responses";

const amount = (unit: string) =>
  t.Object({ used: t.Number({ minimum: 0, description: `In use, in ${unit}` }), limit: t.Integer({ minimum: 0, description: "The quota (its PLATFORM_QUOTA_* setting)" }) });

const bytes = (description: string) => t.Integer({ minimum: 0, description });

export const WorkspaceUsageSchema = resource(
  "WorkspaceUsage",
  {
    apps: amount("apps"),
    databases: amount("databases"),
    memoryMB: amount("MB: the memoryMB of the apps and databases, stopped ones included"),
    dbPorts: amount("databases with a host port"),
    disk: t.Object({
      usedBytes: bytes("Everything below, summed: what PLATFORM_QUOTA_DISK_MB is checked against"),
      limitBytes: bytes("PLATFORM_QUOTA_DISK_MB in bytes"),
      appSourcesBytes: bytes("The apps' source trees, every file and folder counted at least 4 KiB"),
      buildLogsBytes: bytes("The apps' build logs"),
      backupsBytes: bytes("The databases' backup files (failed backups keep none)"),
      volumesBytes: bytes("The apps' volumes, at their last measured size"),
      inProgressBytes: bytes("Uploads and backups being written now"),
    }),
  },
  "What the workspace uses of each of its quotas, and what its disk use is made of.",
);

export const QUOTA_RESOURCES = [WorkspaceUsageSchema];
