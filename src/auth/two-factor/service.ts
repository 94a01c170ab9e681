// Two-factor sign-in: an account's TOTP secret (./totp.ts, stored encrypted by the SecretBox),
// its single-use recovery codes (stored as SHA-256), the second factor of a sign-in, and the
// workspace setting that makes its members' dashboard sessions set it up first. API keys are
// not concerned: a key is its own secret.
import { and, count, eq, isNull, lt, or } from "drizzle-orm";
import type { PlatformDb } from "../../db";
import type { SecretBox } from "../../crypto/secrets";
import { twoFactorRecoveryCodes, twoFactorSecrets, workspaces } from "../../db/schema";
import { sha256Hex } from "../../crypto/tokens";
import { ApiError } from "../../http/errors";
import { recordAuditEvent, type AuditActor } from "../../audit/service";
import { workspacesOf } from "../../workspaces/service";
import { matchingStep, newTotpSecret, otpauthUri } from "./totp";

const ISSUER = "Platform";
export const RECOVERY_CODE_COUNT = 10;

const associatedData = (userId: string) => `two-factor:${userId}`;

function secretRow(db: PlatformDb, userId: string) {
  return db.select().from(twoFactorSecrets).where(eq(twoFactorSecrets.userId, userId)).get();
}

export function hasTwoFactor(db: PlatformDb, userId: string): boolean {
  return Boolean(secretRow(db, userId)?.enabledAt);
}

export function twoFactorStatus(db: PlatformDb, userId: string) {
  const row = secretRow(db, userId);
  const [left] = db
    .select({ value: count() })
    .from(twoFactorRecoveryCodes)
    .where(and(eq(twoFactorRecoveryCodes.userId, userId), isNull(twoFactorRecoveryCodes.usedAt)))
    .all();
  return {
    enabled: Boolean(row?.enabledAt),
    recoveryCodesLeft: row?.enabledAt ? left!.value : 0,
    requiredBy: workspacesOf(db, userId)
      .filter((workspace) => isTwoFactorRequired(db, workspace.id))
      .map((workspace) => workspace.id),
  };
}

/**
 * Starts (or starts again) an enrolment: a new secret, not in force until a first code confirms it.
 * It takes the account's password: turning it on ends the other sessions, so a stolen session
 * alone must not be able to turn it on with an authenticator of its own and lock the owner out.
 */
export async function startEnrolment(
  db: PlatformDb,
  secrets: SecretBox,
  user: { id: string; email: string; passwordHash: string | null },
  password: string,
  now = Date.now(),
) {
  await assertPassword(user, password);
  if (hasTwoFactor(db, user.id)) throw new ApiError("CONFLICT", "Two-factor sign-in is already on; turn it off first to set up another authenticator");
  const secret = newTotpSecret();
  const values = { userId: user.id, secretEncrypted: secrets.encrypt(secret, associatedData(user.id)), enabledAt: null, lastUsedStep: null, createdAt: now };
  db.insert(twoFactorSecrets).values(values).onConflictDoUpdate({ target: twoFactorSecrets.userId, set: values }).run();
  return { secret, otpauthUri: otpauthUri(ISSUER, user.email, secret) };
}

/** Confirms the enrolment with a first code: two-factor sign-in is on, and these recovery codes are the only copy. */
export function confirmEnrolment(db: PlatformDb, secrets: SecretBox, userId: string, code: string, actor: AuditActor, now = Date.now()): string[] {
  const row = secretRow(db, userId);
  if (!row || row.enabledAt) throw new ApiError("CONFLICT", row ? "Two-factor sign-in is already on" : "Start the setup first (POST /api/auth/two-factor/setup)");
  const step = matchingStep(secrets.decrypt(row.secretEncrypted, associatedData(userId)), normalized(code), now, null);
  if (step === null) throw invalidCode();
  const recoveryCodes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  db.transaction((tx) => {
    tx.update(twoFactorSecrets).set({ enabledAt: now, lastUsedStep: step }).where(eq(twoFactorSecrets.userId, userId)).run();
    tx.delete(twoFactorRecoveryCodes).where(eq(twoFactorRecoveryCodes.userId, userId)).run();
    tx.insert(twoFactorRecoveryCodes)
      .values(recoveryCodes.map((recoveryCode) => ({ codeHash: sha256Hex(normalized(recoveryCode)), userId, usedAt: null, createdAt: now })))
      .run();
    auditInWorkspacesOf(tx as unknown as PlatformDb, userId, "auth.two_factor_enabled", actor, now);
  });
  return recoveryCodes;
}

