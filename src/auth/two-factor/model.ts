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

export const sixDigitCode = t.String({ minLength: 6, maxLength: 64, description: "A current 6-digit code of the authenticator app" });

export const TWO_FACTOR_RESOURCES: (TSchema & { title: string })[] = [TwoFactorStatusSchema, TwoFactorEnrolmentSchema];
