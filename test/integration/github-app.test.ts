// GitHub App installations belong to the workspace that installed the App through its install
// link: the setup URL binds an installation when the link's signed state is the caller's own; an
// installation bound to another workspace is answered exactly as an unknown one; tokens are asked
// for the app's one repository. GitHub's API is a loopback stand-in; builds fail at once (the git
// base URL is a closed port), after the token is asked for.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHmac, generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../helpers/server";
import { freePort } from "../helpers/ports";
import { deleteAllApps } from "../helpers/apps";
import { tempDir } from "../helpers/temp";

const APP_WEBHOOK_SECRET = "the-github-apps-own-webhook-secret";
/** Installations GitHub knows; nobody has connected any yet. */
const KNOWN = new Set(["4242", "4343"]);

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
      const path = new URL(request.url).pathname;
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

const setup = (key: string, installationId: string, state: string) =>
  server.request("GET", `/api/github-app/setup?installation_id=${installationId}&setup_action=install&state=${encodeURIComponent(state)}`, { key });

const deployWith = (key: string, installationId: string, name = "private-site") =>
  server.request("POST", "/api/apps/deploy-from-repo", {
    key,
    body: { name, runtime: "node", memoryMB: 64, autoDeploy: true, repository: { id: "5150", owner: "acme", name: "private", branch: "main", repoHostInstallationId: installationId } },
  });

/** An answer with the installation ids taken out: what tells one case from another, if anything does. */
const withoutIds = (answer: { status: number; body: unknown }) => JSON.stringify(answer).replaceAll(/4242|4343|9999/g, "N");

test("an installation nobody connected cannot be used, not even by the first workspace that names it", async () => {
  const first = await deployWith(ours, "4242");
  expect(first.status).toBe(403);
  expect(first.body.code).toBe("INSTALLATION_NOT_YOURS");
});

test("the setup URL connects the installation to the workspace of the caller's own install link", async () => {
  const connected = await setup(ours, "4242", await stateOf(ours));
  expect(connected.status).toBe(200);
  expect(connected.body.installation.installationId).toBe("4242");
  const listed = await server.request("GET", "/api/github-app/installations", { key: ours });
  expect(listed.body.installations.map((entry: any) => entry.installationId)).toEqual(["4242"]);
  expect((await server.request("GET", "/api/github-app/installations", { key: theirs })).body.installations).toEqual([]);
  const events = (await server.request("GET", "/api/organization/audit-log", { key: ours })).body.events as any[];
  expect(events.some((event) => event.action === "github_app.installation_bound" && event.target === "installation 4242")).toBe(true);
  expect((await deployWith(ours, "4242")).status).toBe(202);
});

test("another workspace's claim on it is answered exactly as an unknown installation", async () => {
  const theirState = await stateOf(theirs);
  const claimed = await setup(theirs, "4242", theirState);
  const unknownToGitHub = await setup(theirs, "9999", theirState);
  expect(claimed.status).toBe(403);
  expect(withoutIds(claimed)).toBe(withoutIds(unknownToGitHub));
  const used = await deployWith(theirs, "4242", "borrowed");
  const unconnected = await deployWith(theirs, "4343", "borrowed");
  expect(used.status).toBe(403);
  expect(withoutIds(used)).toBe(withoutIds(unconnected));
  expect((await server.request("GET", "/api/github-app/installations", { key: theirs })).body.installations).toEqual([]);
});

test("a state that is not the caller's own, altered or not this platform's is refused", async () => {
  const ourState = await stateOf(ours);
  for (const [key, state] of [[theirs, ourState], [ours, `${ourState.slice(0, -3)}abc`], [ours, "eyJ3IjoieCJ9.bm90LWEtbWFj"]] as const) {
    const refused = await setup(key, "4343", state);
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe("INVALID_INSTALL_STATE");
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
  const deliver = (installationId: number) => {
    const body = JSON.stringify({ ref: "refs/heads/main", after: crypto.randomUUID(), installation: { id: installationId }, repository: { id: 5150, name: "private", owner: { login: "acme" } } });
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
  const deploying = await deliver(4242);
  expect(deploying.status).toBe(202);
  expect(await pushes()).toBe(1);
  const unconnected = await deliver(4343);
  expect([unconnected.status, unconnected.body.delivery.status]).toEqual([202, "received"]);
  expect(await pushes()).toBe(1);
});
