// Whose installation it is, as GitHub tells the setup URL: the code traded for the installing
// user's token with the App's client id and secret, then that user's installations listed page by
// page; every failure in words without the code, the client secret or the token, and the whole
// check bounded in pages and time. GitHub is a loopback stand-in.
import { afterAll, beforeEach, expect, test } from "bun:test";
import { GitHubAppError } from "../../../src/git/github-app";
import { AuthorizationCodeRefused, InstallingUsers } from "../../../src/git/installing-user";
import { installingUserAnswer, TEST_OAUTH_CLIENT, type GitHubUser } from "../../helpers/github-users";

const MANY = Array.from({ length: 5_000 }, (_, index) => String(100_000 + index));
const USERS: GitHubUser[] = [
  { code: "code-few", installations: ["11", "12"] },
  { code: "code-second-page", installations: [...MANY.slice(0, 100), "4242"] },
  { code: "code-many", installations: MANY },
];

const github = {
  requests: [] as string[],
  delayMs: 0,
  /** Replaces the normal answer when set. */
  answer: undefined as ((request: Request) => Response | Promise<Response>) | undefined,
};

beforeEach(() => Object.assign(github, { requests: [], delayMs: 0, answer: undefined }));

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const url = new URL(request.url);
    github.requests.push(`${request.method} ${url.pathname}${url.search}`);
    if (github.delayMs) await Bun.sleep(github.delayMs);
    if (github.answer) return github.answer(request);
    return (await installingUserAnswer(request, USERS)) ?? Response.json({ message: "Not Found" }, { status: 404 });
  },
});

afterAll(() => server.stop(true));

function users(options: { clientSecret?: string; timeoutMs?: number } = {}) {
  const origin = server.url.origin;
  return new InstallingUsers(
    { clientId: TEST_OAUTH_CLIENT.id, clientSecret: options.clientSecret ?? TEST_OAUTH_CLIENT.secret, oauthBaseUrl: origin, apiBaseUrl: origin },
    { timeoutMs: options.timeoutMs },
  );
}

/** What the check failed with: a GitHubAppError. */
async function failure(promise: Promise<unknown>): Promise<GitHubAppError> {
  const error = await promise.then(() => new Error("it did not fail"), (reason: unknown) => reason);
  expect(error).toBeInstanceOf(GitHubAppError);
  return error as GitHubAppError;
}

test("an installation the user can reach is found, on whichever page GitHub lists it", async () => {
  expect(await users().canReach("code-few", "12")).toBe(true);
  expect(github.requests).toEqual(["POST /login/oauth/access_token", "GET /user/installations?per_page=100&page=1"]);
  github.requests = [];
  expect(await users().canReach("code-second-page", "4242")).toBe(true);
  expect(github.requests.slice(1)).toEqual(["GET /user/installations?per_page=100&page=1", "GET /user/installations?per_page=100&page=2"]);
});

test("one the user cannot reach is not, and the listing stops at its last page or after ten", async () => {
  expect(await users().canReach("code-few", "4242")).toBe(false);
  expect(github.requests).toHaveLength(2);
  github.requests = [];
  expect(await users().canReach("code-many", "4242")).toBe(false);
  expect(github.requests).toHaveLength(1 + 10);
});

test("a code GitHub does not take and a wrong client secret are told apart, in words without a secret", async () => {
  const refused = await failure(users().canReach("code-stale", "11"));
  expect(refused).toBeInstanceOf(AuthorizationCodeRefused);
  expect(refused.message).toContain("single-use");
  const wrongClient = await failure(users({ clientSecret: "not-the-client-secret" }).canReach("code-few", "11"));
  expect(wrongClient).not.toBeInstanceOf(AuthorizationCodeRefused);
  expect(wrongClient.message).toContain("PLATFORM_GITHUB_APP_CLIENT_ID and PLATFORM_GITHUB_APP_CLIENT_SECRET");
});

test("GitHub's words are shown without the code, the client secret or the user token", async () => {
  github.answer = async (request) => Response.json({ error: "unexpected", error_description: `you sent ${await request.text()}` });
  const exchange = await failure(users().canReach("code-few", "11"));
  expect(exchange.message).toStartWith("GitHub answered 200 without a user token: you sent ");
  github.answer = async (request) =>
    new URL(request.url).pathname === "/user/installations"
      ? Response.json({ message: `token ${request.headers.get("authorization")}` }, { status: 403 })
      : ((await installingUserAnswer(request, USERS)) as Response);
  const listing = await failure(users().canReach("code-few", "11"));
  expect(listing.message).toBe("GitHub answered 403 without the user's installations: token Bearer ****");
  for (const message of [exchange.message, listing.message]) {
    for (const secret of ["code-few", TEST_OAUTH_CLIENT.secret, "ghu_code-few"]) expect(message).not.toContain(secret);
  }
});

test("a redirect is not followed: it would carry the client secret or the token along", async () => {
  github.answer = (request) =>
    new URL(request.url).pathname === "/elsewhere" ? Response.json({ access_token: "taken" }) : new Response(null, { status: 307, headers: { location: `${server.url.origin}/elsewhere` } });
  expect((await failure(users().canReach("code-few", "11"))).message).toBe("GitHub answered 307 without a user token");
  expect(github.requests).toEqual(["POST /login/oauth/access_token"]);
});

test("the whole check, every page of it, has one deadline", async () => {
  github.delayMs = 80;
  const started = performance.now();
  const slow = await failure(users({ timeoutMs: 300 }).canReach("code-many", "4242"));
  expect(slow.message).toBe(`could not reach ${server.url.origin}: no answer within 0.3 s`);
  expect(performance.now() - started).toBeLessThan(1_000);
  expect(github.requests.length).toBeLessThan(6);
});
