// Routes of /api/github-app: connecting installations of the platform's GitHub App to a workspace
// through the App's setup flow (./installations.ts says how), and listing them.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin, auditActor } from "../http/auth";
import { ApiError } from "../http/errors";
import { ok } from "../http/envelope";
import { json, ref, responses } from "../http/responses";
import { recordAuditEvent } from "../audit/service";
import { GitHubAppError } from "./github-app";
import { AuthorizationCodeRefused, InstallingUsers } from "./installing-user";
import { INSTALL_STATE_LIFETIME_MS, bindInstallation, listInstallations, notTheWorkspaces, readInstallState, signInstallState } from "./installations";
import { GitHubInstallationSchema, InstallLinkSchema } from "./model";

const notConfigured = (what: string) => new ApiError("GITHUB_APP_NOT_CONFIGURED", `The platform's GitHub App is not set up: ${what}`);
const USER_AUTHORIZATION_SETTING = '"Request user authorization (OAuth) during installation" must be on in the App\'s settings on GitHub';

const installationOf = (row: { installationId: string; boundByUserId: string | null; boundAt: number }) => ({
  installationId: row.installationId,
  boundByUserId: row.boundByUserId,
  boundAt: new Date(row.boundAt).toISOString(),
});

export function githubAppRoutes(ctx: ServerContext) {
  const app = ctx.config.git.githubApp;
  const installingUsers = app?.userAuthorization ? new InstallingUsers({ ...app.userAuthorization, apiBaseUrl: app.apiBaseUrl }) : null;
  return new Elysia({ prefix: "/api/github-app", tags: ["GitHub App"] })
    .use(authPlugin(ctx))
    .get("/installations", ({ principal }) => ok({ installations: listInstallations(ctx.db, principal.workspaceId).map(installationOf) }), {
      auth: true,
      detail: {
        operationId: "listGitHubAppInstallations",
        responses: responses({ 200: json("The workspace's installations", { installations: t.Array(ref(GitHubInstallationSchema)) }) }),
        summary: "GitHub App installations of the workspace",
        description: "The installations connected to this workspace through the setup flow: its apps may name them as `repoHostInstallationId`.",
      },
    })
    .post(
      "/install-link",
      ({ principal }) => {
        if (!app?.publicUrl) throw notConfigured("PLATFORM_GITHUB_APP_ID and PLATFORM_GITHUB_APP_URL must be set");
        const expiresAt = Date.now() + INSTALL_STATE_LIFETIME_MS;
        const state = signInstallState(ctx.secrets, { workspaceId: principal.workspaceId, userId: principal.userId, expiresAt });
        return ok({ installLink: { url: `${app.publicUrl}/installations/new?state=${state}`, expiresAt: new Date(expiresAt).toISOString() } });
      },
      {
        auth: true,
        detail: {
          operationId: "createGitHubAppInstallLink",
          responses: responses({ 200: json("The link", { installLink: ref(InstallLinkSchema) }) }, "GITHUB_APP_NOT_CONFIGURED"),
          summary: "A link to install the GitHub App for this workspace",
          description:
            "The App's install page with a `state` signed by the platform naming this workspace and the caller, valid for an " +
            "hour. After installing, GitHub sends the browser to the App's setup URL (GET /api/github-app/setup), which " +
            "connects the installation to this workspace. Owners and admins only.",
        },
      },
    )
    .get(
      "/setup",
      async ({ principal, query }) => {
        if (!app) throw notConfigured("PLATFORM_GITHUB_APP_ID is not set");
        if (!installingUsers) {
          throw notConfigured(
            `PLATFORM_GITHUB_APP_CLIENT_ID and PLATFORM_GITHUB_APP_CLIENT_SECRET (the App's client id and a client secret) must be set, and ${USER_AUTHORIZATION_SETTING}: they tell who installed the App`,
          );
        }
        const state = readInstallState(ctx.secrets, query.state);
        if (state.userId !== principal.userId || state.workspaceId !== principal.workspaceId) {
          throw new ApiError("INVALID_INSTALL_STATE", "The install link was made for another user or workspace: sign in as its user, in its workspace, or start from a new link");
        }
        if (!query.code) throw notConfigured(`GitHub sent no authorization code: ${USER_AUTHORIZATION_SETTING}; then install again from a new install link`);
        const installationId = query.installation_id;
        let installedByCaller: boolean;
        try {
          installedByCaller = await installingUsers.canReach(query.code, installationId);
        } catch (error) {
          if (error instanceof AuthorizationCodeRefused) throw new ApiError("INVALID_INSTALL_STATE", `${error.message}: start again from a new install link`);
          if (error instanceof GitHubAppError) throw new ApiError("GITHUB_API_FAILED", `GitHub could not confirm who installed the App: ${error.message}`);
          throw error;
        }
        // The state says who asked for the install link, not who installed the App: GitHub's list for
        // the code says whose installation it is. Not on it: answered as one bound elsewhere is.
        if (!installedByCaller) throw notTheWorkspaces(installationId);
        const row = bindInstallation(ctx.db, { installationId, workspaceId: principal.workspaceId, userId: principal.userId });
        recordAuditEvent(ctx.db, { workspaceId: principal.workspaceId, action: "github_app.installation_bound", actor: auditActor(principal), target: `installation ${installationId}` });
        return ok({ installation: installationOf(row) });
      },
      {
        auth: true,
        query: t.Object({
          installation_id: t.String({ pattern: "^[0-9]{1,20}$", description: "Given by GitHub" }),
          setup_action: t.Optional(t.String({ maxLength: 32, description: "Given by GitHub: install, update" })),
          code: t.Optional(
            t.String({ minLength: 1, maxLength: 256, description: "Given by GitHub when the App requests user authorization during installation: traded for the installing user's token" }),
          ),
          state: t.String({ maxLength: 1024, description: "The install link's state, sent back by GitHub" }),
          workspaceId: t.Optional(t.String()),
        }),
        detail: {
          operationId: "completeGitHubAppSetup",
          responses: responses(
            { 200: json("Connected to the workspace", { installation: ref(GitHubInstallationSchema) }) },
            "INVALID_INSTALL_STATE", "INSTALLATION_NOT_YOURS", "GITHUB_APP_NOT_CONFIGURED", "GITHUB_API_FAILED",
          ),
          summary: "The GitHub App's setup URL",
          description:
            "Set it as the App's Setup URL on GitHub, with \"Request user authorization (OAuth) during installation\" on, so that " +
            "GitHub sends `code` along. Connects `installation_id` to the workspace the `state` names when the state is this " +
            "platform's, not expired, and the signed-in user's own (400 `INVALID_INSTALL_STATE` otherwise, also when GitHub no " +
            "longer takes the single-use `code`), and when GitHub, asked with the user token `code` is traded for " +
            "(PLATFORM_GITHUB_APP_CLIENT_ID and PLATFORM_GITHUB_APP_CLIENT_SECRET), lists the installation among those of the " +
            "user who installed the App (GET /user/installations). An installation GitHub does not know, one not on that " +
            "user's list and one connected to another workspace all get the same 403 `INSTALLATION_NOT_YOURS`. 400 " +
            "`GITHUB_APP_NOT_CONFIGURED` when the App, its client id and secret, or its user authorization are not set up " +
            "(no `code`); 502 `GITHUB_API_FAILED` when GitHub cannot be asked. Owners and admins only.",
        },
      },
    );
}
