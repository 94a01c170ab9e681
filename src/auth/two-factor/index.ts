// Routes of two-factor sign-in: the caller's own enrolment (dashboard sessions only: a key is no
// sign-in), and the owner's switch that requires it of the workspace's members.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../../http/context";
import { auditActor, authPlugin, limitFailedAttempts, type Principal } from "../../http/auth";
import { ok } from "../../http/envelope";
import { ApiError } from "../../http/errors";
import { json, ref, resourceJson, responses } from "../../http/responses";
import { findUserById } from "../../workspaces/service";
import { deleteOtherSessions, signInAttempts } from "../service";
import { confirmEnrolment, disableTwoFactor, RECOVERY_CODE_COUNT, setTwoFactorRequired, startEnrolment, twoFactorStatus } from "./service";
import { totpCode, totpOrRecoveryCode, TwoFactorEnrolmentSchema, TwoFactorStatusSchema } from "./model";

const SESSION_ONLY =
  "Dashboard sessions only: an API key gets 400 `SESSION_REQUIRED` (a key is not a sign-in, and must not change how its account signs in).";

function sessionUser(ctx: ServerContext, principal: Principal) {
  if (!principal.sessionTokenHash) throw new ApiError("SESSION_REQUIRED", "Two-factor sign-in is set up from a dashboard session, not with an API key");
  return findUserById(ctx.db, principal.userId)!;
}

