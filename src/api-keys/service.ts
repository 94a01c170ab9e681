// API keys: create (the full key is returned once, only its SHA-256 is stored), list, update,
// revoke, and authenticate a presented key including expiry and the usage quota.
import type { Static } from "@sinclair/typebox";
import type { ApiKeySchema } from "./model";
import { and, count, eq, sql } from "drizzle-orm";
import { preparedStatement } from "../db/prepared";
import type { PlatformDb } from "../db";
import { apiKeys } from "../db/schema";
import { newId, randomBase62, sha256Hex } from "../crypto/tokens";
import { ApiError } from "../http/errors";
import { recordAuditEvent, type AuditActor } from "../audit/service";
import { decideUsage } from "./usage";
import { issueRefusal, selfUpdateRefusal, siblingUpdateRefusal } from "./limits";
import { roleIn } from "../workspaces/service";

export const KEY_PREFIX = "svc_";
/** Random characters after the prefix: 40 base62 characters is about 238 bits. */
const KEY_RANDOM_LENGTH = 40;
/** The rate limit is per key: without a cap, more keys would multiply it. */
export const MAX_KEYS_PER_USER_PER_WORKSPACE = 100;
/** lastUsedAt is a "last seen" hint: writing it at most once a minute keeps reads write-free. */
const LAST_USED_RESOLUTION_MS = 60_000;

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export interface CreateKeyInput {
  name: string;
  expiresIn?: number | null;
  prefix?: string;
  remaining?: number | null;
  refillAmount?: number | null;
  refillInterval?: number | null;
  metadata?: Record<string, unknown> | null;
  /** Other workspaces of the caller's user the key may also act in (with `workspaceId` in the query). */
  workspaceIds?: string[];
}

export interface UpdateKeyInput {
  name?: string;
  enabled?: boolean;
  remaining?: number | null;
  refillAmount?: number | null;
  refillInterval?: number | null;
  metadata?: Record<string, unknown> | null;
}

export function publicKey(key: ApiKeyRow): Static<typeof ApiKeySchema> {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    start: key.start,
    enabled: key.enabled,
    remaining: key.remaining,
    refillAmount: key.refillAmount,
    refillInterval: key.refillIntervalSeconds,
    expiresAt: iso(key.expiresAt),
    metadata: key.metadata ?? null,
    workspaceId: key.workspaceId,
    otherWorkspaceIds: key.otherWorkspaceIds ?? [],
    createdAt: iso(key.createdAt)!,
    updatedAt: iso(key.updatedAt)!,
    lastUsedAt: iso(key.lastUsedAt),
  };
}

function checkRefill(refillAmount: number | null | undefined, refillInterval: number | null | undefined) {
  if ((refillAmount == null) !== (refillInterval == null)) {
    throw new ApiError("VALIDATION_FAILED", "refillAmount and refillInterval must be given together");
  }
}

/** Who acts on keys: the owner of the keys and, when the request came with an API key, that key. */
export interface KeyCaller {
  workspaceId: string;
  userId: string;
  apiKeyId?: string | null;
}

/**
 * The other workspaces a new key may act in: each must be one the caller's user belongs to and,
 * when a key makes the key, one that key may act in itself; any other is "not found", as it is
 * to the caller's requests.
 */
function otherWorkspacesFor(db: PlatformDb, caller: KeyCaller, workspaceIds: string[] | undefined): string[] | null {
  const requested = [...new Set(workspaceIds ?? [])].filter((id) => id !== caller.workspaceId);
  if (requested.length === 0) return null;
  const issuer = caller.apiKeyId ? db.select().from(apiKeys).where(eq(apiKeys.id, caller.apiKeyId)).get() : undefined;
  const issuerScope = issuer ? [issuer.workspaceId, ...(issuer.otherWorkspaceIds ?? [])] : null;
  for (const workspaceId of requested) {
    if (!roleIn(db, workspaceId, caller.userId) || (issuerScope && !issuerScope.includes(workspaceId))) {
      throw new ApiError("WORKSPACE_NOT_FOUND", `Workspace ${workspaceId} not found among the workspaces you may act in`);
    }
  }
  return requested;
}

