// GET /api/apps/{appId}/health: the app's health check and its recent probes.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../../http/context";
import { authPlugin } from "../../http/auth";
import { ok } from "../../http/envelope";
import { json, ref, responses } from "../../http/responses";
import { appIdParams } from "../model";
import { AppHealthSchema, appHealthView } from "./settings";

export function healthRoutes(ctx: ServerContext) {
  const service = ctx.apps;
  return new Elysia({ prefix: "/api/apps", tags: ["Apps"] })
    .use(authPlugin(ctx))
    .get(
      "/:appId/health",
      ({ principal, params }) => {
        const app = service.get(principal.workspaceId, params.appId);
        return ok({ health: appHealthView(app, service.health.recent(app.id)) });
      },
      {
        auth: true,
        params: appIdParams,
        detail: {
          operationId: "getAppHealth",
          responses: responses({ 200: json("The app's health", { health: ref(AppHealthSchema) }) }, "NOT_FOUND"),
          summary: "Health check and recent probes",
          description:
            "`health.healthCheck` (as the app's settings set it), `lastProbe`, `consecutiveFailures` and `probes`: the last probes " +
            "of the serving container, newest first (status `pass`/`fail`, time, HTTP status or error, latency), kept in memory " +
            "(none after a platform restart until the next probe). A running app is probed every `intervalSeconds`; " +
            "`unhealthyThreshold` failures in a row make it `unhealthy`.",
        },
      },
    );
}