/** Turns two-factor sign-in off, given a current code (or a recovery code) or the account's password. */
export async function disableTwoFactor(
  db: PlatformDb,
  secrets: SecretBox,
  user: { id: string; passwordHash: string | null },
  proof: { code?: string; password?: string },
  actor: AuditActor,
  now = Date.now(),
): Promise<void> {
  if (!hasTwoFactor(db, user.id)) throw new ApiError("TWO_FACTOR_NOT_ENABLED", "Two-factor sign-in is not on for this account");
  if (proof.code) {
    // Not spent: the secret and the codes go in the same step.
    if (!checkSecondFactor(db, secrets, user.id, proof.code, now)) throw invalidCode();
  } else if (proof.password) {
    await assertPassword(user, proof.password);
  } else {
    throw new ApiError("VALIDATION_FAILED", "Send a current `code` from the authenticator app (or a recovery code), or the account's `password`");
  }
  db.transaction((tx) => {
    tx.delete(twoFactorSecrets).where(eq(twoFactorSecrets.userId, user.id)).run();
    tx.delete(twoFactorRecoveryCodes).where(eq(twoFactorRecoveryCodes.userId, user.id)).run();
    auditInWorkspacesOf(tx as unknown as PlatformDb, user.id, "auth.two_factor_disabled", actor, now);
  });
}

/** A second factor found right and not spent yet: `spendSecondFactor` takes it, once. */
export type SecondFactorProof = { userId: string } & ({ kind: "totp"; step: number } | { kind: "recovery"; codeHash: string });

/**
 * The second step of a sign-in (login, claim, invitation acceptance by an existing account), after
 * its password was checked. An account without two-factor keeps the answer it always had (and
 * gets null). With it, the answer never says whether the password was right until the code is
 * given too: without a code it is 401 `TWO_FACTOR_REQUIRED` whatever the password, and a wrong
 * password or a wrong code are the same 401 `INVALID_CREDENTIALS`. The code is checked against the
 * account's secret whatever the password (the same work, so the time taken does not tell either),
 * and nothing is spent here: the sign-in spends the proof with `spendSecondFactor` in the
 * transaction that signs in, so a sign-in that fails after this check leaves the code unused.
 */
export function assertSecondFactor(
  db: PlatformDb,
  secrets: SecretBox,
  attempt: { userId: string | null; passwordValid: boolean; code: string | undefined; wrongPassword: ApiError },
  now = Date.now(),
): SecondFactorProof | null {
  if (attempt.userId === null || !hasTwoFactor(db, attempt.userId)) {
    if (!attempt.passwordValid) throw attempt.wrongPassword;
    return null;
  }
  if (!attempt.code) {
    throw new ApiError(
      "TWO_FACTOR_REQUIRED",
      "This account signs in with a second factor: send the code of its authenticator app (or a recovery code) with the password",
    );
  }
  const proof = checkSecondFactor(db, secrets, attempt.userId, attempt.code, now);
  if (!attempt.passwordValid || !proof) throw wrongCredentials();
  return proof;
}

/**
 * Spends a checked code, in the caller's transaction: the TOTP step becomes the last one used (the
 * update is conditional, so two requests at once cannot both take it), or the recovery code is
 * marked used and the use audited. 401 `INVALID_CREDENTIALS` when another request took it meanwhile.
 */
export function spendSecondFactor(db: PlatformDb, proof: SecondFactorProof | null, clientAddress: string | null, now = Date.now()): void {
  if (!proof) return;
  if (!takeSecondFactor(db, proof, now)) throw wrongCredentials();
  if (proof.kind === "recovery") {
    auditInWorkspacesOf(db, proof.userId, "auth.recovery_code_used", { type: "user", id: proof.userId, clientAddress }, now);
  }
}

/**
 * Whether `code` is a current code of the app (of a step later than the last one used) or an
 * unused recovery code of the account. Reads only.
 */
function checkSecondFactor(db: PlatformDb, secrets: SecretBox, userId: string, code: string, now: number): SecondFactorProof | null {
  const row = secretRow(db, userId);
  if (!row?.enabledAt) return null;
  const candidate = normalized(code);
  if (/^\d{6}$/.test(candidate)) {
    const step = matchingStep(secrets.decrypt(row.secretEncrypted, associatedData(userId)), candidate, now, row.lastUsedStep);
    return step === null ? null : { userId, kind: "totp", step };
  }
  const codeHash = sha256Hex(candidate);
  const unused = db
    .select({ codeHash: twoFactorRecoveryCodes.codeHash })
    .from(twoFactorRecoveryCodes)
    .where(and(eq(twoFactorRecoveryCodes.codeHash, codeHash), eq(twoFactorRecoveryCodes.userId, userId), isNull(twoFactorRecoveryCodes.usedAt)))
    .get();
  return unused ? { userId, kind: "recovery", codeHash } : null;
}

