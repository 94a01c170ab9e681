// Deploys from git repositories served by a real git server on loopback (git http-backend), with
// push webhooks signed with each app's own secret, deploy hooks, private repositories reached through a stand-in GitHub App
// API that checks the app's JWT, and failures that must leave the serving version alone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac, generateKeyPairSync, verify } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { startGitServer, type GitServer } from "../../helpers/git-server";
import { tempDir } from "../../helpers/temp";
import { installingUserAnswer, installingUserSettings } from "../../helpers/github-users";

const INSTALLATION_ID = "4242";
/** The GitHub user who installs the App, by the code GitHub gives the setup URL. */
const INSTALLING_USER = { code: "code-of-the-installer", installations: [INSTALLATION_ID] };

let git: GitServer;
let server: TestServer;
let key: string;
let githubApi: ReturnType<typeof Bun.serve>;
/** What the installation tokens the stand-in GitHub API gave out were asked for, each only after verifying the app's JWT. */
const tokenScopes: unknown[] = [];

function signedJwtValid(jwt: string, publicKey: string): boolean {
  const [header, claims, signature] = jwt.split(".");
  if (!header || !claims || !signature) return false;
  if (!verify("RSA-SHA256", Buffer.from(`${header}.${claims}`), publicKey, Buffer.from(signature, "base64url"))) return false;
  const { iss, exp, iat } = JSON.parse(Buffer.from(claims, "base64url").toString());
  return iss === "777" && exp - iat <= 600 && exp > Date.now() / 1000;
}

beforeAll(async () => {
  git = await startGitServer();
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const keyFile = join(tempDir(), "github-app.pem");
  writeFileSync(keyFile, privateKey.export({ type: "pkcs1", format: "pem" }));
  const publicPem = publicKey.export({ type: "spki", format: "pem" }).toString();
  githubApi = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const userAnswer = await installingUserAnswer(request, [INSTALLING_USER]);
      if (userAnswer) return userAnswer;
      const jwt = request.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
      if (!signedJwtValid(jwt, publicPem)) return Response.json({ message: "bad JWT" }, { status: 401 });
      const path = new URL(request.url).pathname;
      if (path !== `/app/installations/${INSTALLATION_ID}/access_tokens`) return Response.json({ message: "Not Found" }, { status: 404 });
      tokenScopes.push(await request.json());
      return Response.json({ token: git.token, expires_at: new Date(Date.now() + 3600_000).toISOString() }, { status: 201 });
    },
  });
  server = await TestServer.start({
    PLATFORM_GIT_BASE_URL: git.baseUrl,
    PLATFORM_GITHUB_APP_ID: "777",
    PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE: keyFile,
    PLATFORM_GITHUB_API_URL: `http://127.0.0.1:${githubApi.port}`,
    PLATFORM_GITHUB_APP_URL: "https://github.example/apps/test-platform",
    ...installingUserSettings(`http://127.0.0.1:${githubApi.port}`),
    PLATFORM_GIT_CLONE_TIMEOUT_SECONDS: "8",
    PLATFORM_APP_IMAGES_KEPT: "1",
  });
  key = (await server.createKey("git")).key;
});

afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
  githubApi.stop(true);
  await git.stop();
}, 60_000);

const site = (text: string) => ({ "index.html": `<p>${text}</p>` });

function deployFromRepo(body: Record<string, unknown>) {
  return server.request("POST", "/api/apps/deploy-from-repo", { key, body: { runtime: "node", memoryMB: 64, ...body } });
}

async function build(appId: string, buildId: string) {
  return (await server.request("GET", `/api/apps/${appId}/builds/${buildId}`, { key })).body;
}

/** Waits until the build has finished; answers it with its log. */
async function finished(appId: string, buildId: string, timeoutMs = 120_000) {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await Bun.sleep(250)) {
    const answer = await build(appId, buildId);
    if (!["queued", "building"].includes(answer.build.status)) return answer;
  }
  throw new Error(`build ${buildId} did not finish`);
}

/** Waits until the app serves a page containing `text` through the proxy. */
async function serves(subdomain: string, text: string, timeoutMs = 120_000) {
  let last = "";
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await Bun.sleep(250)) {
    last = await viaProxy(server, subdomain).then((response) => response.text(), () => "");
    if (last.includes(text)) return;
  }
  throw new Error(`${subdomain} did not serve "${text}"; last answer: ${last.slice(0, 200)}`);
}

