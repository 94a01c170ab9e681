// Routes of /api/auth: the dashboard's first-visit owner setup, login, logout, the current
// session and its active workspace (organization).
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { assertSameOrigin, authPlugin, bearerKeyOf, clientAddressOf, limitFailedAttempts } from "../http/auth";
import { ok } from "../http/envelope";
import { ApiError } from "../http/errors";
import { findUserById, workspacesOf } from "../workspaces/service";
import {
  claimOwner,
  createOwner,
  createSession,
  deleteSession,
  sessionCookie,
  setActiveWorkspace,
  setupKeyRequired,
  setupRequired,
  verifyLogin,
} from "./service";

export const credentialsBody = t.Object({
  email: t.String({ format: "email", maxLength: 254 }),
  password: t.String({ minLength: 8, maxLength: 256 }),
});

export function authRoutes(ctx: ServerContext) {
  const startSession = (request: Request, set: { headers: Record<string, any> }, userId: string) => {
    const token = createSession(ctx.db, userId, ctx.config.sessionTtlSeconds);
    set.headers["set-cookie"] = sessionCookie(token, ctx.config.sessionTtlSeconds, request);
  };

  return new Elysia({ prefix: "/api/auth", tags: ["Session"] })
    .use(authPlugin(ctx))
    .get("/setup", () => ok({ setupRequired: setupRequired(ctx.db), keyRequired: setupKeyRequired(ctx.db) }), {
      detail: {
        summary: "Is the owner account still to be created?",
        description:
          "Public. `setupRequired` is true on a fresh instance until the owner account exists. `keyRequired` is true " +
          "when keys were made with `platform keys create` before the setup: then `POST /api/auth/setup` must send one " +
          "of them as `Authorization: Bearer svc_...`.",
        security: [],
      },
    })
    .post(
      "/setup",
      async ({ body, request, server, set }) => {
        assertSameOrigin(request, false);
        const clientAddress = clientAddressOf(server, request);
        const owner = await limitFailedAttempts(ctx, clientAddress, () => createOwner(ctx.db, body, bearerKeyOf(request), clientAddress));
        startSession(request, set, owner.userId);
        set.status = 201;
        return ok({ user: { id: owner.userId, email: body.email.toLowerCase() }, organizationId: owner.workspaceId });
      },
      {
        body: credentialsBody,
        detail: {
          summary: "Create the owner account (first visit only)",
          description:
            "Only while `GET /api/auth/setup` says `setupRequired`; afterwards 409 `ALREADY_SET_UP`. Sets the HttpOnly " +
            "session cookie. If keys were made with `platform keys create` before (`keyRequired`), this account becomes " +
            "their owner, so the request must prove it comes from the operator: `Authorization: Bearer svc_...` with one " +
            "of those keys, else 401 `SETUP_KEY_REQUIRED`. Failures are rate limited per client address (429 with Retry-After).",
          security: [],
        },
      },
    )
    .post(
      "/claim",
      async ({ body, request, server, set }) => {
        assertSameOrigin(request, false);
        const clientAddress = clientAddressOf(server, request);
        const owner = await limitFailedAttempts(ctx, clientAddress, () => claimOwner(ctx.db, body, bearerKeyOf(request), clientAddress));
        startSession(request, set, owner.userId);
        return ok({ user: { id: owner.userId, email: body.email.toLowerCase() }, organizationId: owner.workspaceId });
      },
      {
        body: credentialsBody,
        detail: {
          summary: "Claim a workspace owner made on the command line",
          description:
            "Each workspace `platform keys create` makes has its own owner account without a password, until it is claimed " +
            "(the first one by the owner setup). Send one of its keys as `Authorization: Bearer svc_...` (else 401 " +
            "`SETUP_KEY_REQUIRED`) and an email and password: a new email becomes that account; the email and password of " +
            "an existing account (401 `INVALID_CREDENTIALS` when wrong) make that account owner of the workspace and holder " +
            "of its keys. Starts a session. Failures are rate limited per client address (429 with Retry-After).",
          security: [],
        },
      },
    )
    .post(
      "/login",
      async ({ body, request, server, set }) => {
        assertSameOrigin(request, false);
        const clientAddress = clientAddressOf(server, request);
        const { userId } = await limitFailedAttempts(ctx, clientAddress, () => verifyLogin(ctx.db, body, clientAddress));
        startSession(request, set, userId);
        return ok({ user: { id: userId, email: body.email.toLowerCase() } });
      },
      {
        body: credentialsBody,
        detail: {
          summary: "Log in to the dashboard",
          description:
            "Sets the HttpOnly `platform_session` cookie. Failures are rate limited per client address: once they are " +
            "spent every login from it, right or wrong, gets 429 with Retry-After. (API keys and session cookies are " +
            "never refused for their address's failures: only failed ones get 429 instead of 401 then.)",
          security: [],
        },
      },
    )
    .post(
      "/logout",
      ({ principal, request, set }) => {
        if (principal.sessionTokenHash) deleteSession(ctx.db, principal.sessionTokenHash);
        set.headers["set-cookie"] = sessionCookie("", 0, request);
        return ok({});
      },
      { auth: true, detail: { summary: "End the current session" } },
    )
    .get(
      "/session",
      ({ principal }) => {
        const user = findUserById(ctx.db, principal.userId)!;
        return ok({
          user: { id: user.id, email: user.email },
          via: principal.via,
          activeOrganizationId: principal.workspaceId,
          role: principal.role,
          organizations: workspacesOf(ctx.db, user.id).map((workspace) => ({
            id: workspace.id,
            name: workspace.name,
            role: workspace.role,
          })),
        });
      },
      {
        auth: true,
        detail: {
          summary: "Who is calling",
          description:
            "The user, the active organization (workspace), the role there, and every organization the user belongs to " +
            "(an API key acts only in its own workspace and those it was made for: any other `workspaceId` is 404 `WORKSPACE_NOT_FOUND`). " +
            "Like every authenticated route: a wrong key or cookie gets 401, or 429 `RATE_LIMITED` with Retry-After once " +
            "its client address has spent its failed attempts; a valid one is never refused for its address.",
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
          summary: "Set the session's active organization",
          description: "Body `{ organizationId }`. 403 `NOT_A_MEMBER` when the user does not belong to it. Cookie sessions only.",
        },
      },
    );
}
