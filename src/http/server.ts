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
import { quotaRoutes } from "../quotas/routes";
import { machinesRoutes } from "../machines";
import { databasesRoutes } from "../databases";
import { appsRoutes } from "../apps";
import { appFilesRoutes } from "../apps/files/routes";
import { repositoryRoutes } from "../apps/repository/routes";
import { webhooksRoutes } from "../webhooks/routes";
import { appWebhookRoutes } from "../webhooks/app-routes";
import { githubAppRoutes } from "../git/routes";
import { MAX_DELIVERY_BYTES } from "../webhooks/github";
import { appDomainsRoutes } from "../apps/domains/routes";
import { buildsRoutes } from "../apps/builds-routes";
import { appHistoryRoutes } from "../apps/history";

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

/** Every body but an upload's is a small JSON document. */
const MAX_JSON_BODY_BYTES = 1024 * 1024;
/** The uploads stream (through src/http/multipart.ts or straight to disk), and their routes enforce their own limits. */
const STREAMED_UPLOADS = [/^POST \/api\/apps\/deploy$/, /^POST \/api\/apps\/inspect-env$/, /^POST \/api\/databases\/[^/]+\/backups\/upload$/];
/** Webhook deliveries may be larger than other bodies (src/webhooks/github.ts says why), and their route reads them bounded. */
const WEBHOOK_DELIVERY = /^POST \/api\/webhooks\/github(\/[^/]+)?$/;

/**
 * Elysia parses a body before the routes' authentication runs, and the server's own limit is the
 * upload limit: without this an anonymous caller could have hundreds of MB held in memory. Runs
 * on the headers alone, before anything is read.
 */
function refuseOversizedBody(request: Request): Response | undefined {
  const length = request.headers.get("content-length");
  const chunked = length === null && request.headers.has("transfer-encoding");
  if (!chunked && (length === null || Number(length) <= MAX_JSON_BODY_BYTES)) return undefined;
  const path = new URL(request.url).pathname.replace(/\/+$/, "");
  const route = `${request.method} ${path}`;
  if (STREAMED_UPLOADS.some((upload) => upload.test(route))) return undefined;
  if (chunked) {
    return errorResponse("LENGTH_REQUIRED", "Send a Content-Length: request bodies without one (chunked) are refused, except for uploads");
  }
  const limit = WEBHOOK_DELIVERY.test(route) ? MAX_DELIVERY_BYTES : MAX_JSON_BODY_BYTES;
  if (Number(length) <= limit) return undefined;
  return errorResponse("PAYLOAD_TOO_LARGE", `Request body is larger than ${limit} bytes; only uploads may be larger`);
}

/**
 * Bun closes a connection silent for this long (its default, 10 s, cut slow requests). Long work
 * answers at once and runs in the background; what may still be slow is an upload's check after
 * its last byte (extracting a large archive) and the engine answering a stop or a removal.
 * Followed logs send a heartbeat well within it (./streams.ts). Bun allows at most 255 s.
 */
const IDLE_TIMEOUT_SECONDS = 120;

export function createServer(ctx: ServerContext) {
  // Bun's own body limit would answer with an empty 413; the limits are enforced above and by the
  // upload reader, both with the error envelope and its code.
  return new Elysia({ serve: { maxRequestBodySize: Number.MAX_SAFE_INTEGER, idleTimeout: IDLE_TIMEOUT_SECONDS } })
    .onRequest(({ request }) => refuseOversizedBody(request))
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
    .use(quotaRoutes(ctx))
    .use(machinesRoutes(ctx))
    .use(databasesRoutes(ctx))
    .use(appsRoutes(ctx))
    .use(buildsRoutes(ctx))
    .use(appFilesRoutes(ctx))
    .use(repositoryRoutes(ctx))
    .use(appDomainsRoutes(ctx))
    .use(webhooksRoutes(ctx))
    .use(appWebhookRoutes(ctx))
    .use(githubAppRoutes(ctx))
    .use(appHistoryRoutes(ctx));
}

export type PlatformServer = ReturnType<typeof createServer>;