export function createApiKey(db: PlatformDb, caller: KeyCaller, input: CreateKeyInput, actor: AuditActor, now = Date.now()) {
  checkRefill(input.refillAmount, input.refillInterval);
  const custom = input.prefix?.replace(/_+$/, "");
  const prefix = custom ? `${KEY_PREFIX}${custom}_` : KEY_PREFIX;
  const key = `${prefix}${randomBase62(KEY_RANDOM_LENGTH)}`;
  const row: ApiKeyRow = {
    id: newId("key"),
    workspaceId: caller.workspaceId,
    userId: caller.userId,
    name: input.name,
    prefix,
    start: key.slice(0, prefix.length + 4),
    keyHash: sha256Hex(key),
    enabled: true,
    remaining: input.remaining ?? null,
    refillAmount: input.refillAmount ?? null,
    refillIntervalSeconds: input.refillInterval ?? null,
    lastRefillAt: null,
    expiresAt: input.expiresIn == null ? null : now + input.expiresIn * 1000,
    metadata: input.metadata ?? null,
    otherWorkspaceIds: null,
    createdAt: now,
    updatedAt: now,
    lastUsedAt: null,
  };
  // Immediate: the CLI runs this beside a live server, and a read lock upgraded later fails at once.
  db.transaction((tx) => {
    // Read in the transaction: the issuer's quota as it is now, after this very request spent from it.
    if (caller.apiKeyId) {
      const issuer = tx.select().from(apiKeys).where(eq(apiKeys.id, caller.apiKeyId)).get();
      if (!issuer) throw new ApiError("INVALID_API_KEY", "Invalid API key");
      const refusal = issueRefusal(issuer, input, now);
      if (refusal) throw new ApiError("FORBIDDEN", refusal);
    }
    row.otherWorkspaceIds = otherWorkspacesFor(tx as unknown as PlatformDb, caller, input.workspaceIds);
    const held = tx
      .select({ count: count() })
      .from(apiKeys)
      .where(and(eq(apiKeys.workspaceId, caller.workspaceId), eq(apiKeys.userId, caller.userId)))
      .get()!.count;
    if (held >= MAX_KEYS_PER_USER_PER_WORKSPACE) {
      throw new ApiError(
        "KEY_LIMIT_REACHED",
        `You already have ${held} API keys in this workspace, the most one user may have: revoke one you no longer use`,
      );
    }
    tx.insert(apiKeys).values(row).run();
    recordAuditEvent(tx as unknown as PlatformDb, {
      workspaceId: caller.workspaceId,
      action: "api_key.created",
      actor,
      target: `${row.name} (${row.id})`,
      now,
    });
  }, { behavior: "immediate" });
  return { key, apiKey: publicKey(row) };
}

const keysOfOwner = preparedStatement((db) =>
  db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.workspaceId, sql.placeholder("workspaceId")), eq(apiKeys.userId, sql.placeholder("userId"))))
    .orderBy(apiKeys.createdAt)
    .prepare(),
);

export function listApiKeys(db: PlatformDb, owner: { workspaceId: string; userId: string }) {
  return keysOfOwner(db).all({ workspaceId: owner.workspaceId, userId: owner.userId }).map(publicKey);
}

/** A key of the caller in the caller's workspace; anyone else's is "not found", never "forbidden". */
function ownKey(db: PlatformDb, owner: { workspaceId: string; userId: string }, keyId: string): ApiKeyRow {
  const key = db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, keyId), eq(apiKeys.workspaceId, owner.workspaceId), eq(apiKeys.userId, owner.userId)))
    .get();
  if (!key) throw new ApiError("API_KEY_NOT_FOUND", "API key not found");
  return key;
}

