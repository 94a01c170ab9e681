// Routes of /api/api-keys: thin wrappers over ./service.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { auditActor, authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { ApiError } from "../http/errors";
import { json, ref, responses } from "../http/responses";
import { ApiKeySchema, createKeyBody, keyIdParams, updateKeyBody } from "./model";
import { createApiKey, listApiKeys, MAX_KEYS_PER_USER_PER_WORKSPACE, revokeApiKey, updateApiKey } from "./service";

const MAX_METADATA_BYTES = 4096;

function checkMetadata(metadata: unknown): Record<string, unknown> | null | undefined {
  if (metadata == null) return metadata as null | undefined;
  if (typeof metadata !== "object" || Array.isArray(metadata)) {
    throw new ApiError("VALIDATION_FAILED", "Invalid body field 'metadata': Expected a JSON object or null");
  }
  if (JSON.stringify(metadata).length > MAX_METADATA_BYTES) {
    throw new ApiError("VALIDATION_FAILED", `metadata must be at most ${MAX_METADATA_BYTES} bytes of JSON`);
  }
  return metadata as Record<string, unknown>;
}


export function apiKeysRoutes(ctx: ServerContext) {
  return new Elysia({ prefix: "/api/api-keys", tags: ["API keys"] })
    .use(authPlugin(ctx))
    .get("/", ({ principal }) => ok({ keys: listApiKeys(ctx.db, principal) }), {
      auth: true,
      detail: {
        operationId: "listApiKeys",
        responses: responses({ 200: json("Your keys in the workspace, oldest first", { keys: t.Array(ref(ApiKeySchema)) }) }),
        summary: "List your API keys",
        description:
          "Keys of the authenticated user in the active workspace. `lastUsedAt` is updated at most once a minute. " +
          "The key value itself is never shown again after creation.",
      },
    })
    .post(
      "/",
      ({ principal, body, set }) => {
        const metadata = checkMetadata(body.metadata);
        const { key, apiKey } = createApiKey(ctx.db, principal, { ...body, metadata }, auditActor(principal));
        set.status = 201;
        return ok({ key, id: apiKey.id, apiKey });
      },
      {
        auth: true,
        body: createKeyBody,
        detail: {
          operationId: "createApiKey",
          responses: responses(
            {
              201: json("The key is made: `key` is shown only here", {
                key: t.String({ description: "The full key, to send as `Authorization: Bearer svc_...`; never shown again" }),
                id: t.String({ description: "The key's id, as `apiKey.id`" }),
                apiKey: ref(ApiKeySchema),
              }),
            },
            "FORBIDDEN",
            "KEY_LIMIT_REACHED",
          ),
          summary: "Create an API key",
          description:
            "Returns `key`, the full value (`svc_` + optional custom prefix + 40 random base62 characters), only in this " +
            "response; only its SHA-256 is stored. `remaining` is a quota counted down by every authenticated request; " +
            "at 0 requests get 429 `USAGE_EXCEEDED`, with `Retry-After` when a refill is configured. An expired key gets 401 `KEY_EXPIRED`. " +
            "A request made with a key that has a quota or an expiry may only create keys within it (a quota no larger than " +
            "its `remaining`, a refill no faster than its own, an expiry no later than its own); otherwise 403 `FORBIDDEN`. " +
            "A key acts only in the workspace it was made in (the active one), with its holder's role there. `workspaceIds` " +
            "lists other workspaces the holder belongs to where it may act too, chosen per request with `?workspaceId=`; a " +
            "workspace the holder does not belong to (or, for a key made by a key, one the issuing key may not act in) is 404 " +
            "`WORKSPACE_NOT_FOUND`. The answer's `otherWorkspaceIds` lists them. " +
            `A user may hold at most ${MAX_KEYS_PER_USER_PER_WORKSPACE} keys per workspace (the rate limit is per key): past that 409 \`KEY_LIMIT_REACHED\`.`,
        },
      },
    )
    .put(
      "/:keyId",
      ({ principal, params, body }) => {
        const metadata = checkMetadata(body.metadata);
        return ok({ apiKey: updateApiKey(ctx.db, principal, params.keyId, { ...body, metadata }, auditActor(principal)) });
      },
      {
        auth: true,
        params: keyIdParams,
        body: updateKeyBody,
        detail: {
          operationId: "updateApiKey",
          responses: responses({ 200: json("The key as updated", { apiKey: ref(ApiKeySchema) }) }, "FORBIDDEN", "API_KEY_NOT_FOUND"),
          summary: "Update an API key",
          description:
            "Changes name, enabled, remaining, refill settings or metadata. Answers `apiKey`, the updated key. A key cannot " +
            "change its own remaining, refill settings or enabled (403 `FORBIDDEN`): use another key or the dashboard. A " +
            "key with a quota or an expiry may not lift another key's limits either (403 `FORBIDDEN`): no higher or unlimited " +
            "`remaining`, no new or faster refill, no enabling a disabled key. Expiry cannot be changed. 404 `API_KEY_NOT_FOUND` " +
            "for a key that is not yours in this workspace.",
        },
      },
    )
    .delete(
      "/:keyId",
      ({ principal, params }) => ok({ apiKey: revokeApiKey(ctx.db, principal, params.keyId, auditActor(principal)) }),
      {
        auth: true,
        params: keyIdParams,
        detail: {
          operationId: "revokeApiKey",
          responses: responses({ 200: json("The key as it was before it was deleted", { apiKey: ref(ApiKeySchema) }) }, "API_KEY_NOT_FOUND"),
          summary: "Revoke an API key",
          description:
            "Deletes the key permanently (it gets 401 from now on) and records an `api_key.revoked` security event in the " +
            "workspace audit log. Answers `apiKey`, the key as it was.",
        },
      },
    );
}
