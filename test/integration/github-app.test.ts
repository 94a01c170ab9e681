// GitHub App installations belong to the workspace that installed the App through its install
// link: the setup URL binds an installation when the link's signed state is the caller's own and
// GitHub lists it among those of the user who installed the App (the code GitHub gives the setup
// URL); an installation not theirs, unknown or bound to another workspace is answered the same;
// tokens are asked for the app's one repository. GitHub (API and OAuth) is a loopback stand-in;
// builds fail at once (the git base URL is a closed port), after the token is asked for.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHmac, generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../helpers/server";
import { freePort } from "../helpers/ports";
import { deleteAllApps } from "../helpers/apps";
import { tempDir } from "../helpers/temp";
import { installingUserAnswer, installingUserSettings, type GitHubUser } from "../helpers/github-users";

const APP_WEBHOOK_SECRET = "the-github-apps-own-webhook-secret";
/** Installations GitHub knows; nobody has connected any yet. */
const KNOWN = new Set(["4242", "4343"]);
/** GitHub users, by the code GitHub gives the setup URL after each installs the App. */
const OURS_INSTALLED = { code: "code-of-ours", installations: [...Array.from({ length: 120 }, (_, index) => String(10_000 + index)), "4242"] };
const THEIRS_INSTALLED = { code: "code-of-theirs", installations: ["5151"] };
/** A member of the organization of installation 4242 who can reach it too. */
const ALSO_REACHES_4242 = { code: "code-of-a-colleague", installations: ["4242"] };
const GITHUB_USERS: GitHubUser[] = [OURS_INSTALLED, THEIRS_INSTALLED, ALSO_REACHES_4242];

let server: TestServer;
let githubApi: ReturnType<typeof Bun.serve>;
let ours: string;
let theirs: string;
const tokenRequests: { installationId: string; body: unknown }[] = [];

beforeAll(async () => {
  const keyFile = join(tempDir(), "github-app.pem");
  writeFileSync(keyFile, generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }));
  githubApi = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const userAnswer = await installingUserAnswer(request, GITHUB_USERS);
      if (userAnswer) return userAnswer;
      const path = new URL(request.url).pathname;
      // As GitHub answers it to the App: the installation exists (the setup URL no longer asks; it once did).
      const installation = /^\/app\/installations\/(\d+)$/.exec(path)?.[1];
      if (request.method === "GET" && installation) return KNOWN.has(installation) ? Response.json({ id: Number(installation) }) : Response.json({ message: "Not Found" }, { status: 404 });
      const tokenFor = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path)?.[1];
      if (request.method === "POST" && tokenFor && KNOWN.has(tokenFor)) {
        tokenRequests.push({ installationId: tokenFor, body: await request.json().catch(() => null) });
        return Response.json({ token: "ghs_scoped", expires_at: new Date(Date.now() + 3600_000).toISOString() }, { status: 201 });
      }
      return Response.json({ message: "Not Found" }, { status: 404 });
    },
  });
  server = await TestServer.start({
    PLATFORM_GIT_BASE_URL: `http://127.0.0.1:${freePort()}`,
    PLATFORM_GITHUB_APP_ID: "777",
    PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE: keyFile,
    PLATFORM_GITHUB_API_URL: githubApi.url.origin,
    PLATFORM_GITHUB_APP_URL: "https://github.example/apps/test-platform",
    PLATFORM_GITHUB_APP_WEBHOOK_SECRET: APP_WEBHOOK_SECRET,
    ...installingUserSettings(githubApi.url.origin),
  });
  ours = (await server.createKey("ours", "ours")).key;
  theirs = (await server.createKey("theirs", "theirs")).key;
});

afterAll(async () => {
  await deleteAllApps(server, ours);
  await deleteAllApps(server, theirs);
  await server.stop();
  githubApi.stop(true);
}, 60_000);

