// Builds the HTTP server: every route module, the OpenAPI docs, the dashboard's static files,
// and the one global error handler that turns every failure into the error envelope.
import { Elysia } from "elysia";
import type { ServerContext } from "./context";
import { ApiError, ERROR_STATUS, type ErrorCode } from "./errors";
import { errorBody } from "./envelope";
import { docsRoutes } from "../docs";
import { dashboardRoutes } from "../dashboard";
import { platformRoutes } from "../platform";
import { authRoutes } from "../auth";
import { apiKeysRoutes } from "../api-keys";
import { organizationRoutes } from "../organization";
import { machinesRoutes } from "../machines";
import { databasesRoutes } from "../databases";
import { appsRoutes } from "../apps";

function errorResponse(code: ErrorCode, message: string, headers: Record<string, string> = {}) {
  return new Response(JSON.stringify(errorBody(message, code)), {
    status: ERROR_STATUS[code],
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/** "body.name: Expected string length greater or equal to 1" — names the field at fault. */
function validationMessage(error: any): string {
  const where = error.type ?? "request";
  const first = Array.isArray(error.all) ? error.all[0] : undefined;
  if (!first) return `Invalid ${where}`;
  const field = String(first.path ?? "").replace(/^\//, "").replaceAll("/", ".") || "(root)";
  const detail = first.schema?.description && first.message?.startsWith("Expected union") ? first.schema.description : first.message;
  return `Invalid ${where} field '${field}': ${detail ?? first.summary ?? "invalid value"}`;
}

export function createServer(ctx: ServerContext) {
  return new Elysia({ serve: { maxRequestBodySize: ctx.config.uploads.maxUploadBytes + 1024 * 1024 } })
    .onError({ as: "global" }, ({ code, error, request }) => {
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
    .use(machinesRoutes(ctx))
    .use(databasesRoutes(ctx))
    .use(appsRoutes(ctx));
}

export type PlatformServer = ReturnType<typeof createServer>;