/** A delivery to the app's own webhook, signed with its secret (or `secret`). */
async function deliver(appId: string, event: string, payload: unknown, secret?: string) {
  const webhook = (await server.request("GET", `/api/apps/${appId}/webhook`, { key })).body.webhook;
  const body = JSON.stringify(payload);
  const signature = `sha256=${createHmac("sha256", secret ?? webhook.secret).update(body).digest("hex")}`;
  return fetch(webhook.url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": event, "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": signature },
    body,
  }).then(async (response) => ({ status: response.status, body: (await response.json()) as any }));
}

/** Each push has a body of its own, as GitHub's do (a replayed body deploys nothing). */
const push = (owner: string, name: string, branch: string, id = 1001) => ({ ref: `refs/heads/${branch}`, after: crypto.randomUUID(), deleted: false, repository: { id, name, owner: { login: owner } } });

async function buildsOf(appId: string): Promise<any[]> {
  return (await server.request("GET", `/api/apps/${appId}/builds`, { key })).body.builds;
}

/** Waits until no build of the app is queued or building, and its release has settled. */
async function settled(appId: string) {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await Bun.sleep(250)) {
    const busy = (await buildsOf(appId)).some((entry) => ["queued", "building"].includes(entry.status));
    if (!busy && ["running", "failed"].includes((await server.request("GET", `/api/apps/${appId}`, { key })).body.app.status)) return;
  }
  throw new Error(`app ${appId} did not settle`);
}

