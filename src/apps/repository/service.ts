// Apps deployed from a git repository: POST /api/apps/deploy-from-repo, the deploys a push
// (src/webhooks) or the app's deploy-hook URL starts, and the clone each such build begins with
// (./clone.ts). A build
// clones the branch head when it starts, not when it is asked for: pushes that arrive while a
// build waits are coalesced into that one build, which takes the newest commit.
import { and, eq } from "drizzle-orm";
import { lstat } from "node:fs/promises";
import { renameSync } from "node:fs";
import { join } from "node:path";
import { timingSafeEqual } from "node:crypto";
import { apps, builds } from "../../db/schema";
import { ApiError } from "../../http/errors";
import { BuildFailed } from "../../docker/driver";
import { GitHubAppError, GitHubAppTokens } from "../../git/github-app";
import { assertInstallationOf, installationWorkspace, notTheWorkspaces } from "../../git/installations";
import type { Principal } from "../../http/auth";
import { treeBytes } from "../../quotas/usage";
import { readFields } from "../files/bodies";
import type { SourceFetch } from "../builder";
import type { AppRow, AppsContext } from "../deployer";
import type { AppsService } from "../service";
import { cloneCommit, type CommitRef } from "./clone";
import { repositoryDeployInput } from "./reference";
import { appSecret, rotateAppSecret, storedAppSecret } from "./app-secrets";

const tokenData = (appId: string) => `app-repo-token:${appId}`;

export class RepositoryDeploys {
  private readonly githubApp: GitHubAppTokens | null;
  /**
   * Builds scheduled to take the branch head (or a ZIP app's kept tree) when they start: a push
   * or hook call may be coalesced into one while it is queued. A ZIP upload or a rollback is not one.
   */
  private readonly headBuilds = new Set<string>();

  constructor(
    private readonly ctx: AppsContext,
    private readonly apps: AppsService,
  ) {
    this.githubApp = ctx.config.git.githubApp ? new GitHubAppTokens(ctx.config.git.githubApp) : null;
  }

  private row(appId: string): AppRow | undefined {
    return this.ctx.db.select().from(apps).where(eq(apps.id, appId)).get();
  }

  /**
   * POST /api/apps/deploy-from-repo: the app (new, or the workspace's app of that name) and its
   * first build, cloned in the background. An app re-pointed at another repository loses its
   * stored access token unless the request gives one: a token an admin stored for one repository
   * must not read whichever repository a member points the app at next. Another repository is
   * another owner or name, or another repository id under the same name (the repository deleted
   * and made again, maybe by someone else).
   */
  async deploy(principal: Principal, request: Request) {
    const input = repositoryDeployInput(await readFields(request));
    const { repository } = input;
    if (repository.repoHostInstallationId && !this.ctx.config.git.githubApp) {
      throw new ApiError("GITHUB_APP_NOT_CONFIGURED", "repoHostInstallationId needs the platform's GitHub App: PLATFORM_GITHUB_APP_ID and PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE are not set");
    }
    if (repository.repoHostInstallationId) assertInstallationOf(this.ctx.db, principal.workspaceId, repository.repoHostInstallationId);
    const machineId = this.apps.placeWithVolumes(principal.workspaceId, input);
    await this.apps.volumes.assertRoom(principal.workspaceId, this.apps.records.planVolumes(principal.workspaceId, input, machineId));
    const before = this.apps.records.findByName(principal.workspaceId, input.name);
    const renamed = before?.repoOwner !== repository.owner || before?.repoName !== repository.name;
    const remade = Boolean(before?.repoId) && before?.repoId !== repository.id;
    const accessTokenDropped = input.accessToken === undefined && before?.repoTokenEncrypted != null && (renamed || remade);
    const { appId, existing, reattached } = this.apps.records.accept(
      principal.workspaceId,
      input,
      machineId,
      {
        repoId: repository.id,
        repoOwner: repository.owner,
        repoName: repository.name,
        repoBranch: repository.branch,
        repoPath: repository.path,
        repoInstallationId: repository.repoHostInstallationId ?? null,
        ...(input.autoDeploy !== undefined && { autoDeploy: input.autoDeploy }),
        ...(accessTokenDropped && { repoTokenEncrypted: null }),
      },
      (app, subdomain) => this.apps.moveRoute(app, subdomain),
    );
    if (input.accessToken !== undefined) {
      const sealed = input.accessToken === "" ? null : this.ctx.secrets.encrypt(input.accessToken, tokenData(appId));
      this.ctx.db.update(apps).set({ repoTokenEncrypted: sealed }).where(eq(apps.id, appId)).run();
    }
    const buildId = this.apps.records.newBuild(appId, "repository");
    this.ctx.buildLogs.append(appId, buildId, `==> Deploy of ${repository.owner}/${repository.name} branch ${repository.branch}${repository.path ? `, folder ${repository.path}` : ""} accepted`);
    this.apps.records.logReattached(appId, buildId, reattached);
    if (accessTokenDropped) {
      const given = renamed ? `${before!.repoOwner}/${before!.repoName}` : `${before!.repoOwner}/${before!.repoName} with repository id ${before!.repoId}`;
      const asked = renamed ? `${repository.owner}/${repository.name}` : `repository id ${repository.id}`;
      this.ctx.buildLogs.append(appId, buildId, `==> The stored access token was dropped: it was given for ${given}, not ${asked}`);
    }
    this.scheduleHead(this.row(appId)!, buildId);
    return { app: this.apps.publicApp(this.apps.get(principal.workspaceId, appId)), buildId, created: !existing, reattached, accessTokenDropped };
  }

