// The OpenAPI description (JSON at /api/docs/json) and its reference UI at /api/docs. The UI's
// script is embedded in the binary and served from here, so the docs work with no internet.
import { Elysia } from "elysia";
import { openapi } from "@elysiajs/openapi";
import { toOpenApi31 } from "./openapi-31";
import { withSharedErrors } from "./shared-errors";
import { RESOURCES } from "./resources";
import { ERROR, ERROR_CODE, RETRY_AFTER_HEADER, componentsOf } from "../http/responses";
import { MAX_BODY_DEPTH } from "../http/body-guard";
import { MAX_HEAD_BYTES, SERVER_HEAD_LIMIT_BYTES } from "../http/request-head";
import scalarBundlePath from "../../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };

const SCALAR_SCRIPT_PATH = "/api/docs/assets/scalar.js";
const SPEC_PATH = "/api/docs/json";

const DESCRIPTION = `Self-hosted application platform API.

Every JSON answer has \`success\`. Payload keys stand beside \`success\` and the same object is
repeated under \`data\`; each operation documents its payload, with resources as named schemas
(\`App\`, \`Database\`, \`ApiKey\`...). Errors are \`{ success: false, error, code }\` (schema
\`Error\`) with a stable \`code\` (schema \`ErrorCode\`, one HTTP status each); each operation lists,
per status, the codes it can answer. 429 and 503 answers carry \`Retry-After\` (seconds) when the
wait is known. A resource of another workspace is 404 \`NOT_FOUND\`, as if it did not exist.

Authenticate with \`Authorization: Bearer svc_...\` or, from the dashboard, the HttpOnly
\`platform_session\` cookie, named \`__Host-platform_session\` over HTTPS (state-changing cookie requests
must carry a same-host \`Origin\`; a request with two session cookies is 400 \`DUPLICATE_SESSION_COOKIE\`).
Workspace-scoped routes act in the key's workspace or the session's active organization; every
authenticated route also takes an optional \`workspaceId\` (or \`organizationId\`) query parameter
naming another workspace the caller's user belongs to (404 \`WORKSPACE_NOT_FOUND\` otherwise).
Each caller is rate limited (token bucket per key or user); failed authentication is rate limited
per client address (a valid key or session is never refused for its address's failures).

Request bodies are JSON of at most 1 MiB with a Content-Length (413 \`PAYLOAD_TOO_LARGE\`, or 411
\`LENGTH_REQUIRED\` for chunked bodies), except the two uploads (\`POST /api/apps/deploy\`,
\`POST /api/apps/inspect-env\`): multipart, streamed, up to \`uploadLimits.maxUploadBytes\` of
\`GET /api/platform/config\`.
No body may nest arrays and objects more than ${MAX_BODY_DEPTH} levels deep (the body's own object is
level 1; in forms, a field's JSON text counts from its field): 400 \`BODY_TOO_DEEP\`, on every
route, before authentication.
A body is an object of the documented fields (400 \`VALIDATION_FAILED\` for a bare value, \`null\` or an
array). Routes that take JSON also take the same fields as a URL-encoded or multipart form, each
read as its documented type: \`true\`/\`false\`, numbers, an empty field as \`null\` where a number may
be null, JSON text where an object is expected.
The request line and headers together may take ${MAX_HEAD_BYTES / 1024} KiB: past that, 431
\`HEADERS_TOO_LARGE\`; past ${SERVER_HEAD_LIMIT_BYTES / 1024} KiB the server closes the connection with a bare 431.

A single resource is answered under its own name (\`apiKey\`, \`app\`, \`database\`, \`operation\`...) and
lists under the plural. Timestamps are ISO 8601 strings.`;

const finished = new WeakMap<object, object>();

/**
 * The plugin's document made valid 3.1 (./openapi-31.ts) and given the errors every route shares
 * (./shared-errors.ts). The plugin hands out the same object until routes change, so each
 * generation is finished once.
 */
function finishedDocument(generated: object): object {
  let document = finished.get(generated);
  if (!document) {
    document = withSharedErrors(toOpenApi31(generated as Parameters<typeof withSharedErrors>[0]));
    finished.set(generated, document);
  }
  return document;
}

export function docsRoutes() {
  return new Elysia()
    // Registered before the plugin so that it applies to the plugin's route.
    .onAfterHandle(({ path, response }) => {
      if (path === SPEC_PATH && response && typeof response === "object") return finishedDocument(response);
    })
    .use(
      openapi({
        path: "/api/docs",
        specPath: SPEC_PATH,
        exclude: { paths: [SCALAR_SCRIPT_PATH] },
        documentation: {
          // No licence is stated for this project (package.json is private, the README names none); SPDX
          // names a licence outside its list `LicenseRef-...`.
          info: { title: "Platform API", version: "1.0.0", description: DESCRIPTION, license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" } },
          // Relative: the document describes the server that serves it, whatever its address.
          servers: [{ url: "/" }],
          components: {
            schemas: componentsOf([ERROR_CODE, ERROR, ...RESOURCES]),
            headers: { RetryAfter: RETRY_AFTER_HEADER },
            securitySchemes: {
              bearerAuth: { type: "http", scheme: "bearer", description: "An API key: `svc_...`" },
              sessionCookie: {
                type: "apiKey",
                in: "cookie",
                name: "platform_session",
                description: "The dashboard's session; over HTTPS the cookie is named `__Host-platform_session`",
              },
            },
          },
          security: [{ bearerAuth: [] }],
        },
        // An absolute `url`: the plugin's default is relative ("api/docs/json"), which the page at
        // /api/docs resolves to /api/api/docs/json, so the UI would show no API at all.
        scalar: { url: SPEC_PATH, cdn: SCALAR_SCRIPT_PATH, withDefaultFonts: false } as never,
      }),
    )
    .get(SCALAR_SCRIPT_PATH, () => new Response(Bun.file(scalarBundlePath), {
      headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400" },
    }), { detail: { hide: true } });
}