export function updateApiKey(
  db: PlatformDb,
  caller: KeyCaller,
  keyId: string,
  input: UpdateKeyInput,
  actor: AuditActor,
  now = Date.now(),
) {
  const key = ownKey(db, caller, keyId);
  const issuer = caller.apiKeyId ? db.select().from(apiKeys).where(eq(apiKeys.id, caller.apiKeyId)).get() : undefined;
  if (caller.apiKeyId && !issuer) throw new ApiError("INVALID_API_KEY", "Invalid API key");
  const refusal = key.id === caller.apiKeyId ? selfUpdateRefusal(input) : issuer ? siblingUpdateRefusal(issuer, key, input) : null;
  if (refusal) throw new ApiError("FORBIDDEN", refusal);
  const refillAmount = input.refillAmount !== undefined ? input.refillAmount : key.refillAmount;
  const refillInterval = input.refillInterval !== undefined ? input.refillInterval : key.refillIntervalSeconds;
  checkRefill(refillAmount, refillInterval);
  const changes: Partial<ApiKeyRow> = { updatedAt: now, refillAmount, refillIntervalSeconds: refillInterval };
  if (input.name !== undefined) changes.name = input.name;
  if (input.enabled !== undefined) changes.enabled = input.enabled;
  if (input.remaining !== undefined) changes.remaining = input.remaining;
  if (input.metadata !== undefined) changes.metadata = input.metadata;
  const updated = db.transaction((tx) => {
    const row = tx.update(apiKeys).set(changes).where(eq(apiKeys.id, key.id)).returning().get();
    recordAuditEvent(tx as unknown as PlatformDb, { workspaceId: key.workspaceId, action: "api_key.updated", actor, target: `${key.name} (${key.id})`, now });
    return row;
  });
  return publicKey(updated);
}

export function revokeApiKey(
  db: PlatformDb,
  owner: { workspaceId: string; userId: string },
  keyId: string,
  actor: AuditActor,
  now = Date.now(),
) {
  const key = ownKey(db, owner, keyId);
  db.transaction((tx) => {
    tx.delete(apiKeys).where(eq(apiKeys.id, key.id)).run();
    recordAuditEvent(tx as unknown as PlatformDb, { workspaceId: key.workspaceId, action: "api_key.revoked", actor, target: `${key.name} (${key.id})`, now });
  });
  // The security notification of the spec: an audit event plus a line in the server log.
  console.log(`[security] API key ${key.id} (${key.name}) revoked in workspace ${key.workspaceId}`);
  return publicKey(key);
}

const keyByHash = preparedStatement((db) =>
  db.select().from(apiKeys).where(eq(apiKeys.keyHash, sql.placeholder("keyHash"))).prepare(),
);

/** The key behind a presented value, if it exists, is enabled and has not expired. */
export function findUsableKey(db: PlatformDb, presentedKey: string, now = Date.now()): ApiKeyRow {
  const key = keyByHash(db).get({ keyHash: sha256Hex(presentedKey) });
  if (!key || !key.enabled) throw new ApiError("INVALID_API_KEY", "Invalid API key");
  if (key.expiresAt !== null && now >= key.expiresAt) throw new ApiError("KEY_EXPIRED", "API key has expired");
  return key;
}

/** Counts one request against the key's quota (USAGE_EXCEEDED when spent) and notes its use. */
export function spendKeyUsage(db: PlatformDb, key: ApiKeyRow, now = Date.now()): void {
  const usage = decideUsage(key, now);
  if (!usage.allowed) {
    const headers: Record<string, string> =
      usage.retryAfterSeconds === null ? {} : { "Retry-After": String(usage.retryAfterSeconds) };
    throw new ApiError("USAGE_EXCEEDED", "API key usage quota exhausted", headers);
  }
  if (key.remaining !== null) {
    // Guarded by the value read, so two writers can never spend the same unit twice.
    const written = db
      .update(apiKeys)
      .set({ remaining: usage.remaining, lastRefillAt: usage.lastRefillAt, lastUsedAt: now })
      .where(and(eq(apiKeys.id, key.id), eq(apiKeys.remaining, key.remaining)))
      .returning({ id: apiKeys.id })
      .get();
    if (!written) {
      const current = db.select().from(apiKeys).where(eq(apiKeys.id, key.id)).get();
      if (!current) throw new ApiError("INVALID_API_KEY", "Invalid API key");
      spendKeyUsage(db, current, now);
    }
  } else if (key.lastUsedAt === null || now - key.lastUsedAt >= LAST_USED_RESOLUTION_MS) {
    db.update(apiKeys).set({ lastUsedAt: now }).where(eq(apiKeys.id, key.id)).run();
  }
}
