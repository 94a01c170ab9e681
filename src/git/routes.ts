// Routes of /api/github-app: connecting installations of the platform's GitHub App to a workspace
// through the App's setup flow (./installations.ts says why), and listing them.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin, auditActor } from "../http/auth";
import { ApiError } from "../http/errors";
import { ok } from "../http/envelope";
import { json, ref, responses } from "../http/responses";
import { recordAuditEvent } from "../audit/service";
import { GitHubAppError, GitHubAppTokens } from "./github-app";
import { INSTALL_STATE_LIFETIME_MS, bindInstallation, listInstallations, notTheWorkspaces, readInstallState, signInstallState } from "./installations";
import { GitHubInstallationSchema, InstallLinkSchema } from "./model";

const notConfigured = (what: string) => new ApiError("GITHUB_APP_NOT_CONFIGURED", `The platform's GitHub App is not set up: ${what}`);

const installationOf = (row: { installationId: string; boundByUserId: string | null; boundAt: number }) => ({
  installationId: row.installationId,
  boundByUserId: row.boundByUserId,
  boundAt: new Date(row.boundAt).toISOString(),
});

export function githubAppRoutes(ctx: ServerContext) {
  const app = ctx.config.git.githubApp;
  const tokens = app ? new GitHubAppTokens(app) : null;
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
        if (!tokens) throw notConfigured("PLATFORM_GITHUB_APP_ID is not set");
        const state = readInstallState(ctx.secrets, query.state);
        if (state.userId !== principal.userId || state.workspaceId !== principal.workspaceId) {
          throw new ApiError("INVALID_INSTALL_STATE", "The install link was made for another user or workspace: sign in as its user, in its workspace, or start from a new link");
        }
        const installationId = query.installation_id;
        let known: boolean;
        try {
          known = await tokens.installationExists(installationId);
        } catch (error) {
          if (error instanceof GitHubAppError) throw new ApiError("GITHUB_API_FAILED", `GitHub could not confirm the installation: ${error.message}`);
          throw error;
        }
        // An id GitHub does not know yet could be squatted before its real owner installs the App.
        if (!known) throw notTheWorkspaces(installationId);
        const row = bindInstallation(ctx.db, { installationId, workspaceId: principal.workspaceId, userId: principal.userId });
        recordAuditEvent(ctx.db, { workspaceId: principal.workspaceId, action: "github_app.installation_bound", actor: auditActor(principal), target: `installation ${installationId}` });
        return ok({ installation: installationOf(row) });
      },
      {
        auth: true,
        query: t.Object({
          installation_id: t.String({ pattern: "^[0-9]{1,20}$", description: "Given by GitHub" }),
          setup_action: t.Optional(t.String({ maxLength: 32, description: "Given by GitHub: install, update" })),
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
            "Set it as the App's Setup URL on GitHub. Connects `installation_id` to the workspace the `state` names when the " +
            "state is this platform's, not expired, and the signed-in user's own (400 `INVALID_INSTALL_STATE` otherwise), and " +
            "GitHub knows the installation. One connected to another workspace, like one GitHub does not know, gets 403 " +
            "`INSTALLATION_NOT_YOURS`. Owners and admins only.",
        },
      },
    );
}
