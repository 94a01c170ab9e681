// Routes of /api/machines: the Docker engines the platform places apps and databases on.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { json, ref, responses } from "../http/responses";
import { MachineSchema, ReconcileReportSchema, machineIdParams } from "./model";
import { reportForWorkspace } from "./service";

export function machinesRoutes(ctx: ServerContext) {
  return new Elysia({ prefix: "/api/machines", tags: ["Machines"] })
    .use(authPlugin(ctx))
    .get(
      "/",
      async ({ principal }) =>
        ok({ machines: await ctx.machines.describe(), reconcile: reportForWorkspace(ctx.reconciler.lastReport, principal.workspaceId) }),
      {
        auth: true,
        detail: {
          operationId: "listMachines",
          responses: responses({
            200: json("The machines, and the last reconciliation", {
              machines: t.Array(ref(MachineSchema)),
              reconcile: t.Nullable(ref(ReconcileReportSchema), { description: "null until the first reconciliation has run" }),
            }),
          }),
          summary: "List machines",
          description:
            "Answers `machines`: id (use it as `machineId`; `local` is the platform's own engine and the automatic choice), " +
            "status (`online` or `unreachable`), dockerVersion, apiVersion; and `reconcile`, the last reconciliation: " +
            "containers of this workspace that carry the platform's label but belong to no known app or database (reported, never deleted), " +
            "and those of a known app that were neither serving nor being released (removed; a release or restart the platform was killed in leaves them).",
        },
      },
    )
    .get("/:machineId", async ({ params }) => ok({ machine: await ctx.machines.check(params.machineId) }), {
      auth: true,
      params: machineIdParams,
      detail: {
        operationId: "getMachine",
        responses: responses({ 200: json("The machine: its engine answered", { machine: ref(MachineSchema) }) }, "NOT_FOUND", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT"),
        summary: "Check one machine's engine",
        description:
          "Answers `machine` when its engine answers; 503 `DOCKER_UNAVAILABLE` with `Retry-After` while it does not, 504 " +
          "`DOCKER_TIMEOUT` when it leaves the call unanswered.",
      },
    });
}
