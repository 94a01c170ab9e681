// Schemas of /api/auth: what it answers, as named schemas of the OpenAPI document (src/http/responses.ts).
import { t } from "elysia";
import type { TObject, TSchema } from "@sinclair/typebox";
import { json, oneOf, ref, resource, type Resource, type SuccessAnswer } from "../http/responses";
import { ROLES } from "../organization/model";
import { totpOrRecoveryCode, TWO_FACTOR_RESOURCES } from "./two-factor/model";

export const credentialsBody = t.Object({
  email: t.String({ format: "email", maxLength: 254 }),
  password: t.String({ minLength: 8, maxLength: 256 }),
});

/** The second factor of a sign-in, for an account with two-factor sign-in on (accounts without it ignore it). */
export const secondFactorCode = t.Optional(totpOrRecoveryCode);

export const signInBody = t.Object({ ...credentialsBody.properties, code: secondFactorCode });

/** The `Set-Cookie` header of the answers that start (or end) a dashboard session. */
export function withSessionCookie(answer: SuccessAnswer, description: string): SuccessAnswer {
  return { ...answer, headers: { "Set-Cookie": { description, schema: { type: "string" } } } };
}

export const UserSchema = resource(
  "User",
  {
    id: t.String(),
    // Not `format: email`: the placeholder owner `platform keys create` makes is `owner+name@localhost`.
    email: t.String({ description: "Lowercased" }),
  },
  "A dashboard account.",
);

export const OrganizationSchema = resource(
  "Organization",
  { id: t.String(), name: t.String(), role: oneOf(ROLES, "The user's role there") },
  "A workspace (organization) the user belongs to, with the user's role there.",
);

export const SessionSchema = resource(
  "Session",
  {
    user: ref(UserSchema),
    via: oneOf(["api_key", "session"] as const, "How the caller authenticated: an API key or the dashboard's session cookie"),
    activeOrganizationId: t.String({ description: "The workspace this request acts in" }),
    role: oneOf(ROLES, "The caller's role in the active workspace"),
    organizations: t.Array(ref(OrganizationSchema), { description: "Every workspace the user belongs to (a key acts only in those it was made for)" }),
    permissions: t.Array(t.String(), {
      description:
        "The routes the caller may call in the active workspace, as `METHOD path` with the path as this document writes it " +
        "(`POST /api/apps/{appId}/stop`): what the role allows. Any other route answers 403 `FORBIDDEN`; a client can offer only these.",
    }),
    twoFactorEnabled: t.Boolean({ description: "The user signs in with a second factor (TOTP)" }),
    twoFactorRequired: t.Boolean({
      description:
        "The active workspace requires two-factor sign-in: while `twoFactorEnabled` is false, a session may only set it up " +
        "(other routes answer 403 `TWO_FACTOR_SETUP_REQUIRED`)",
    }),
  },
  "Who is calling: the user, the workspace the request acts in and the role there.",
);

export const SESSION_RESOURCES: (TSchema & { title: string })[] = [UserSchema, OrganizationSchema, SessionSchema, ...TWO_FACTOR_RESOURCES];
