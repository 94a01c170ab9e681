// Request schemas of /api/api-keys.
import { t } from "elysia";

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
