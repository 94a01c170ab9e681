// Schemas of /api/github-app: the install link and the installations bound to the workspace.
import { t } from "elysia";
import { resource, timestamp } from "../http/responses";

export const InstallLinkSchema = resource(
  "GitHubAppInstallLink",
  {
    url: t.String({ description: "Open it to install the platform's GitHub App; GitHub then sends the browser to the setup URL with this link's state" }),
    expiresAt: timestamp("The link's state is refused after this"),
  },
  "A link to install the platform's GitHub App for this workspace.",
);

export const GitHubInstallationSchema = resource(
  "GitHubInstallation",
  {
    installationId: t.String({ description: "GitHub's installation id: `repository.repoHostInstallationId` of the workspace's apps" }),
    boundByUserId: t.Nullable(t.String({ description: "Who connected it through the setup flow; null for one carried over from before it" })),
    boundAt: timestamp(),
  },
  "A GitHub App installation connected to the workspace: only its apps use it.",
);

export const GITHUB_APP_RESOURCES = [InstallLinkSchema, GitHubInstallationSchema];
