// Request and answer schemas of /api/api-keys.
import { t } from "elysia";
import { resource, timestamp } from "../http/responses";

const quotaFields = {
  remaining: t.Optional(t.Nullable(t.Integer({ minimum: 0, description: "Usage quota: requests left; null for no quota" }))),
  refillAmount: t.Optional(
    t.Nullable(t.Integer({ minimum: 1, description: "When the quota is spent, reset `remaining` to this after `refillInterval`" })),
  ),
  refillInterval: t.Optional(t.Nullable(t.Integer({ minimum: 1, description: "Seconds between refills" }))),
  // Unknown rather than t.Record: Elysia's default normalizer turns a string or array into an object
  // ("ab" -> {"0":"a","1":"b"}) before validating, so ./index.ts checks that it is an object.
  metadata: t.Optional(t.Unknown({ description: "Free-form JSON object stored with the key, or null" })),
};

export const createKeyBody = t.Object({
  name: t.String({ minLength: 1, maxLength: 100 }),
  expiresIn: t.Optional(
    t.Nullable(t.Integer({ minimum: 1, maximum: 10 * 365 * 24 * 3600, description: "Seconds until the key stops working; null = never" })),
  ),
  prefix: t.Optional(
    t.String({ pattern: "^[A-Za-z0-9]{1,20}_?$", description: "Custom prefix placed after `svc_`, e.g. `ci` gives `svc_ci_...`" }),
  ),
  workspaceIds: t.Optional(
    t.Array(t.String({ minLength: 1, maxLength: 64 }), {
      maxItems: 50,
      description: "Other workspaces you belong to that the key may also act in, chosen with `?workspaceId=`; by default only this one",
    }),
  ),
  ...quotaFields,
});

export const updateKeyBody = t.Object({
  name: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
  enabled: t.Optional(t.Boolean()),
  ...quotaFields,
});

export const keyIdParams = t.Object({ keyId: t.String({ minLength: 1, maxLength: 64 }) });

// What /api/api-keys answers: named schemas of the OpenAPI document (src/http/responses.ts).

export const ApiKeySchema = resource(
  "ApiKey",
  {
    id: t.String(),
    name: t.String(),
    prefix: t.Nullable(t.String({ description: "The custom prefix after `svc_`, if any" })),
    start: t.Nullable(t.String({ description: "The first characters of the key, to recognise it; the key itself is shown once, at creation" })),
    enabled: t.Boolean(),
    remaining: t.Nullable(t.Integer({ minimum: 0, description: "Usage quota: requests left; null for no quota" })),
    refillAmount: t.Nullable(t.Integer({ minimum: 1 })),
    refillInterval: t.Nullable(t.Integer({ minimum: 1, description: "Seconds between refills" })),
    expiresAt: t.Nullable(timestamp()),
    metadata: t.Nullable(t.Record(t.String(), t.Unknown(), { description: "Free-form JSON object stored with the key" })),
    workspaceId: t.String(),
    otherWorkspaceIds: t.Array(t.String(), { description: "Other workspaces the key may act in, chosen with `?workspaceId=`" }),
    createdAt: timestamp(),
    updatedAt: timestamp(),
    lastUsedAt: t.Nullable(timestamp()),
  },
  "An API key, without its secret.",
);

export const API_KEY_RESOURCES = [ApiKeySchema];
