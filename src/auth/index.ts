// Routes of /api/auth: the dashboard's first-visit owner setup, login, logout, the current
// session and its active workspace (organization); two-factor sign-in's routes are in ./two-factor.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin, bearerKeyOf, limitFailedAttempts } from "../http/auth";
import { passwordFormSource, requestSourceOf } from "../http/request-source";
import { setupFromThisMachine, setupTokenRequired } from "./setup-token";
import { ok } from "../http/envelope";
import { ApiError } from "../http/errors";
import { json, ref, resourceJson, responses } from "../http/responses";
import { credentialsBody, SessionSchema, signInBody, UserSchema, withSessionCookie } from "./model";
import { twoFactorRoutes } from "./two-factor";
import {
  claimOwner,
  createOwner,
  createSession,
  deleteSession,
  describeSession,
  publicUser,
  sessionCookie,
  setActiveWorkspace,
  setupKeyRequired,
  setupRequired,
  signInAttempts,
  verifyLogin,
} from "./service";

const SESSION_COOKIE_SET =
  "The HttpOnly `platform_session` cookie of the new session (SameSite=Lax); over HTTPS `__Host-platform_session`, Secure";

/** Refusals of a password form: its browser-source checks and limitFailedAttempts (src/http/auth.ts). */
const PASSWORD_FORM_ERRORS = ["HOST_NOT_ALLOWED", "CSRF_REJECTED", "RATE_LIMITED", "SERVER_BUSY"] as const;

/** What the setup and a claim answer: the account and the workspace its session starts in. */
const OWNER_PAYLOAD = { user: ref(UserSchema), organizationId: t.String({ description: "The workspace the session starts in" }) };

export function authRoutes(ctx: ServerContext) {
  return new Elysia().use(sessionRoutes(ctx)).use(twoFactorRoutes(ctx));
}

