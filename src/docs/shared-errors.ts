// The errors a route can answer because of the layers every request passes through, not because
// of what the route itself does: the head and body limits (src/http/request-head.ts,
// body-guard.ts), input validation, the auth plugin and its permission matrix (src/http/auth.ts,
// permissions.ts), the last-resort 500, and the 507 of a full disk on every route that writes (authenticated ones included).
// Routes list only their own codes (src/http/responses.ts); these are merged into each operation
// of the document, so no route can forget them.
import type { ErrorCode } from "../http/errors";
import { PERMISSIONS } from "../http/permissions";
import { codesOf, errorAnswers } from "../http/responses";

type Operation = { parameters?: unknown[]; requestBody?: { content?: Record<string, unknown> }; responses?: Record<string, unknown> };

/** Refusals of the auth plugin, in the order it checks. */
const AUTHENTICATED_ROUTE_CODES: ErrorCode[] = [
  "DUPLICATE_SESSION_COOKIE", // two session cookies: one was set by another site (cookie tossing)
  "HOST_NOT_ALLOWED", // a cookie request on a Host that is not this server's (DNS rebinding)
  "UNAUTHORIZED",
  "INVALID_API_KEY",
  "KEY_EXPIRED",
  "RATE_LIMITED", // the caller's bucket, or failed authentication from its address
  "USAGE_EXCEEDED", // the key's own quota
  "WORKSPACE_NOT_FOUND", // `workspaceId` names a workspace the caller does not belong to
];
const ALL_ROLES = 4;

/** The codes an operation can answer whatever it does. */
export function sharedErrorCodes(method: string, path: string, operation: Operation): ErrorCode[] {
  const codes: ErrorCode[] = ["INTERNAL_ERROR"];
  const route = `${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ":$1")}`;
  const permission = PERMISSIONS[route];
  if (permission) {
    codes.push(...AUTHENTICATED_ROUTE_CODES);
    // Some role is refused by the route's row of the matrix.
    if (permission.roles.length < ALL_ROLES) codes.push("FORBIDDEN");
    // A session whose workspace requires two-factor sign-in must set it up first (src/auth/two-factor).
    if (!permission.beforeTwoFactorSetup) codes.push("TWO_FACTOR_SETUP_REQUIRED");
    // A cookie request that changes state must come from a page of this host.
    if (method !== "get") codes.push("CSRF_REJECTED");
  }
  if (operation.parameters?.length || operation.requestBody) codes.push("VALIDATION_FAILED");
  const content = operation.requestBody?.content;
  if (content?.["application/json"]) codes.push("INVALID_JSON");
  // A body over 1 MiB, or one without a length, is refused before routing, whatever the method;
  // uploads (multipart only) stream under their own limit and list PAYLOAD_TOO_LARGE themselves.
  const upload = content !== undefined && !content["application/json"];
  if (!upload) codes.push("PAYLOAD_TOO_LARGE", "LENGTH_REQUIRED");
  // A body nesting past MAX_BODY_DEPTH is refused before routing too; uploads check their form fields.
  // So is a request line and headers over MAX_HEAD_BYTES.
  codes.push("BODY_TOO_DEEP", "HEADERS_TOO_LARGE");
  // Whatever a change writes (files, rows of the database, logs) may find the disk full (src/http/server.ts);
  // so may authentication, which notes a key's use and spends its usage quota, on reads too.
  if (permission || method !== "get") codes.push("INSUFFICIENT_STORAGE");
  return codes;
}

/** Adds the shared codes to every operation's error answers, beside the route's own. */
export function withSharedErrors(document: { paths: Record<string, Record<string, Operation>> }) {
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const responses = (operation.responses ??= {});
      const codes = [...sharedErrorCodes(method, path, operation), ...Object.values(responses).flatMap(codesOf)];
      Object.assign(responses, errorAnswers(codes));
    }
  }
  return document;
}
