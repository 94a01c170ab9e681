// Routes of /api/machines: the Docker engines the platform places apps and databases on.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { ApiError } from "../http/errors";
import { LABEL_WORKSPACE } from "../docker/container-spec";

export function machinesRoutes(ctx: ServerContext) {
  return new Elysia({ prefix: "/api/machines", tags: ["Machines"] })
    .use(authPlugin(ctx))
    .get(
      "/",
      async ({ principal }) => {
        const report = ctx.reconciler.lastReport;
        return ok({
          machines: await ctx.machines.describe(),
          reconcile: report && {
            at: report.at,
            unreachableMachines: report.unreachableMachines,
            // Only this workspace's strays: other workspaces' container names are theirs to see.
            unknownContainers: report.unknownContainers
              .filter((container) => container.labels[LABEL_WORKSPACE] === principal.workspaceId)
              .map(({ machineId, id, name, state }) => ({ machineId, id, name, state })),
          },
        });
      },
      {
        auth: true,
        detail: {
          operationId: "listMachines",
          summary: "List machines",
          description:
            "Answers `machines`: id (use it as `machineId`; `local` is the platform's own engine and the automatic choice), " +
            "status (`online` or `unreachable`), dockerVersion, apiVersion; and `reconcile`, the last reconciliation: " +
            "containers of this workspace that carry the platform's label but belong to no known app or database (reported, never deleted).",
        },
      },
    )
    .get(
      "/:machineId",
      async ({ params }) => {
        if (!ctx.machines.ids().includes(params.machineId)) throw new ApiError("NOT_FOUND", `Machine '${params.machineId}' not found`);
        const driver = ctx.machines.get(params.machineId);
        const { version, apiVersion } = await driver.ping();
        return ok({ machine: { id: driver.machineId, status: "online", dockerVersion: version, apiVersion } });
      },
      {
        auth: true,
        params: t.Object({ machineId: t.String({ minLength: 1, maxLength: 64 }) }),
        detail: {
          operationId: "getMachine",
          summary: "Check one machine's engine",
          description: "Answers `machine` when its engine answers; 503 `DOCKER_UNAVAILABLE` with `Retry-After` while it does not.",
        },
      },
    );
}