describe("deploy from a git repository", () => {
  let appId: string;
  let subdomain: string;

  test("deploys the branch head, records its commit, and a signed push deploys the new commit", async () => {
    const first = await git.createRepo("acme", "site", { files: site("version one"), message: "First version" });
    const response = await deployFromRepo({ name: "git-site", autoDeploy: true, repository: { id: "1001", owner: "acme", name: "site", branch: "main" } });
    expect(response.status).toBe(202);
    expect(response.body.created).toBe(true);
    expect(response.body.app.repository).toEqual({
      id: "1001", owner: "acme", name: "site", branch: "main", path: "", repoHostInstallationId: null, hasAccessToken: false, url: `${git.baseUrl}/acme/site.git`,
    });
    appId = response.body.app.id;
    subdomain = response.body.app.subdomain;
    const done = await finished(appId, response.body.buildId);
    expect(done.build).toMatchObject({ status: "succeeded", trigger: "repository", commitSha: first, commitMessage: "First version" });
    expect(done.log).toContain(`Commit ${first.slice(0, 12)} "First version"`);
    await serves(subdomain, "version one");

    const second = await git.commit("acme", "site", { files: site("version two"), message: "Second version" });
    const delivery = await deliver(appId, "push", push("acme", "site", "main"));
    expect(delivery.status).toBe(202);
    expect(delivery.body.delivery.status).toBe("received");
    await serves(subdomain, "version two");
    const [latest] = await buildsOf(appId);
    expect(latest).toMatchObject({ trigger: "push", status: "succeeded", commitSha: second, commitMessage: "Second version" });
  });

  test("a bad signature is refused with 401, and other branches, events and tags deploy nothing", async () => {
    await settled(appId);
    const before = (await buildsOf(appId)).length;
    const forged = await deliver(appId, "push", push("acme", "site", "main"), "not-the-secret");
    expect(forged.status).toBe(401);
    expect(forged.body).toMatchObject({ success: false, code: "INVALID_SIGNATURE" });
    const unsigned = await fetch(`${server.baseUrl}/api/webhooks/github/${appId}`, { method: "POST", headers: { "x-github-event": "push" }, body: JSON.stringify(push("acme", "site", "main")) });
    expect(unsigned.status).toBe(401);

    await git.commit("acme", "site", { branch: "feature", files: site("feature work"), message: "Feature" });
    expect((await deliver(appId, "push", push("acme", "site", "feature"))).status).toBe(202);
    expect((await deliver(appId, "ping", { zen: "hi" })).status).toBe(202);
    expect((await deliver(appId, "push", { ...push("acme", "site", "main"), ref: "refs/tags/v1" })).status).toBe(202);
    // Same owner and name, another repository (re-created or renamed into place): not the app's.
    expect((await deliver(appId, "push", push("acme", "site", "main", 9999))).status).toBe(202);
    expect((await buildsOf(appId)).length).toBe(before);
    expect(await viaProxy(server, subdomain).then((r) => r.text())).toContain("version two");
  });

  test("pushes that arrive while a deploy is queued are coalesced into it, which takes the newest commit", async () => {
    await settled(appId);
    const before = (await buildsOf(appId)).length;
    await git.commit("acme", "site", { files: site("version three"), message: "Third" });
    await deliver(appId, "push", push("acme", "site", "main"));
    await deliver(appId, "push", push("acme", "site", "main"));
    const newest = await git.commit("acme", "site", { files: site("version four"), message: "Fourth" });
    await deliver(appId, "push", push("acme", "site", "main"));
    // The first may start at once or wait behind the previous release's clean-up; either way only one waits.
    await settled(appId);
    const history = await buildsOf(appId);
    expect(history.length - before).toBeGreaterThanOrEqual(1);
    expect(history.length - before).toBeLessThanOrEqual(2);
    expect(history[0]).toMatchObject({ status: "succeeded", commitSha: newest });
    // Three pushes made at most two builds, so one push joined a queued build: the first one (which
    // then started before the last push came) or the newest (when the first was already running).
    const logs = await Promise.all(history.slice(0, history.length - before).map(async (build: { id: string }) => (await server.request("GET", `/api/apps/${appId}/builds/${build.id}`, { key })).body.log as string));
    expect(logs.some((log) => log.includes("this queued build takes it"))).toBe(true);
    await serves(subdomain, "version four");
  });

  test("with autoDeploy turned off in settings, a push deploys nothing until it is on again", async () => {
    await settled(appId);
    const off = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: { autoDeploy: false } });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ restarted: false, app: { autoDeploy: false } });
    const before = (await buildsOf(appId)).length;
    expect((await deliver(appId, "push", push("acme", "site", "main"))).status).toBe(202);
    expect((await buildsOf(appId)).length).toBe(before);
    const on = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: { autoDeploy: true } });
    expect(on.body.app.autoDeploy).toBe(true);
  });

  test("a deploy-hook URL deploys the branch head; a wrong one gets 401", async () => {
    await settled(appId);
    const hook = await server.request("GET", `/api/apps/${appId}/deploy-hook`, { key });
    expect(hook.status).toBe(200);
    const url: string = hook.body.deployHook.url;
    expect(url).toStartWith(`${server.baseUrl}/api/webhooks/deploy/${appId}/`);
    expect((await server.request("GET", `/api/apps/${appId}/deploy-hook`, { key })).body.deployHook.url).toBe(url);
    const sha = await git.commit("acme", "site", { files: site("version five"), message: "Fifth" });
    const called = await fetch(url, { method: "POST" });
    expect(called.status).toBe(202);
    const { deployHookRun } = (await called.json()) as any;
    expect((await finished(appId, deployHookRun.buildId)).build).toMatchObject({ trigger: "deploy-hook", commitSha: sha });
    await serves(subdomain, "version five");

    const wrong = await fetch(`${url.slice(0, -3)}xyz`, { method: "POST" });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as any).code).toBe("INVALID_DEPLOY_HOOK");
    const rotated = await server.request("POST", `/api/apps/${appId}/deploy-hook`, { key });
    expect(rotated.body.deployHook.url).not.toBe(url);
    expect((await fetch(url, { method: "POST" })).status).toBe(401);
  });

  test("POST redeploy builds the branch head; with source=files, the kept tree", async () => {
    await settled(appId);
    const sha = await git.commit("acme", "site", { files: site("version six"), message: "Sixth" });
    const head = await server.request("POST", `/api/apps/${appId}/redeploy`, { key });
    expect(head.status).toBe(202);
    expect((await finished(appId, head.body.buildId)).build).toMatchObject({ status: "succeeded", trigger: "redeploy", commitSha: sha });
    await serves(subdomain, "version six");
    await settled(appId);
    await server.request("PUT", `/api/apps/${appId}/fs/file`, { key, body: { path: "index.html", content: "<p>edited here</p>" } });
    const files = await server.request("POST", `/api/apps/${appId}/redeploy?source=files`, { key });
    expect((await finished(appId, files.body.buildId)).build).toMatchObject({ status: "succeeded", commitSha: null });
    await serves(subdomain, "edited here");
  });

  test("a rollback to a build whose image was removed rebuilds its commit", async () => {
    await settled(appId);
    const history = await buildsOf(appId);
    const first = history.at(-1);
    expect(first.commitMessage).toBe("First version");
    expect(first.imageKept).toBe(false); // PLATFORM_APP_IMAGES_KEPT=1 on this server
    const rollback = await server.request("POST", `/api/apps/${appId}/builds/${first.id}/rollback`, { key });
    expect(rollback.status).toBe(202);
    const done = await finished(appId, rollback.body.build.id);
    expect(done.build).toMatchObject({ status: "succeeded", rollbackOf: first.id, commitSha: first.commitSha });
    expect(done.log).toContain(`commit ${first.commitSha}`);
    await serves(subdomain, "version one");
  });

  test("a clone that fails fails the build with the reason and the serving version keeps serving", async () => {
    const response = await deployFromRepo({ name: "git-site", repository: { id: "1001", owner: "acme", name: "site", branch: "no-such-branch" } });
    expect(response.status).toBe(202);
    expect(response.body.created).toBe(false);
    const done = await finished(appId, response.body.buildId);
    expect(done.build.status).toBe("failed");
    expect(done.build.error).toContain("branch 'no-such-branch' does not exist in acme/site");
    const app = await waitForStatus(server, key, appId, ["running"]);
    expect(app.statusReason).toContain("no-such-branch");
    expect(await viaProxy(server, subdomain).then((r) => r.text())).toContain("version one");

    const missing = await deployFromRepo({ name: "git-missing", repository: { id: "9", owner: "acme", name: "nothing-here", branch: "main" } });
    const failed = await finished(missing.body.app.id, missing.body.buildId);
    expect(failed.build.status).toBe("failed");
    expect(failed.build.error).toContain("acme/nothing-here");
    expect((await waitForStatus(server, key, missing.body.app.id, ["failed"])).status).toBe("failed");
  });

  test("a clone slower than PLATFORM_GIT_CLONE_TIMEOUT_SECONDS fails with a clear message", async () => {
    await git.createRepo("acme", "slow", { files: site("slow") });
    // The server never answers within the test: the clone must end at its timeout all the same.
    git.setDelay(600_000);
    try {
      const started = Date.now();
      const response = await deployFromRepo({ name: "git-slow", repository: { id: "7", owner: "acme", name: "slow", branch: "main" } });
      const done = await finished(response.body.app.id, response.body.buildId, 30_000);
      expect(done.build.error).toContain("took longer than 8 s (PLATFORM_GIT_CLONE_TIMEOUT_SECONDS)");
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      git.setDelay(0);
    }
  }, 60_000);
});