export function twoFactorRoutes(ctx: ServerContext) {
  // Wrong codes and passwords here count against the account's failed attempts, as at login.
  const limited = <T>(principal: Principal, email: string, attempt: () => Promise<T>) =>
    limitFailedAttempts(ctx, { clientAddress: principal.clientAddress, account: signInAttempts(email) }, attempt);

  return new Elysia()
    .use(authPlugin(ctx))
    .get("/api/auth/two-factor", ({ principal }) => ok({ twoFactor: twoFactorStatus(ctx.db, sessionUser(ctx, principal).id) }), {
      auth: true,
      detail: {
        tags: ["Session"],
        operationId: "getTwoFactor",
        responses: responses({ 200: json("The account's two-factor sign-in", { twoFactor: ref(TwoFactorStatusSchema) }) }, "SESSION_REQUIRED"),
        summary: "Is two-factor sign-in on for my account?",
        description: `Answers \`twoFactor\`: whether it is on, how many recovery codes are left, and which of the user's workspaces require it. ${SESSION_ONLY}`,
      },
    })
    .post(
      "/api/auth/two-factor/setup",
      async ({ principal, body }) => {
        const user = sessionUser(ctx, principal);
        return ok(await limited(principal, user.email, () => startEnrolment(ctx.db, ctx.secrets, user, body.password)));
      },
      {
        auth: true,
        body: t.Object({ password: t.String({ minLength: 1, maxLength: 256, description: "The account's current password" }) }),
        detail: {
          tags: ["Session"],
          operationId: "startTwoFactorSetup",
          responses: responses(
            { 200: resourceJson("A new secret, in force once a first code confirms it", TwoFactorEnrolmentSchema) },
            "SESSION_REQUIRED",
            "WRONG_PASSWORD",
            "CONFLICT",
            "RATE_LIMITED",
            "SERVER_BUSY",
          ),
          summary: "Start turning on two-factor sign-in: get a TOTP secret",
          description:
            "Body `{ password }`: the account's current password (turning it on ends the other sessions, so a session alone " +
            "may not). 400 `WRONG_PASSWORD` when wrong, which counts against the account's failed attempts as at the login " +
            "(429 `RATE_LIMITED`). " +
            "Answers `secret` (base32) and `otpauthUri` for an authenticator app (TOTP, SHA-1, 6 digits, 30 s). Nothing changes " +
            "for the sign-in until `POST /api/auth/two-factor/enable` confirms a first code; calling this again replaces the " +
            `secret. 409 \`CONFLICT\` when it is already on. ${SESSION_ONLY}`,
        },
      },
    )
    .post(
      "/api/auth/two-factor/enable",
      async ({ principal, body }) => {
        const user = sessionUser(ctx, principal);
        const recoveryCodes = await limited(principal, user.email, async () => confirmEnrolment(ctx.db, ctx.secrets, user.id, body.code, auditActor(principal)));
        // Sessions started elsewhere before (perhaps with a stolen password) end now.
        deleteOtherSessions(ctx.db, user.id, principal.sessionTokenHash!);
        return ok({ recoveryCodes });
      },
      {
        auth: true,
        body: t.Object({ code: totpCode }),
        detail: {
          tags: ["Session"],
          operationId: "enableTwoFactor",
          responses: responses(
            {
              200: json("Two-factor sign-in is on", {
                recoveryCodes: t.Array(t.String(), {
                  description: `${RECOVERY_CODE_COUNT} single-use codes that sign in instead of the app's code. Shown this once: only their hashes are kept`,
                }),
              }),
            },
            "SESSION_REQUIRED",
            "CONFLICT",
            "INVALID_TWO_FACTOR_CODE",
            "RATE_LIMITED",
            "SERVER_BUSY",
          ),
          summary: "Turn on two-factor sign-in with a first code",
          description:
            "Body `{ code }`: a current code of the app given the secret of `POST /api/auth/two-factor/setup`. Answers the " +
            "recovery codes, once. From now on the login needs a code (or a recovery code) with the password, and the " +
            "account's other sessions are ended. 400 `INVALID_TWO_FACTOR_CODE` for a wrong code, which counts against the " +
            `account's failed attempts (429 \`RATE_LIMITED\`); 409 \`CONFLICT\` without a setup started, or when already on. ${SESSION_ONLY}`,
        },
      },
    )
    .post(
      "/api/auth/two-factor/disable",
      async ({ principal, body }) => {
        const user = sessionUser(ctx, principal);
        await limited(principal, user.email, () => disableTwoFactor(ctx.db, ctx.secrets, user, body, auditActor(principal)));
        return ok({ twoFactor: twoFactorStatus(ctx.db, user.id) });
      },
      {
        auth: true,
        body: t.Object({
          code: t.Optional(totpOrRecoveryCode),
          password: t.Optional(t.String({ maxLength: 256, description: "Or the account's password" })),
        }),
        detail: {
          tags: ["Session"],
          operationId: "disableTwoFactor",
          responses: responses(
            { 200: json("Two-factor sign-in is off", { twoFactor: ref(TwoFactorStatusSchema) }) },
            "SESSION_REQUIRED",
            "TWO_FACTOR_NOT_ENABLED",
            "INVALID_TWO_FACTOR_CODE",
            "WRONG_PASSWORD",
            "RATE_LIMITED",
            "SERVER_BUSY",
          ),
          summary: "Turn off two-factor sign-in",
          description:
            "Body `{ code }` (a current code or a recovery code) or `{ password }`; neither: 400 `VALIDATION_FAILED`. Deletes " +
            "the secret and the recovery codes. Wrong ones (400 `INVALID_TWO_FACTOR_CODE`, `WRONG_PASSWORD`) count against " +
            "the account's failed attempts. In a workspace that requires it, the session is then asked to set it up again. " +
            `409 \`TWO_FACTOR_NOT_ENABLED\` when it is off. ${SESSION_ONLY}`,
        },
      },
    )
    .put(
      "/api/organization/two-factor-requirement",
      ({ principal, body }) => {
        setTwoFactorRequired(ctx.db, principal.workspaceId, principal.userId, body.required, auditActor(principal));
        return ok({ organizationId: principal.workspaceId, twoFactorRequired: body.required });
      },
      {
        auth: true,
        body: t.Object({ required: t.Boolean() }),
        detail: {
          tags: ["Organization"],
          operationId: "setTwoFactorRequirement",
          responses: responses(
            { 200: json("The requirement is set", { organizationId: t.String(), twoFactorRequired: t.Boolean() }) },
            "TWO_FACTOR_NOT_ENABLED",
          ),
          summary: "Require two-factor sign-in of the workspace's members",
          description:
            "Owners only. Body `{ required }`. While required, a dashboard session of a member without two-factor sign-in " +
            "may only read its session, switch workspace, log out and set it up (`/api/auth/two-factor/...`): anything else " +
            "is 403 `TWO_FACTOR_SETUP_REQUIRED`. API keys are not concerned. 409 `TWO_FACTOR_NOT_ENABLED` when the caller's " +
            "own account does not have it on (it would lock the owner out).",
        },
      },
    );
}
