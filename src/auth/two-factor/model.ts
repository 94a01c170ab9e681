// Schemas of two-factor sign-in's routes, as named schemas of the OpenAPI document.
import { t } from "elysia";
import type { TSchema } from "@sinclair/typebox";
import { resource } from "../../http/responses";

export const TwoFactorStatusSchema = resource(
  "TwoFactorStatus",
  {
    enabled: t.Boolean({ description: "The account signs in with a second factor" }),
    recoveryCodesLeft: t.Integer({ minimum: 0, description: "Recovery codes not used yet (0 while off)" }),
    requiredBy: t.Array(t.String(), { description: "Ids of the user's workspaces that require two-factor sign-in" }),
  },
  "Two-factor sign-in of the caller's account.",
);

export const TwoFactorEnrolmentSchema = resource(
  "TwoFactorEnrolment",
  {
    secret: t.String({ description: "The TOTP secret, base32 (type it into an authenticator app)" }),
    otpauthUri: t.String({ description: "The same as an `otpauth://totp/...` URI (SHA-1, 6 digits, 30 s), for apps that read one" }),
  },
  "A TOTP secret waiting for its first code.",
);

// As a person types them: spaces and a dash between the halves are dropped, letters in any case.
const TOTP_CODE = "[0-9]{3}[ -]?[0-9]{3}";
const RECOVERY_CODE = "[A-Za-z0-9]{5}[ -]?[A-Za-z0-9]{5}";

/** A code of the authenticator app: six digits (`123456`, `123 456`). */
export const totpCode = t.String({
  pattern: `^ *${TOTP_CODE} *$`,
  maxLength: 16,
  description: "A current 6-digit code of the authenticator app (a space or dash between its halves is ignored)",
});

/** The second factor of a sign-in: a code of the app or one of the recovery codes (`k3f9q-x7m2p`). */
export const totpOrRecoveryCode = t.String({
  pattern: `^ *(${TOTP_CODE}|${RECOVERY_CODE}) *$`,
  maxLength: 32,
  description: "The 6-digit code of the authenticator app, or one of the account's recovery codes (10 characters, any case, dash optional)",
});

export const TWO_FACTOR_RESOURCES: (TSchema & { title: string })[] = [TwoFactorStatusSchema, TwoFactorEnrolmentSchema];
