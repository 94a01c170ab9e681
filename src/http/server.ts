// Builds the HTTP server: every route module, the OpenAPI docs, the dashboard's static files,
// the screening of request heads and bodies, and the one global error handler that turns every failure
// into the error envelope.
import { Elysia } from "elysia";
import type { ServerContext } from "./context";
import { ApiError, diskFull, isDiskFull } from "./errors";
import { errorResponse } from "./envelope";
import { screenBody } from "./body-guard";
import { raiseServerHeadLimit, refuseLargeHead } from "./request-head";
import { bodySchemasOf, conformedBody, type BodySchemas } from "./body-shape";
import { docsRoutes } from "../docs";
import { dashboardRoutes } from "../dashboard";
import { platformRoutes } from "../platform";
import { authRoutes } from "../auth";
import { apiKeysRoutes } from "../api-keys";
import { organizationRoutes } from "../organization";
import { quotaRoutes } from "../quotas/routes";
import { machinesRoutes } from "../machines";
import { databasesRoutes } from "../databases";
import { volumeBackupRoutes } from "../volumes/backup-routes";
import { appsRoutes } from "../apps";
import { registriesRoutes } from "../registries";
import { imageDeployRoutes } from "../apps/images/routes";
import { appFilesRoutes } from "../apps/files/routes";
import { repositoryRoutes } from "../apps/repository/routes";
import { healthRoutes } from "../apps/health/routes";
import { webhooksRoutes } from "../webhooks/routes";
import { appWebhookRoutes } from "../webhooks/app-routes";
import { githubAppRoutes } from "../git/routes";
import { appDomainsRoutes } from "../apps/domains/routes";
import { buildsRoutes } from "../apps/builds-routes";
import { appHistoryRoutes } from "../apps/history";
import { volumesRoutes } from "../volumes";

/** "body.name: Expected string length greater or equal to 1" — names the field at fault. */
function validationMessage(error: any): string {
  const where = error.type ?? "request";
  const first = Array.isArray(error.all) ? error.all[0] : undefined;
  if (!first) return `Invalid ${where}`;
  const field = String(first.path ?? "").replace(/^\//, "").replaceAll("/", ".") || "(root)";
  const detail = first.schema?.description && first.message?.startsWith("Expected union") ? first.schema.description : first.message;
  return `Invalid ${where} field '${field}': ${detail ?? first.summary ?? "invalid value"}`;
}

/**
 * Bun closes a connection silent for this long (its default, 10 s, cut slow requests). Long work
 * answers at once and runs in the background; what may still be slow is an upload's check after
 * its last byte (extracting a large archive) and the engine answering a stop or a removal.
 * Followed logs send a heartbeat well within it (./streams.ts). Bun allows at most 255 s.
 */
const IDLE_TIMEOUT_SECONDS = 120;

/**
 * The parsed body, read and written under a key Elysia's analysis of hook sources does not see: a
 * hook naming `context.body` makes every route parse its body, bodiless ones and those that read
 * the request themselves included. Made at run time, so that no minifier folds it into `.body`.
 */
const PARSED_BODY = ["bo", "dy"].join("") as "body";

export function createServer(ctx: ServerContext) {
  raiseServerHeadLimit();
  // Filled once every route is registered, below.
  let bodySchemas: BodySchemas = new Map();
  // Bun's own body limit would answer with an empty 413; the limits are enforced by ./body-guard.ts
  // and by the upload reader, both with the error envelope and its code. `typebox` cleans bodies
  // without converting them: the default reads the text "abc" where an object is expected as
  // {"0":"a","1":"b","2":"c"}.
  const server = new Elysia({ normalize: "typebox", serve: { maxRequestBodySize: Number.MAX_SAFE_INTEGER, idleTimeout: IDLE_TIMEOUT_SECONDS } })
    // Around the whole handler, so that it runs before Elysia parses anything (./body-guard.ts).
    .wrap((handle) => (request: Request) => {
      const refusal = refuseLargeHead(request) ?? screenBody(request);
      if (refusal === undefined) return handle(request);
      if (refusal instanceof Response) return refusal;
      return refusal.then((refused) => refused ?? handle(request));
    })
    // Before validation (./body-shape.ts); before authentication too, as a body that is not JSON is.
    .onTransform({ as: "global" }, (context) => {
      const schema = bodySchemas.get(`${context.request.method} ${context.route}`);
      if (schema) context[PARSED_BODY] = conformedBody(schema, context[PARSED_BODY], context.request.headers.get("content-type"));
    })
    .onError({ as: "global" }, ({ code, error, request }) => {
      if (isDiskFull(error) || (error instanceof ApiError && error.code === "INSUFFICIENT_STORAGE")) {
        // Measured now, so that `disk.low` is raised at once if the timer has not seen it yet.
        ctx.disk.refresh();
      }
      if (error instanceof ApiError) return errorResponse(error.code, error.message, error.headers);
      switch (code) {
        case "VALIDATION":
          return errorResponse("VALIDATION_FAILED", validationMessage(error));
        case "PARSE":
          return errorResponse("INVALID_JSON", "Request body could not be parsed: send valid JSON with Content-Type: application/json");
        case "NOT_FOUND":
          return errorResponse("NOT_FOUND", `No route for ${request.method} ${new URL(request.url).pathname}`);
        default: {
          const status = (error as { status?: unknown })?.status;
          if (status === 413) return errorResponse("PAYLOAD_TOO_LARGE", "Request body is too large");
          if (isDiskFull(error)) {
            // Where it was not caught closer to the write, the request is what was being written.
            const refusal = diskFull(`what ${request.method} ${new URL(request.url).pathname} writes`);
            return errorResponse(refusal.code, refusal.message);
          }
          console.error(`[error] ${request.method} ${new URL(request.url).pathname}:`, error);
          return errorResponse("INTERNAL_ERROR", "Internal error");
        }
      }
    })
    .use(docsRoutes())
    .use(dashboardRoutes())
    .use(platformRoutes(ctx))
    .use(authRoutes(ctx))
    .use(apiKeysRoutes(ctx))
    .use(organizationRoutes(ctx))
    .use(quotaRoutes(ctx))
    .use(machinesRoutes(ctx))
    .use(databasesRoutes(ctx))
    .use(volumeBackupRoutes(ctx))
    .use(appsRoutes(ctx))
    .use(imageDeployRoutes(ctx))
    .use(buildsRoutes(ctx))
    .use(appFilesRoutes(ctx))
    .use(repositoryRoutes(ctx))
    .use(healthRoutes(ctx))
    .use(appDomainsRoutes(ctx))
    .use(webhooksRoutes(ctx))
    .use(appWebhookRoutes(ctx))
    .use(githubAppRoutes(ctx))
    .use(appHistoryRoutes(ctx))
    .use(registriesRoutes(ctx))
    .use(volumesRoutes(ctx));
  bodySchemas = bodySchemasOf(server.routes);
  return server;
}

export type PlatformServer = ReturnType<typeof createServer>;