function sessionRoutes(ctx: ServerContext) {
  const startSession = (https: boolean, set: { headers: Record<string, any> }, userId: string) => {
    const token = createSession(ctx.db, userId, ctx.config.sessionTtlSeconds);
    set.headers["set-cookie"] = sessionCookie(token, ctx.config.sessionTtlSeconds, https);
  };

  return new Elysia({ prefix: "/api/auth", tags: ["Session"] })
    .use(authPlugin(ctx))
    .get(
      "/setup",
      ({ request, server }) => {
        const { peerAddress } = requestSourceOf(ctx.config, server, request);
        const fromThisMachine = setupFromThisMachine(request, peerAddress, ctx.config.apiTrustedProxies);
        return ok({
          setupRequired: setupRequired(ctx.db),
          keyRequired: setupKeyRequired(ctx.db),
          tokenRequired: setupTokenRequired(ctx.db, fromThisMachine),
        });
      },
      {
        detail: {
          operationId: "getSetupStatus",
          responses: responses({
            200: json("Whether the setup is still to be done, and what it needs", {
              setupRequired: t.Boolean(),
              keyRequired: t.Boolean({ description: "The setup must send a key made with `platform keys create`" }),
              tokenRequired: t.Boolean({ description: "This caller's setup must send `setupToken`" }),
            }),
          }),
          summary: "Is the owner account still to be created?",
          description:
            "Public. `setupRequired` is true on a fresh instance until the owner account exists. `keyRequired` is true " +
            "when keys were made with `platform keys create` before the setup: then `POST /api/auth/setup` must send one " +
            "of them as `Authorization: Bearer svc_...`. `tokenRequired` is true when this caller's setup must send " +
            "`setupToken`, the one-time token the server prints at start: on a fresh instance without such keys, for " +
            "every caller but the machine itself (a direct loopback connection, not one through a proxy).",
          security: [],
        },
      },
    )
    .post(
      "/setup",
      async ({ body, request, server, set }) => {
        const source = passwordFormSource(ctx.config, server, request);
        const { setupToken, ...credentials } = body;
        const fromThisMachine = setupFromThisMachine(request, source.peerAddress, ctx.config.apiTrustedProxies);
        // The setup is one account, but failures from elsewhere must not keep the operator on the
        // machine itself from finishing it: that caller has a bucket of its own.
        const account = fromThisMachine ? "setup:this-machine" : "setup";
        const owner = await limitFailedAttempts(ctx, { clientAddress: source.clientAddress, account }, async () => {
          if (setupTokenRequired(ctx.db, fromThisMachine) && !ctx.setupToken.matches(setupToken)) {
            throw new ApiError(
              "SETUP_TOKEN_REQUIRED",
              "Creating the owner account from another machine needs the setup token printed in the server's output at start (the ?setup= part of the URL there)",
            );
          }
          return createOwner(ctx.db, credentials, bearerKeyOf(request), source.clientAddress);
        });
        startSession(source.https, set, owner.userId);
        set.status = 201;
        return ok({ user: publicUser({ id: owner.userId, email: body.email.toLowerCase() }), organizationId: owner.workspaceId });
      },
      {
        body: t.Object({
          ...credentialsBody.properties,
          setupToken: t.Optional(t.String({ maxLength: 128, description: "The one-time token printed at start (see `tokenRequired`)" })),
        }),
        detail: {
          operationId: "createOwnerAccount",
          responses: responses(
            { 201: withSessionCookie(json("The owner account is made and its session started", OWNER_PAYLOAD), SESSION_COOKIE_SET) },
            ...PASSWORD_FORM_ERRORS, "ALREADY_SET_UP", "SETUP_KEY_REQUIRED", "SETUP_TOKEN_REQUIRED",
          ),
          summary: "Create the owner account (first visit only)",
          description:
            "Only while `GET /api/auth/setup` says `setupRequired`; afterwards 409 `ALREADY_SET_UP`. Sets the HttpOnly " +
            "session cookie. If keys were made with `platform keys create` before (`keyRequired`), this account becomes " +
            "their owner, so the request must prove it comes from the operator: `Authorization: Bearer svc_...` with one " +
            "of those keys, else 401 `SETUP_KEY_REQUIRED`. Otherwise, unless it comes from the machine itself, it must send " +
            "`setupToken` (printed at start as the dashboard URL's `?setup=`), else 401 `SETUP_TOKEN_REQUIRED`. 403 " +
            "`HOST_NOT_ALLOWED` when `Host` is not an IP, localhost or a name of PLATFORM_API_HOSTS; 403 `CSRF_REJECTED` for a " +
            "cross-site Origin. Failures count against the client address and the setup (429 `RATE_LIMITED` with Retry-After); " +
            "503 `SERVER_BUSY` when too many password checks wait.",
          security: [],
        },
      },
    )
    .post(
      "/claim",
      async ({ body, request, server, set }) => {
        const { clientAddress, https } = passwordFormSource(ctx.config, server, request);
        const account = signInAttempts(body.email);
        const owner = await limitFailedAttempts(ctx, { clientAddress, account }, () => claimOwner(ctx.db, ctx.secrets, body, bearerKeyOf(request), clientAddress));
        startSession(https, set, owner.userId);
        return ok({ user: publicUser({ id: owner.userId, email: body.email.toLowerCase() }), organizationId: owner.workspaceId });
      },
      {
        body: signInBody,
        detail: {
          operationId: "claimWorkspace",
          responses: responses(
            { 200: withSessionCookie(json("The workspace is claimed and a session started", OWNER_PAYLOAD), SESSION_COOKIE_SET) },
            ...PASSWORD_FORM_ERRORS, "SETUP_KEY_REQUIRED", "INVALID_CREDENTIALS", "TWO_FACTOR_REQUIRED", "CONFLICT",
          ),
          summary: "Claim a workspace owner made on the command line",
          description:
            "Each workspace `platform keys create` makes has its own owner account without a password, until it is claimed " +
            "(the first one by the owner setup). Send one of its keys as `Authorization: Bearer svc_...` (else 401 " +
            "`SETUP_KEY_REQUIRED`) and an email and password: a new email becomes that account; the email and password of " +
            "an existing account (401 `INVALID_CREDENTIALS` when wrong; with two-factor sign-in, `code` too, as for the login) " +
            "make that account owner of the workspace and holder " +
            "of its keys. Starts a session. Failures are rate limited per client address and per email (429 with Retry-After). " +
            "409 `CONFLICT` when another claim took the account meanwhile. 403 `HOST_NOT_ALLOWED` / `CSRF_REJECTED` and 503 " +
            "`SERVER_BUSY` as for the setup.",
          security: [],
        },
      },
    )
    .post(
      "/login",
      async ({ body, request, server, set }) => {
        const { clientAddress, https } = passwordFormSource(ctx.config, server, request);
        const account = signInAttempts(body.email);
        const { userId } = await limitFailedAttempts(ctx, { clientAddress, account }, () => verifyLogin(ctx.db, ctx.secrets, body, clientAddress));
        startSession(https, set, userId);
        return ok({ user: publicUser({ id: userId, email: body.email.toLowerCase() }) });
      },
      {
        body: signInBody,
        detail: {
          operationId: "login",
          responses: responses(
            { 200: withSessionCookie(json("Logged in: the session is started", { user: ref(UserSchema) }), SESSION_COOKIE_SET) },
            ...PASSWORD_FORM_ERRORS, "INVALID_CREDENTIALS", "TWO_FACTOR_REQUIRED",
          ),
          summary: "Log in to the dashboard",
          description:
            "Sets the HttpOnly session cookie. An account with two-factor sign-in needs `code` as well (its authenticator " +
            "app's current code, or a recovery code), in the same request: without it the answer is 401 " +
            "`TWO_FACTOR_REQUIRED` whether the password is right or not, and with it a wrong password and a wrong code are " +
            "the same 401 `INVALID_CREDENTIALS`; a code is taken once (not again in its 30 s step). Accounts without it " +
            "ignore `code`. Failures (`TWO_FACTOR_REQUIRED` included) are rate limited per client address and per account " +
            "(email): once either has spent them every login from it or for it, right or wrong, gets 429 `RATE_LIMITED` " +
            "with Retry-After. (API keys and session cookies are never refused for their address's failures: only failed " +
            "ones get 429 instead of 401 then.) 403 `HOST_NOT_ALLOWED` / `CSRF_REJECTED` as for the setup; 503 " +
            "`SERVER_BUSY` when too many password checks wait.",
          security: [],
        },
      },
    )
    .post(
      "/logout",
      ({ principal, request, server, set }) => {
        if (principal.sessionTokenHash) deleteSession(ctx.db, principal.sessionTokenHash);
        set.headers["set-cookie"] = sessionCookie("", 0, requestSourceOf(ctx.config, server, request).https);
        return ok({});
      },
      {
        auth: true,
        detail: {
          operationId: "logout",
          responses: responses({
            200: withSessionCookie(json("The session is ended"), "Clears the session cookie (empty, Max-Age=0)"),
          }),
          summary: "End the current session",
        },
      },
    )
    .get(
      "/session",
      ({ principal }) => ok(describeSession(ctx.db, principal)),
      {
        auth: true,
        detail: {
          operationId: "getSession",
          responses: responses({ 200: resourceJson("The session", SessionSchema) }),
          summary: "Who is calling",
          description:
            "The user, the active organization (workspace), the role there, and every organization the user belongs to " +
            "(an API key acts only in its own workspace and those it was made for: any other `workspaceId` is 404 `WORKSPACE_NOT_FOUND`). " +
            "Like every authenticated route: a wrong key or cookie gets 401, or 429 `RATE_LIMITED` with Retry-After once " +
            "its client address has spent its failed attempts; a valid one is never refused for its address. A cookie " +
            "request whose `Host` is not this server's (an IP, localhost or a name of PLATFORM_API_HOSTS) gets 403 " +
            "`HOST_NOT_ALLOWED`, and one that changes state from another site's page 403 `CSRF_REJECTED`.",
        },
      },
    )
    .post(
      "/set-active-organization",
      ({ principal, body }) => {
        if (!principal.sessionTokenHash) {
          throw new ApiError("VALIDATION_FAILED", "API keys have no session: pass `workspaceId` as a query parameter instead");
        }
        setActiveWorkspace(ctx.db, principal.sessionTokenHash, principal.userId, body.organizationId);
        return ok({ activeOrganizationId: body.organizationId });
      },
      {
        auth: true,
        body: t.Object({ organizationId: t.String({ minLength: 1, maxLength: 64 }) }),
        detail: {
          operationId: "setActiveOrganization",
          responses: responses({ 200: json("The session now acts in that workspace", { activeOrganizationId: t.String() }) }, "NOT_A_MEMBER"),
          summary: "Set the session's active organization",
          description: "Body `{ organizationId }`. 403 `NOT_A_MEMBER` when the user does not belong to it. Cookie sessions only: with an " +
            "API key, 400 `VALIDATION_FAILED` (pass `workspaceId` as a query parameter instead).",
        },
      },
    );
}