async function stateOf(key: string): Promise<string> {
  const link = await server.request("POST", "/api/github-app/install-link", { key });
  expect(link.status).toBe(200);
  const url = new URL(link.body.installLink.url);
  expect(`${url.origin}${url.pathname}`).toBe("https://github.example/apps/test-platform/installations/new");
  return url.searchParams.get("state")!;
}

const setup = (key: string, installationId: string, state: string, code: string | null) =>
  server.request("GET", `/api/github-app/setup?installation_id=${installationId}&setup_action=install&state=${encodeURIComponent(state)}${code === null ? "" : `&code=${code}`}`, { key });

const installationsOf = async (key: string) => ((await server.request("GET", "/api/github-app/installations", { key })).body.installations as any[]).map((entry) => entry.installationId);

const deployWith = (key: string, installationId: string, name = "private-site") =>
  server.request("POST", "/api/apps/deploy-from-repo", {
    key,
    body: { name, runtime: "node", memoryMB: 64, autoDeploy: true, repository: { id: "5150", owner: "acme", name: "private", branch: "main", repoHostInstallationId: installationId } },
  });

/** An answer with the installation ids taken out: what tells one case from another, if anything does. */
const withoutIds = ({ status, body }: { status: number; body: unknown }) => JSON.stringify({ status, body }).replaceAll(/4242|4343|9999/g, "N");

test("an installation nobody connected cannot be used, not even by the first workspace that names it", async () => {
  const first = await deployWith(ours, "4242");
  expect(first.status).toBe(403);
  expect(first.body.code).toBe("INSTALLATION_NOT_YOURS");
});

test("an install link's state does not connect an installation that GitHub does not list for the user who installed the App", async () => {
  // Installation 4343 exists on GitHub and nobody has connected it; theirs asks with its own valid state and its own code.
  const taken = await setup(theirs, "4343", await stateOf(theirs), THEIRS_INSTALLED.code);
  expect(taken.status).toBe(403);
  expect(taken.body.code).toBe("INSTALLATION_NOT_YOURS");
  expect(await installationsOf(theirs)).toEqual([]);
  expect((await deployWith(theirs, "4343", "squatted")).status).toBe(403);
});

test("the setup URL connects the installation that the installing user's GitHub list holds to the workspace of the caller's own install link", async () => {
  const state = await stateOf(ours);
  // 4242 is on the second page of that user's installations.
  const connected = await setup(ours, "4242", state, OURS_INSTALLED.code);
  expect(connected.status).toBe(200);
  expect(connected.body.installation.installationId).toBe("4242");
  expect(await installationsOf(ours)).toEqual(["4242"]);
  expect(await installationsOf(theirs)).toEqual([]);
  const events = (await server.request("GET", "/api/organization/audit-log", { key: ours })).body.events as any[];
  expect(events.some((event) => event.action === "github_app.installation_bound" && event.target === "installation 4242")).toBe(true);
  expect((await deployWith(ours, "4242")).status).toBe(202);
});

test("a setup without GitHub's code, or with one GitHub no longer takes, says what to do", async () => {
  const state = await stateOf(ours);
  const withoutCode = await setup(ours, "4343", state, null);
  expect(withoutCode.status).toBe(400);
  expect(withoutCode.body.code).toBe("GITHUB_APP_NOT_CONFIGURED");
  expect(withoutCode.body.error).toContain("Request user authorization (OAuth) during installation");
  const staleCode = await setup(ours, "4343", state, "an-expired-code");
  expect(staleCode.status).toBe(400);
  expect(staleCode.body.code).toBe("INVALID_INSTALL_STATE");
  expect(await installationsOf(ours)).toEqual(["4242"]);
});