describe("repository options", () => {
  test("`path` deploys a folder of a monorepo", async () => {
    await git.createRepo("acme", "mono", { files: { "index.html": "the repository root", "apps/web/index.html": "<p>the web app</p>", "apps/api/index.html": "api" } });
    const response = await deployFromRepo({ name: "git-mono", repository: { id: "2", owner: "acme", name: "mono", branch: "main", path: "apps/web" } });
    expect(response.status).toBe(202);
    expect(response.body.app.repository.path).toBe("apps/web");
    const done = await finished(response.body.app.id, response.body.buildId);
    expect(done.build.status).toBe("succeeded");
    await serves(response.body.app.subdomain, "the web app");
    const files = await server.request("GET", `/api/apps/${response.body.app.id}/fs/list`, { key });
    expect(files.body.entries.map((entry: any) => entry.name)).toEqual(["index.html"]);

    const notAFolder = await deployFromRepo({ name: "git-mono-2", repository: { id: "2", owner: "acme", name: "mono", branch: "main", path: "apps/nothing" } });
    const failed = await finished(notAFolder.body.app.id, notAFolder.body.buildId);
    expect(failed.build.error).toContain("'apps/nothing' is not a folder in acme/mono");
  });

  test("symbolic links in a repository are checked out as plain files, never followed", async () => {
    await git.createRepo("acme", "links", { files: site("links") });
    await git.commit("acme", "links", { files: {}, symlinks: { secret: "/etc/passwd" }, message: "A link out of the tree" });
    const response = await deployFromRepo({ name: "git-links", repository: { id: "3", owner: "acme", name: "links", branch: "main" } });
    expect((await finished(response.body.app.id, response.body.buildId)).build.status).toBe("succeeded");
    const file = await server.request("GET", `/api/apps/${response.body.app.id}/fs/file?path=secret`, { key });
    expect(file.status).toBe(200);
    expect(file.body.content ?? file.body.file?.content).toBe("/etc/passwd");
  });

  test("a private repository: refused without credentials, cloned with an access token or the GitHub App, the token in no URL or log", async () => {
    await git.createRepo("acme", "private", { files: site("private code"), private: true });
    const reference = { id: "5", owner: "acme", name: "private", branch: "main" };
    const anonymous = await deployFromRepo({ name: "git-private", repository: reference });
    const refused = await finished(anonymous.body.app.id, anonymous.body.buildId);
    expect(refused.build.error).toContain("asked for credentials");

    const withToken = await deployFromRepo({ name: "git-private", repository: reference, accessToken: git.token });
    expect(withToken.body.app.repository.hasAccessToken).toBe(true);
    const tokenBuild = await finished(withToken.body.app.id, withToken.body.buildId);
    expect(tokenBuild.build.status).toBe("succeeded");
    await serves(withToken.body.app.subdomain, "private code");

    // The installation is the workspace's once its install link's setup comes back.
    const state = new URL((await server.request("POST", "/api/github-app/install-link", { key })).body.installLink.url).searchParams.get("state")!;
    const connected = await server.request("GET", `/api/github-app/setup?installation_id=${INSTALLATION_ID}&state=${encodeURIComponent(state)}&code=${INSTALLING_USER.code}`, { key });
    expect(connected.status).toBe(200);
    const viaApp = await deployFromRepo({ name: "git-private-app", repository: { ...reference, repoHostInstallationId: INSTALLATION_ID } });
    const appBuild = await finished(viaApp.body.app.id, viaApp.body.buildId);
    expect(appBuild.build.status).toBe("succeeded");
    expect(tokenScopes).toEqual([{ repository_ids: [5] }]);

    const otherWorkspace = (await server.createKey("git-other", "other-team")).key;
    const borrowed = await server.request("POST", "/api/apps/deploy-from-repo", {
      key: otherWorkspace,
      body: { name: "borrowed", runtime: "node", memoryMB: 64, repository: { ...reference, repoHostInstallationId: INSTALLATION_ID } },
    });
    expect(borrowed.status).toBe(403);
    expect(borrowed.body.code).toBe("INSTALLATION_NOT_YOURS");

    for (const { url } of git.requests) expect(url).not.toContain(git.token);
    for (const answer of [refused, tokenBuild, appBuild]) expect(JSON.stringify(answer)).not.toContain(git.token);
    expect(server.output).not.toContain(git.token);
    const app = await server.request("GET", `/api/apps/${withToken.body.app.id}`, { key });
    expect(JSON.stringify(app.body)).not.toContain(git.token);

    // "" removes the stored token: the next clone is refused again.
    const cleared = await deployFromRepo({ name: "git-private", repository: reference, accessToken: "" });
    expect(cleared.body.app.repository.hasAccessToken).toBe(false);
    expect((await finished(cleared.body.app.id, cleared.body.buildId)).build.error).toContain("asked for credentials");
  });

  test("an app re-pointed at another repository loses its stored token unless it is given again", async () => {
    await git.createRepo("acme", "tokened", { files: site("tokened code"), private: true });
    await git.createRepo("acme", "elsewhere", { files: site("elsewhere code"), private: true });
    const tokened = { id: "13", owner: "acme", name: "tokened", branch: "main" };
    const elsewhere = { id: "14", owner: "acme", name: "elsewhere", branch: "main" };
    const first = await deployFromRepo({ name: "git-repointed", repository: tokened, accessToken: git.token });
    expect(first.body.accessTokenDropped).toBe(false);
    expect((await finished(first.body.app.id, first.body.buildId)).build.status).toBe("succeeded");
    // The same repository keeps the token.
    const again = await deployFromRepo({ name: "git-repointed", repository: tokened });
    expect(again.body).toMatchObject({ accessTokenDropped: false, app: { repository: { hasAccessToken: true } } });
    expect((await finished(again.body.app.id, again.body.buildId)).build.status).toBe("succeeded");

    const fetchedBefore = git.requests.length;
    const moved = await deployFromRepo({ name: "git-repointed", repository: elsewhere });
    expect(moved.status).toBe(202);
    expect(moved.body).toMatchObject({ created: false, accessTokenDropped: true, app: { repository: { name: "elsewhere", hasAccessToken: false } } });
    const refused = await finished(moved.body.app.id, moved.body.buildId);
    expect(refused.build.error).toContain("asked for credentials for acme/elsewhere");
    expect(refused.log).toContain("The stored access token was dropped: it was given for acme/tokened, not acme/elsewhere");
    const toElsewhere = git.requests.slice(fetchedBefore).filter((request) => request.url.startsWith("/acme/elsewhere.git/"));
    expect(toElsewhere.length).toBeGreaterThan(0);
    for (const request of toElsewhere) expect(request.headers.authorization).toBeUndefined();

    // Given again with the move, the token stays and reads the new repository.
    const withToken = await deployFromRepo({ name: "git-repointed", repository: tokened, accessToken: git.token });
    const back = await deployFromRepo({ name: "git-repointed", repository: elsewhere, accessToken: git.token });
    expect(withToken.body.accessTokenDropped).toBe(false);
    expect(back.body).toMatchObject({ accessTokenDropped: false, app: { repository: { hasAccessToken: true } } });
    expect((await finished(back.body.app.id, back.body.buildId)).build.status).toBe("succeeded");
    await serves(back.body.app.subdomain, "elsewhere code");
  });

  test("a repository deleted and made again under the same name (another repository id) loses the stored token too", async () => {
    await git.createRepo("acme", "remade", { files: site("remade code"), private: true });
    const original = { id: "21", owner: "acme", name: "remade", branch: "main" };
    const first = await deployFromRepo({ name: "git-remade", repository: original, accessToken: git.token });
    expect((await finished(first.body.app.id, first.body.buildId)).build.status).toBe("succeeded");

    const remade = await deployFromRepo({ name: "git-remade", repository: { ...original, id: "22" } });
    expect(remade.body).toMatchObject({ created: false, accessTokenDropped: true, app: { repository: { hasAccessToken: false } } });
    const refused = await finished(remade.body.app.id, remade.body.buildId);
    expect(refused.build.error).toContain("asked for credentials for acme/remade");
    expect(refused.log).toContain("The stored access token was dropped: it was given for acme/remade with repository id 21, not repository id 22");
  });

  test("owner, name, branch and path that could act as options or leave the clone are refused with 400", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ branch: "--upload-pack=touch /tmp/pwned" }, "repository.branch"],
      [{ branch: "main..evil" }, "repository.branch"],
      [{ owner: "-oProxyCommand=x" }, "repository.owner"],
      [{ name: "--config" }, "repository.name"],
      [{ path: "../../etc" }, "repository.path"],
      [{ path: "web/../../etc" }, "repository.path"],
    ];
    for (const [change, field] of cases) {
      const response = await deployFromRepo({ name: "git-bad", repository: { id: "1", owner: "acme", name: "site", branch: "main", ...change } });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe("VALIDATION_FAILED");
      expect(response.body.error).toContain(field);
    }
    expect((await server.request("GET", "/api/apps/", { key })).body.apps.some((app: any) => app.name === "git-bad")).toBe(false);
  });

  test("URL-encoded and multipart bodies deploy too", async () => {
    await git.createRepo("acme", "forms", { files: site("from a form") });
    const form = new URLSearchParams({ name: "git-form", runtime: "node", memoryMB: "64", "repository[id]": "8", "repository[owner]": "acme", "repository[name]": "forms", "repository[branch]": "main", autoDeploy: "true" });
    const encoded = await server.request("POST", "/api/apps/deploy-from-repo", { key, body: form.toString(), headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(encoded.status).toBe(202);
    expect(encoded.body.app.autoDeploy).toBe(true);
    const multipart = new FormData();
    for (const [name, value] of Object.entries({ name: "git-form-2", runtime: "node", memoryMB: "64", repository: JSON.stringify({ id: "8", owner: "acme", name: "forms", branch: "main" }) })) multipart.set(name, value);
    const parted = await server.request("POST", "/api/apps/deploy-from-repo", { key, body: multipart });
    expect(parted.status).toBe(202);
    expect((await finished(parted.body.app.id, parted.body.buildId)).build.status).toBe("succeeded");
  });

  test("without PLATFORM_GITHUB_APP_ID a repoHostInstallationId is refused at once", async () => {
    const plain = await TestServer.start({ PLATFORM_GIT_BASE_URL: git.baseUrl });
    try {
      const plainKey = (await plain.createKey("plain")).key;
      const response = await plain.request("POST", "/api/apps/deploy-from-repo", {
        key: plainKey,
        body: { name: "x", runtime: "node", memoryMB: 64, repository: { id: "1", owner: "acme", name: "site", branch: "main", repoHostInstallationId: "1" } },
      });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe("GITHUB_APP_NOT_CONFIGURED");
      const webhook = await fetch(`${plain.baseUrl}/api/webhooks/github`, {
        method: "POST",
        headers: { "x-hub-signature-256": `sha256=${"0".repeat(64)}`, "x-github-delivery": "d-1" },
        body: "{}",
      });
      expect(webhook.status).toBe(403);
      expect(((await webhook.json()) as any).code).toBe("WEBHOOKS_DISABLED");
    } finally {
      await plain.stop();
    }
  });

  test("a repository whose checkout would pass PLATFORM_MAX_UNCOMPRESSED_BYTES fails the build however well it packs, and leaves nothing", async () => {
    // 20 MB of one character packs into a few KB: only the listing of the tree tells its size.
    await git.createRepo("acme", "zeros", { files: { "index.html": "x", "zeros.bin": "0".repeat(20 * 1024 * 1024) } });
    const small = await TestServer.start({ PLATFORM_GIT_BASE_URL: git.baseUrl, PLATFORM_MAX_UNCOMPRESSED_BYTES: String(5 * 1024 * 1024) });
    try {
      const smallKey = (await small.createKey("small")).key;
      const response = await small.request("POST", "/api/apps/deploy-from-repo", {
        key: smallKey,
        body: { name: "zeros", runtime: "node", memoryMB: 64, repository: { id: "11", owner: "acme", name: "zeros", branch: "main" } },
      });
      expect(response.status).toBe(202);
      let build: any;
      for (const deadline = Date.now() + 60_000; Date.now() < deadline && !["failed", "succeeded"].includes(build?.status); await Bun.sleep(250)) {
        build = (await small.request("GET", `/api/apps/${response.body.app.id}/builds/${response.body.buildId}`, { key: smallKey })).body.build;
      }
      expect(build.error).toContain("acme/zeros is larger than 5 MB checked out");
      const written = Bun.spawnSync(["du", "-sb", small.dataDir]).stdout.toString();
      expect(Number(written.split("\t")[0])).toBeLessThan(10 * 1024 * 1024);
      await deleteAllApps(small, smallKey);
    } finally {
      await small.stop();
    }
  }, 120_000);

  test("a ZIP app's deploy hook rebuilds its kept tree; a ZIP upload queued on a repository app never takes a push", async () => {
    const zip = await deployZip(server, key, { name: "zip-hooked", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "<p>zipped</p>" }));
    await finished(zip.body.app.id, zip.body.buildId);
    const { url } = (await server.request("GET", `/api/apps/${zip.body.app.id}/deploy-hook`, { key })).body.deployHook;
    const called = (await (await fetch(url, { method: "POST" })).json()) as any;
    const rebuilt = await finished(zip.body.app.id, called.deployHookRun.buildId);
    expect(rebuilt.build).toMatchObject({ status: "succeeded", trigger: "deploy-hook", commitSha: null });
    await serves(zip.body.app.subdomain, "zipped");

    // A repository app: a ZIP upload queued behind a push's running build is not what a later push joins.
    await git.createRepo("acme", "mixed", { files: site("from git") });
    const mixed = await deployFromRepo({ name: "git-mixed", autoDeploy: true, repository: { id: "12", owner: "acme", name: "mixed", branch: "main" } });
    const mixedId = mixed.body.app.id;
    await finished(mixedId, mixed.body.buildId);
    await settled(mixedId);
    const before = (await buildsOf(mixedId)).length;
    await deliver(mixedId, "push", push("acme", "mixed", "main", 12));
    expect((await buildsOf(mixedId)).length).toBe(before + 1);
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await Bun.sleep(50)) {
      if ((await buildsOf(mixedId))[0].status !== "queued") break;
    }
    const upload = await deployZip(server, key, { name: "git-mixed", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "<p>uploaded</p>" }));
    expect(upload.status).toBe(202);
    await git.commit("acme", "mixed", { files: site("from git, second push"), message: "second" });
    const beforeLater = (await buildsOf(mixedId)).length;
    await deliver(mixedId, "push", push("acme", "mixed", "main", 12));
    expect((await buildsOf(mixedId)).length).toBe(beforeLater + 1);
    await settled(mixedId);
    await serves(mixed.body.app.subdomain, "from git, second push");
  });
});
