// GitHub's webhook deliveries: what is checked before the body is read (its length, the shape of
// the signature and delivery-id headers), the bounded read, the signature check (X-Hub-Signature-256,
// HMAC-SHA256 of the raw body, compared in constant time) and what a push names.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { MAX_BODY_DEPTH, textNestsDeeperThan, TOO_DEEP_MESSAGE } from "../http/body-guard";
import { ApiError } from "../http/errors";

/**
 * GitHub caps a delivery at 25 MB, but a push payload lists at most 2048 commits with their
 * changed paths: a few MB at the very most, a few KB as a rule. Anything read here is read
 * before its sender is known, so the cap is what one anonymous request may make the server hold.
 */
export const MAX_DELIVERY_BYTES = 5 * 1024 * 1024;

const SIGNATURE_FORM = /^sha256=[0-9a-f]{64}$/i;
/** GitHub's delivery ids are GUIDs; anything printable and short is let through. */
const DELIVERY_ID_FORM = /^[A-Za-z0-9-]{1,100}$/;

/** A delivery's headers, checked before any of its body is read. */
export interface DeliveryHeaders {
  event: string;
  deliveryId: string;
  signature: string;
}

/**
 * Refuses, from its headers alone, what no signed GitHub delivery looks like: no Content-Length
 * or one past the cap, no X-Hub-Signature-256 of the sha256=<hex> form, no X-GitHub-Delivery.
 */
export function deliveryHeaders(request: Request): DeliveryHeaders {
  const length = request.headers.get("content-length");
  if (length === null || !/^\d{1,12}$/.test(length)) throw new ApiError("LENGTH_REQUIRED", "A webhook delivery needs a Content-Length");
  if (Number(length) > MAX_DELIVERY_BYTES) throw new ApiError("PAYLOAD_TOO_LARGE", `A webhook delivery may be at most ${MAX_DELIVERY_BYTES} bytes`);
  const signature = request.headers.get("x-hub-signature-256") ?? "";
  if (!SIGNATURE_FORM.test(signature)) throw new ApiError("INVALID_SIGNATURE", "X-Hub-Signature-256 is missing or is not sha256=<64 hex digits>");
  const deliveryId = request.headers.get("x-github-delivery") ?? "";
  if (!DELIVERY_ID_FORM.test(deliveryId)) throw new ApiError("VALIDATION_FAILED", "X-GitHub-Delivery is missing or is not a delivery id");
  return { event: request.headers.get("x-github-event") ?? "", deliveryId, signature };
}

/** GitHub sends a delivery at once; a sender that trickles it holds a connection and memory for nothing. */
export const DELIVERY_READ_TIMEOUT_MS = 30_000;

/** The body, read as a stream and given up past `maxBytes` whatever Content-Length said, or past `timeoutMs`. */
export async function readBoundedBody(request: Request, maxBytes = MAX_DELIVERY_BYTES, timeoutMs = DELIVERY_READ_TIMEOUT_MS): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let timedOut = false;
  const reader = request.body.getReader();
  const timer = setTimeout(() => {
    timedOut = true;
    void reader.cancel();
  }, timeoutMs);
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      total += next.value.byteLength;
      if (total > maxBytes) {
        await reader.cancel();
        throw new ApiError("PAYLOAD_TOO_LARGE", `A webhook delivery may be at most ${maxBytes} bytes`);
      }
      chunks.push(next.value);
    }
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) throw new ApiError("REQUEST_TIMEOUT", `A webhook delivery must arrive within ${timeoutMs / 1000} s`);
  return Buffer.concat(chunks);
}

/** True when `header` is `sha256=<hex>` of `body` under `secret`. */
export function validSignature(secret: string, body: Uint8Array, header: string | null): boolean {
  if (!header || !SIGNATURE_FORM.test(header)) return false;
  const given = Buffer.from(header.slice("sha256=".length), "hex");
  const expected = createHmac("sha256", secret).update(body).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The same work as validSignature for a delivery with no secret to check (an unknown app), so that its answer takes as long. */
export function spendSignatureCheck(body: Uint8Array, header: string): false {
  validSignature(randomBytes(32).toString("hex"), body, header);
  return false;
}

export interface PushDelivery {
  owner: string;
  name: string;
  /** GitHub's id of the repository, as text. */
  repositoryId: string | null;
  /** The GitHub App installation that sent it (the App's own webhook), as text. */
  installationId: string | null;
  /** Null when the ref is not a branch (a tag). */
  branch: string | null;
  /** The branch was deleted: nothing to deploy. */
  deleted: boolean;
}

/** The JSON payload of a delivery: the body itself, or its `payload` field when sent as a form. */
export function deliveryPayload(body: Uint8Array, contentType: string | null): unknown {
  let text = new TextDecoder().decode(body);
  if (contentType?.toLowerCase().startsWith("application/x-www-form-urlencoded")) text = new URLSearchParams(text).get("payload") ?? "";
  // Read by this route, not screened by the request pipeline (it reads nothing unsigned): the same depth rule, once signed.
  if (textNestsDeeperThan(text, MAX_BODY_DEPTH)) throw new ApiError("BODY_TOO_DEEP", TOO_DEEP_MESSAGE);
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError("INVALID_JSON", "The delivery's payload is not JSON");
  }
}

const idText = (id: unknown) => (typeof id === "number" || typeof id === "string" ? String(id) : null);

export function pushDelivery(payload: unknown): PushDelivery {
  if (typeof payload !== "object" || payload === null) throw new ApiError("VALIDATION_FAILED", "A push delivery's payload must be a JSON object");
  const push = payload as {
    ref?: unknown;
    deleted?: unknown;
    repository?: { id?: unknown; name?: unknown; owner?: { login?: unknown; name?: unknown } };
    installation?: { id?: unknown };
  };
  const owner = push.repository?.owner?.login ?? push.repository?.owner?.name;
  const name = push.repository?.name;
  if (typeof push.ref !== "string" || typeof owner !== "string" || typeof name !== "string") {
    throw new ApiError("VALIDATION_FAILED", "A push delivery needs ref, repository.name and repository.owner.login");
  }
  return {
    owner,
    name,
    repositoryId: idText(push.repository?.id),
    installationId: idText(push.installation?.id),
    branch: push.ref.startsWith("refs/heads/") ? push.ref.slice("refs/heads/".length) : null,
    deleted: push.deleted === true,
  };
}