function takeSecondFactor(db: PlatformDb, proof: SecondFactorProof, now: number): boolean {
  if (proof.kind === "totp") {
    const { userId, lastUsedStep } = twoFactorSecrets;
    return Boolean(
      db
        .update(twoFactorSecrets)
        .set({ lastUsedStep: proof.step })
        .where(and(eq(userId, proof.userId), or(isNull(lastUsedStep), lt(lastUsedStep, proof.step))))
        .returning({ userId })
        .get(),
    );
  }
  const { codeHash, userId, usedAt } = twoFactorRecoveryCodes;
  return Boolean(
    db
      .update(twoFactorRecoveryCodes)
      .set({ usedAt: now })
      .where(and(eq(codeHash, proof.codeHash), eq(userId, proof.userId), isNull(usedAt)))
      .returning({ codeHash })
      .get(),
  );
}

export function isTwoFactorRequired(db: PlatformDb, workspaceId: string): boolean {
  return db.select({ required: workspaces.twoFactorRequired }).from(workspaces).where(eq(workspaces.id, workspaceId)).get()?.required === true;
}

/** An owner requires two-factor sign-in of the workspace's members (or no longer does). */
export function setTwoFactorRequired(db: PlatformDb, workspaceId: string, userId: string, required: boolean, actor: AuditActor, now = Date.now()) {
  if (required && !hasTwoFactor(db, userId)) {
    throw new ApiError("TWO_FACTOR_NOT_ENABLED", "Turn on two-factor sign-in for your own account first (Account page, or POST /api/auth/two-factor/setup)");
  }
  db.update(workspaces).set({ twoFactorRequired: required }).where(eq(workspaces.id, workspaceId)).run();
  recordAuditEvent(db, { workspaceId, action: "auth.two_factor_requirement_changed", actor, target: required ? "required" : "not required", now });
}

/**
 * In a workspace that requires two-factor sign-in, a dashboard session of an account without it
 * may only do what setting it up needs (routes marked `beforeTwoFactorSetup`): anything else is
 * 403 `TWO_FACTOR_SETUP_REQUIRED`. API keys are not concerned.
 */
export function assertTwoFactorSetUp(db: PlatformDb, caller: { via: "api_key" | "session"; userId: string; workspaceId: string }, routeAllowedBeforeSetup: boolean) {
  if (caller.via !== "session" || routeAllowedBeforeSetup || !isTwoFactorRequired(db, caller.workspaceId) || hasTwoFactor(db, caller.userId)) return;
  throw new ApiError(
    "TWO_FACTOR_SETUP_REQUIRED",
    "This workspace requires two-factor sign-in: set it up first (Account page, or POST /api/auth/two-factor/setup)",
  );
}

function auditInWorkspacesOf(db: PlatformDb, userId: string, action: "auth.two_factor_enabled" | "auth.two_factor_disabled" | "auth.recovery_code_used", actor: AuditActor, now: number) {
  for (const workspace of workspacesOf(db, userId)) recordAuditEvent(db, { workspaceId: workspace.id, action, actor, now });
}

async function assertPassword(user: { passwordHash: string | null }, password: string) {
  if (!user.passwordHash || !(await Bun.password.verify(password, user.passwordHash))) throw new ApiError("WRONG_PASSWORD", "Wrong password");
}

/** No 0/o or 1/l, so a code read from paper is typed right: 32 characters, 5 bits each. */
const RECOVERY_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789";

/** Ten characters in two groups (`k3f9q-x7m2p`): 50 random bits. */
function newRecoveryCode(): string {
  const characters = [...crypto.getRandomValues(new Uint8Array(10))].map((byte) => RECOVERY_ALPHABET[byte & 31]).join("");
  return `${characters.slice(0, 5)}-${characters.slice(5)}`;
}

/** What a person typed: spaces and dashes dropped, lowercased. */
const normalized = (code: string) => code.replace(/[\s-]/g, "").toLowerCase();

const wrongCredentials = () => new ApiError("INVALID_CREDENTIALS", "Wrong email, password or code");

const invalidCode = () => new ApiError("INVALID_TWO_FACTOR_CODE", "That code is not right (or was used already): enter the current code of the authenticator app");
