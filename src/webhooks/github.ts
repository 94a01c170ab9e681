// GitHub's webhook deliveries: the signature check (X-Hub-Signature-256, HMAC-SHA256 of the raw
// body with PLATFORM_GITHUB_WEBHOOK_SECRET, compared in constant time) and what a push names.
import { createHmac, timingSafeEqual } from "node:crypto";
import { ApiError } from "../http/errors";

/** True when `header` is `sha256=<hex>` of `body` under `secret`. */
export function validSignature(secret: string, body: Uint8Array, header: string | null): boolean {
  if (!header || !/^sha256=[0-9a-f]{64}$/i.test(header)) return false;
  const given = Buffer.from(header.slice("sha256=".length), "hex");
  const expected = createHmac("sha256", secret).update(body).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export interface PushDelivery {
  owner: string;
  name: string;
  /** GitHub's id of the repository, as text. */
  repositoryId: string | null;
  /** Null when the ref is not a branch (a tag). */
  branch: string | null;
  /** The branch was deleted: nothing to deploy. */
  deleted: boolean;
}

/** The JSON payload of a delivery: the body itself, or its `payload` field when sent as a form. */
export function deliveryPayload(body: Uint8Array, contentType: string | null): unknown {
  let text = new TextDecoder().decode(body);
  if (contentType?.toLowerCase().startsWith("application/x-www-form-urlencoded")) text = new URLSearchParams(text).get("payload") ?? "";
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError("INVALID_JSON", "The delivery's payload is not JSON");
  }
}

export function pushDelivery(payload: unknown): PushDelivery {
  if (typeof payload !== "object" || payload === null) throw new ApiError("VALIDATION_FAILED", "A push delivery's payload must be a JSON object");
  const push = payload as { ref?: unknown; deleted?: unknown; repository?: { id?: unknown; name?: unknown; owner?: { login?: unknown; name?: unknown } } };
  const owner = push.repository?.owner?.login ?? push.repository?.owner?.name;
  const name = push.repository?.name;
  if (typeof push.ref !== "string" || typeof owner !== "string" || typeof name !== "string") {
    throw new ApiError("VALIDATION_FAILED", "A push delivery needs ref, repository.name and repository.owner.login");
  }
  const id = push.repository?.id;
  return {
    owner,
    name,
    repositoryId: typeof id === "number" || typeof id === "string" ? String(id) : null,
    branch: push.ref.startsWith("refs/heads/") ? push.ref.slice("refs/heads/".length) : null,
    deleted: push.deleted === true,
  };
}
