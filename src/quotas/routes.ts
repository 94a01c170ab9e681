// Route of /api/organization/usage: the active workspace's use of each quota (./usage.ts measures it).
import { Elysia } from "elysia";
import type { Static } from "@sinclair/typebox";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { json, ref, responses } from "../http/responses";
import { workspaceUsage } from "./usage";
import { WorkspaceUsageSchema } from "./model";

const MB = 1024 * 1024;

async function usageOf(ctx: ServerContext, workspaceId: string): Promise<Static<typeof WorkspaceUsageSchema>> {
  const counts = workspaceUsage(ctx.db, workspaceId);
  const quotas = ctx.config.quotas;
  const disk = await ctx.apps.disk.bytesByKind(workspaceId);
  return {
    apps: { used: counts.apps, limit: quotas.apps },
    databases: { used: counts.databases, limit: quotas.databases },
    memoryMB: { used: counts.memoryMB, limit: quotas.memoryMB },
    dbPorts: { used: counts.dbPorts, limit: quotas.dbPorts },
    disk: {
      usedBytes: disk.appSources + disk.buildLogs + disk.backups + disk.volumes + disk.inProgress,
      limitBytes: quotas.diskMB * MB,
      appSourcesBytes: disk.appSources,
      buildLogsBytes: disk.buildLogs,
      backupsBytes: disk.backups,
      volumesBytes: disk.volumes,
      inProgressBytes: disk.inProgress,
    },
  };
}

export function quotaRoutes(ctx: ServerContext) {
  return new Elysia({ prefix: "/api/organization", tags: ["Organization"] })
    .use(authPlugin(ctx))
    .get("/usage", async ({ principal }) => ok({ usage: await usageOf(ctx, principal.workspaceId) }), {
      auth: true,
      detail: {
        operationId: "getWorkspaceUsage",
        responses: responses({ 200: json("The workspace's use of its quotas", { usage: ref(WorkspaceUsageSchema) }) }),
        summary: "The workspace's use of its quotas",
        description:
          "Every role. Answers `usage`: for apps, databases, memoryMB and dbPorts what is `used` and the `limit`; for the " +
          "disk, `usedBytes` and `limitBytes` (PLATFORM_QUOTA_DISK_MB) and what the use is made of: app source trees (every " +
          "file and folder counted at least 4 KiB), build logs, backup files, volumes (at their last measured size), and uploads or backups being written. A " +
          "change that would take a use past its limit is refused with 409 `QUOTA_EXCEEDED`.",
      },
    });
}
