// Schemas of the repository routes: the deploy-from-repo body (documentation: ./reference.ts reads
// it from any of the three forms) and the deploy hook.
import { t } from "elysia";
import { resource } from "../../http/responses";
import { deployForm } from "../model";
import { volumeMountsInput } from "../../volumes/model";

const { file: _zip, ...zipDeployFields } = deployForm.properties;

export const repositoryReferenceBody = t.Object({
  id: t.String({ maxLength: 200, description: "The repository's id at its host (GitHub's repository id)" }),
  owner: t.String({ maxLength: 200, description: "User or organization (GitLab: group/subgroup); letters, digits, '.', '_', '-', each part starting with a letter or digit" }),
  name: t.String({ maxLength: 104, description: "Repository name (a trailing .git is dropped)" }),
  branch: t.String({ maxLength: 255, description: "Branch to deploy and follow; a valid git branch name, not starting with '-'" }),
  path: t.Optional(t.String({ maxLength: 1024, description: "Folder inside the repository that is the app's root (monorepos); relative, no '..' parts" })),
  repoHostInstallationId: t.Optional(t.String({ pattern: "^[0-9]{1,20}$", description: "GitHub App installation that grants access to a private repository (needs PLATFORM_GITHUB_APP_ID)" })),
});

export const deployFromRepoBody = t.Object({
  ...zipDeployFields,
  repository: repositoryReferenceBody,
  envVars: t.Optional(t.Union([t.Record(t.String(), t.String()), t.String({ description: "A JSON object as text (forms)" })])),
  volumes: t.Optional(t.Union([volumeMountsInput, t.String({ description: "The same list as JSON text (forms)" })])),
  autoDeploy: t.Optional(t.Boolean({ default: false, description: "A push to the branch (POST /api/webhooks/github) starts a new deploy" })),
  accessToken: t.Optional(t.String({ maxLength: 1024, description: "Access token the git server accepts as the HTTP password (GitHub/GitLab/Gitea personal or project token); stored encrypted, never shown. \"\" removes the stored one; pointing the app at another repository without it removes it too" })),
});

export const DeployHookSchema = resource(
  "DeployHook",
  { url: t.String({ description: "POST to this URL (no body, no key) to deploy the app: the branch head of a repository app, the kept source tree of a ZIP app" }) },
  "The app's deploy-hook URL: a secret, as an API key is.",
);

export const DeployHookRunSchema = resource(
  "DeployHookRun",
  {
    buildId: t.String({ description: "The build that deploys it" }),
    coalesced: t.Boolean({ description: "True when a build already queued takes it (it fetches the newest commit when it starts)" }),
  },
  "What a call of a deploy-hook URL started.",
);

export const REPOSITORY_RESOURCES = [DeployHookSchema, DeployHookRunSchema];