  /** The branch head's build, coalescing into it until it starts. */
  private scheduleHead(app: AppRow, buildId: string) {
    this.headBuilds.add(buildId);
    const source = app.repoOwner ? this.sourceFetch(app.id, buildId) : undefined;
    this.apps.deployer.schedule(app.id, async (signal) => {
      this.headBuilds.delete(buildId);
      await this.apps.deployer.buildAndRelease(app.id, buildId, source, signal);
    });
  }

  /**
   * A build of the app's repository: the branch head when it starts, or `ref`. Records the commit
   * on the build, makes the configured folder the source tree, and checks the disk quota.
   */
  sourceFetch(appId: string, buildId: string, ref?: CommitRef): SourceFetch {
    return async (log, signal) => {
      const app = this.row(appId);
      if (!app?.repoOwner || !app.repoName || !app.repoBranch) throw new BuildFailed("the app has no repository to fetch");
      const token = await this.tokenFor(app, signal);
      const staging = this.ctx.storage.stagingDir();
      const clone = join(staging, "clone");
      const label = `${app.repoOwner}/${app.repoName}`;
      try {
        const commit = await cloneCommit({
          url: `${this.ctx.config.git.baseUrl}/${label}.git`,
          label,
          ref: ref ?? { branch: app.repoBranch },
          token,
          destination: clone,
          timeoutMs: this.ctx.config.git.cloneTimeoutSeconds * 1000,
          limits: { maxBytes: this.ctx.config.uploads.maxUncompressedBytes, maxEntries: this.ctx.config.uploads.maxArchiveEntries },
          signal,
          log,
        });
        this.ctx.db.update(builds).set({ commitSha: commit.sha, commitMessage: commit.message }).where(eq(builds.id, buildId)).run();
        let root = clone;
        if (app.repoPath) {
          root = join(clone, app.repoPath);
          const folder = await lstat(root).catch(() => null);
          if (!folder?.isDirectory()) throw new BuildFailed(`'${app.repoPath}' is not a folder in ${label} at commit ${commit.sha.slice(0, 12)}`);
          log(`==> App root: ${app.repoPath}`);
        }
        const bytes = app.repoPath ? await treeBytes(root) : commit.bytes;
        await this.apps.assertDiskRoom(app.workspaceId, bytes, app.id);
        const source = this.ctx.storage.stagingDir();
        renameSync(root, source);
        this.apps.sourceReplaced(app.id, bytes);
        return source;
      } finally {
        void this.ctx.storage.discard(staging);
      }
    };
  }

  /** The credential for the app's repository: its GitHub App installation's token, its own token, or none. */
  private async tokenFor(app: AppRow, signal: AbortSignal): Promise<string | undefined> {
    if (app.repoInstallationId) {
      if (!this.githubApp) throw new BuildFailed("the app uses a GitHub App installation, but PLATFORM_GITHUB_APP_ID is not set on this platform");
      try {
        // Bound to another workspace since (or never bound): not this app's to use.
        if (installationWorkspace(this.ctx.db, app.repoInstallationId) !== app.workspaceId) throw new BuildFailed(notTheWorkspaces(app.repoInstallationId).message);
        return await this.githubApp.installationToken(app.repoInstallationId, { id: app.repoId, name: app.repoName! }, signal);
      } catch (error) {
        if (error instanceof GitHubAppError) throw new BuildFailed(`GitHub App: ${error.message}`);
        throw error;
      }
    }
    return app.repoTokenEncrypted ? this.ctx.secrets.decrypt(app.repoTokenEncrypted, tokenData(app.id)) : undefined;
  }

  /**
   * A new deploy of the app's branch head (its kept tree for a ZIP app), unless one is already
   * queued: that build takes the newest commit when it starts, so it is answered instead.
   */
  deployHead(app: AppRow, trigger: string, note: string): { buildId: string; coalesced: boolean } {
    const queued = this.ctx.db
      .select({ id: builds.id })
      .from(builds)
      .where(and(eq(builds.appId, app.id), eq(builds.status, "queued")))
      .all()
      .find((build) => this.headBuilds.has(build.id));
    if (queued) {
      this.ctx.buildLogs.append(app.id, queued.id, `==> ${note}: this queued build takes it`);
      return { buildId: queued.id, coalesced: true };
    }
    const buildId = this.apps.records.newBuild(app.id, trigger);
    this.ctx.buildLogs.append(app.id, buildId, `==> ${note}`);
    this.scheduleHead(app, buildId);
    return { buildId, coalesced: false };
  }

  /** The secret of the app's deploy-hook URL, made on first use. */
  deployHookSecret(workspaceId: string, appId: string): string {
    return appSecret(this.ctx, this.apps.get(workspaceId, appId), "deployHook");
  }

  /** A new secret: the old URL stops working at once. */
  rotateDeployHook(workspaceId: string, appId: string): string {
    return rotateAppSecret(this.ctx, this.apps.get(workspaceId, appId), "deployHook");
  }

  /** POST to the deploy-hook URL: an unknown app and a wrong secret are the same 401, so neither is told apart. */
  triggerDeployHook(appId: string, secret: string): { buildId: string; coalesced: boolean } {
    const app = this.row(appId);
    const expected = app && app.status !== "deleting" ? storedAppSecret(this.ctx.secrets, app, "deployHook") : null;
    const [given, wanted] = [Buffer.from(secret), Buffer.from(expected ?? "")];
    const matches = expected !== null && given.length === wanted.length && timingSafeEqual(given, wanted);
    if (!app || !matches) throw new ApiError("INVALID_DEPLOY_HOOK", "This deploy-hook URL is not valid (wrong, or replaced by a new one)");
    return this.deployHead(app, "deploy-hook", "Deploy hook called");
  }
}