test("another workspace's claim on it is answered exactly as an unknown installation and one not the installing user's", async () => {
  const theirState = await stateOf(theirs);
  // GitHub lists 4242 for this user too (say, a member of the same organization): it is still ours.
  const claimed = await setup(theirs, "4242", theirState, ALSO_REACHES_4242.code);
  const unknownToGitHub = await setup(theirs, "9999", theirState, THEIRS_INSTALLED.code);
  const notTheirs = await setup(theirs, "4343", theirState, THEIRS_INSTALLED.code);
  expect(claimed.status).toBe(403);
  expect(withoutIds(claimed)).toBe(withoutIds(unknownToGitHub));
  expect(withoutIds(claimed)).toBe(withoutIds(notTheirs));
  const used = await deployWith(theirs, "4242", "borrowed");
  const unconnected = await deployWith(theirs, "4343", "borrowed");
  expect(used.status).toBe(403);
  expect(withoutIds(used)).toBe(withoutIds(unconnected));
  expect(await installationsOf(theirs)).toEqual([]);
});

test("a state that is not the caller's own, altered or not this platform's is refused", async () => {
  const ourState = await stateOf(ours);
  for (const [key, state] of [[theirs, ourState], [ours, `${ourState.slice(0, -3)}abc`], [ours, "eyJ3IjoieCJ9.bm90LWEtbWFj"]] as const) {
    const refused = await setup(key, "4343", state, OURS_INSTALLED.code);
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe("INVALID_INSTALL_STATE");
  }
});

test("without the App's client id and secret the setup URL says what to configure", async () => {
  const withoutClient = await TestServer.start({
    PLATFORM_GITHUB_APP_ID: "777",
    PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE: join(tempDir(), "unread.pem"),
    PLATFORM_GITHUB_API_URL: githubApi.url.origin,
  });
  try {
    const key = (await withoutClient.createKey("admin")).key;
    const answer = await withoutClient.request("GET", `/api/github-app/setup?installation_id=4343&state=x.y&code=${OURS_INSTALLED.code}`, { key });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe("GITHUB_APP_NOT_CONFIGURED");
    expect(answer.body.error).toContain("PLATFORM_GITHUB_APP_CLIENT_ID and PLATFORM_GITHUB_APP_CLIENT_SECRET");
  } finally {
    await withoutClient.stop();
  }
});

test("the installation token is asked for the app's one repository", async () => {
  for (const deadline = Date.now() + 30_000; tokenRequests.length === 0 && Date.now() < deadline; ) await Bun.sleep(100);
  expect(tokenRequests.length).toBeGreaterThan(0);
  for (const request of tokenRequests) expect(request).toEqual({ installationId: "4242", body: { repository_ids: [5150] } });
});

test("the GitHub App's webhook deploys the apps of the installation's workspace only", async () => {
  const apps = (await server.request("GET", "/api/apps/", { key: ours })).body.apps as any[];
  const appId = apps.find((app) => app.name === "private-site").id;
  const pushes = async () =>
    ((await server.request("GET", "/api/organization/audit-log", { key: ours })).body.events as any[]).filter((event) => event.action === "app.deployed_by_push" && event.target.includes(appId)).length;
  const deliver = (installationId: number, repository = { id: 5150, name: "private", owner: { login: "acme" } }) => {
    const body = JSON.stringify({ ref: "refs/heads/main", after: crypto.randomUUID(), installation: { id: installationId }, repository });
    return server.request("POST", "/api/webhooks/github", {
      body,
      headers: {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-github-delivery": crypto.randomUUID(),
        "x-hub-signature-256": `sha256=${createHmac("sha256", APP_WEBHOOK_SECRET).update(body).digest("hex")}`,
      },
    });
  };
  /** Status and body, without the delivery id each echoes. */
  const shapeOf = ({ status, body }: { status: number; body: any }) => JSON.stringify({ status, body }).replaceAll(body.delivery.id, "…");
  const deploying = await deliver(4242);
  expect(deploying.status).toBe(202);
  expect(await pushes()).toBe(1);
  // Neither another installation nor a repository nobody follows is told apart from a push that deploys.
  expect(shapeOf(await deliver(4343))).toBe(shapeOf(deploying));
  expect(shapeOf(await deliver(4242, { id: 6262, name: "nothing", owner: { login: "nobody" } }))).toBe(shapeOf(deploying));
  expect(await pushes()).toBe(1);
});
