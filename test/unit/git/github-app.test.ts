import { afterAll, beforeEach, expect, test } from "bun:test";
import { generateKeyPairSync, verify, type KeyObject } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { GitHubAppError, GitHubAppTokens, MAX_ANSWER_BYTES } from "../../../src/git/github-app";
import { tempDir } from "../../helpers/temp";

const APP_ID = "424242";
/** The repository every token here is asked for, unless a test says otherwise. */
const REPOSITORY = { id: "1296269", name: "site" };
const CLOCK_SKEW_SECONDS = 30;
const appKeys = generateKeyPairSync("rsa", { modulusLength: 2048 });
const otherKeys = generateKeyPairSync("rsa", { modulusLength: 2048 });
const keysDir = tempDir();
const pkcs1KeyFile = keyFile("app-pkcs1.pem", appKeys.privateKey.export({ type: "pkcs1", format: "pem" }).toString());
const pkcs8KeyFile = keyFile("app-pkcs8.pem", appKeys.privateKey.export({ type: "pkcs8", format: "pem" }).toString());

/** The fake clock of each test, read by both the client and the stand-in for GitHub. */
let clock = Date.parse("2030-01-01T00:00:00Z");

/** What the stand-in for GitHub's API does; each test starts from the defaults below. */
const github = {
  verifyingKey: appKeys.publicKey as KeyObject,
  installations: new Set(["1001", "1002"]),
  tokenLifetimeMs: 60 * 60_000,
  answerDelayMs: 0,
  /** Replaces the normal answer when set. */
  answer: undefined as ((request: Request) => Response | Promise<Response>) | undefined,
  requests: [] as { installationId: string; authorization: string; method: string; body: unknown }[],
  issuedTokens: [] as string[],
};

beforeEach(() => {
  clock = Date.parse("2030-01-01T00:00:00Z");
  Object.assign(github, {
    verifyingKey: appKeys.publicKey,
    installations: new Set(["1001", "1002"]),
    tokenLifetimeMs: 60 * 60_000,
    answerDelayMs: 0,
    answer: undefined,
    requests: [],
  });
});

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const pathname = new URL(request.url).pathname;
    const path = pathname.match(/^\/app\/installations\/([^/]+)\/access_tokens$/);
    const authorization = request.headers.get("authorization") ?? "";
    const body = request.method === "POST" ? await request.json().catch(() => "not JSON") : undefined;
    github.requests.push({ installationId: path?.[1] ?? "", authorization, method: request.method, body });
    if (github.answerDelayMs) await Bun.sleep(github.answerDelayMs);
    if (github.answer) return github.answer(request);
    if (request.method !== "POST" || !path) return Response.json({ message: "Not Found" }, { status: 404 });
    if (
      request.headers.get("accept") !== "application/vnd.github+json" ||
      request.headers.get("x-github-api-version") !== "2022-11-28" ||
      request.headers.get("user-agent") !== "self-hosted-platform"
    ) {
      return Response.json({ message: "unexpected headers" }, { status: 400 });
    }
    if (!appJwtIsValid(authorization.replace(/^Bearer /, ""))) {
      return Response.json({ message: "A JSON web token could not be decoded" }, { status: 401 });
    }
    if (!github.installations.has(path[1]!)) return Response.json({ message: "Not Found" }, { status: 404 });
    const token = `ghs_${crypto.randomUUID().replaceAll("-", "")}`;
    github.issuedTokens.push(token);
    return Response.json({ token, expires_at: new Date(clock + github.tokenLifetimeMs).toISOString() }, { status: 201 });
  },
});

afterAll(() => server.stop(true));

/** As GitHub checks it: an RS256 signature by the app's key, iss = the app id, at most 10 minutes' life. */
function appJwtIsValid(jwt: string): boolean {
  const [header, claims, signature] = jwt.split(".");
  if (!header || !claims || !signature) return false;
  if (!verify("RSA-SHA256", Buffer.from(`${header}.${claims}`), github.verifyingKey, Buffer.from(signature, "base64url"))) return false;
  const { alg, typ } = JSON.parse(Buffer.from(header, "base64url").toString());
  const { iat, exp, iss } = JSON.parse(Buffer.from(claims, "base64url").toString());
  const nowSeconds = clock / 1000;
  return (
    alg === "RS256" && typ === "JWT" && iss === APP_ID &&
    exp - iat <= 600 && iat <= nowSeconds + CLOCK_SKEW_SECONDS && exp > nowSeconds
  );
}

function keyFile(name: string, pem: string): string {
  const path = join(keysDir, name);
  writeFileSync(path, pem);
  return path;
}

function tokens(options: { privateKeyFile?: string; apiBaseUrl?: string; timeoutMs?: number } = {}) {
  return new GitHubAppTokens(
    { appId: APP_ID, privateKeyFile: options.privateKeyFile ?? pkcs1KeyFile, apiBaseUrl: options.apiBaseUrl ?? server.url.origin },
    { now: () => clock, timeoutMs: options.timeoutMs },
  );
}

async function failure(promise: Promise<unknown>): Promise<GitHubAppError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(GitHubAppError);
  return error as GitHubAppError;
}

test("gets an installation token with an app JWT that GitHub's checks accept", async () => {
  const token = await tokens().installationToken("1001", REPOSITORY);
  expect(token).toBe(github.issuedTokens.at(-1)!);
  expect(github.requests).toHaveLength(1);
  expect(github.requests[0]!.installationId).toBe("1001");

  const jwt = tokens().appJwt();
  const [header, claims, signature] = jwt.split(".");
  expect(jwt).not.toContain("=");
  expect(JSON.parse(Buffer.from(header!, "base64url").toString())).toEqual({ alg: "RS256", typ: "JWT" });
  const nowSeconds = clock / 1000;
  expect(JSON.parse(Buffer.from(claims!, "base64url").toString())).toEqual({ iat: nowSeconds - 60, exp: nowSeconds + 540, iss: APP_ID });
  expect(verify("RSA-SHA256", Buffer.from(`${header}.${claims}`), appKeys.publicKey, Buffer.from(signature!, "base64url"))).toBe(true);
});

test("PKCS#1 and PKCS#8 private keys both work", async () => {
  for (const privateKeyFile of [pkcs1KeyFile, pkcs8KeyFile]) {
    expect(await tokens({ privateKeyFile }).installationToken("1001", REPOSITORY)).toBe(github.issuedTokens.at(-1)!);
  }
  expect(github.requests).toHaveLength(2);
});

test("a token is reused until 5 minutes before it expires, then a new one is fetched", async () => {
  const appTokens = tokens();
  const first = await appTokens.installationToken("1001", REPOSITORY);
  clock += 54 * 60_000;
  expect(await appTokens.installationToken("1001", REPOSITORY)).toBe(first);
  expect(github.requests).toHaveLength(1);

  clock += 60_000 + 1;
  const second = await appTokens.installationToken("1001", REPOSITORY);
  expect(second).not.toBe(first);
  expect(github.requests).toHaveLength(2);

  // Each installation has its own token.
  const other = await appTokens.installationToken("1002", REPOSITORY);
  expect(other).not.toBe(second);
  expect(github.requests).toHaveLength(3);
});

test("concurrent calls for one installation share one request", async () => {
  github.answerDelayMs = 100;
  const appTokens = tokens();
  const results = await Promise.all([1, 2, 3].map(() => appTokens.installationToken("1001", REPOSITORY)));
  expect(new Set(results).size).toBe(1);
  expect(github.requests).toHaveLength(1);
});

test("a caller that gives up does not take the shared request from the others", async () => {
  github.answerDelayMs = 200;
  const appTokens = tokens();
  const impatient = new AbortController();
  const abandoned = appTokens.installationToken("1001", REPOSITORY, impatient.signal);
  const patient = appTokens.installationToken("1001", REPOSITORY);
  impatient.abort(new Error("caller left"));
  await expect(abandoned).rejects.toThrow("caller left");
  expect(await patient).toBe(github.issuedTokens.at(-1)!);
  expect(github.requests).toHaveLength(1);
});

test("a JWT signed by another key than the app's gives a clear error", async () => {
  github.verifyingKey = otherKeys.publicKey;
  const error = await failure(tokens().installationToken("1001", REPOSITORY));
  expect(error.message).toContain("GitHub refused the app's JWT (401)");
  expect(error.message).toContain("PLATFORM_GITHUB_APP_ID");
  expect(error.message).toContain("PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE");
});

test("an installation GitHub does not know gives an error naming it", async () => {
  const error = await failure(tokens().installationToken("9999", REPOSITORY));
  expect(error.message).toBe("GitHub knows no such installation of the app (installation id 9999)");
});

test("an installation id that is not all digits is refused before any request", async () => {
  const appTokens = tokens();
  for (const installationId of ["", "abc", "12/../../user", "1001?x=1", " 1001", "-5"]) {
    const error = await failure(appTokens.installationToken(installationId, REPOSITORY));
    expect(error.message).toBe("repoHostInstallationId must be a number");
  }
  expect(github.requests).toHaveLength(0);
});

test("other answers show GitHub's message, shortened; a failure is not cached", async () => {
  github.answer = () => Response.json({ message: `Resource not accessible by integration ${"x".repeat(500)}` }, { status: 403 });
  const appTokens = tokens();
  const error = await failure(appTokens.installationToken("1001", REPOSITORY));
  expect(error.message).toStartWith("GitHub answered 403: Resource not accessible by integration");
  expect(error.message.length).toBeLessThan(260);

  github.answer = () => new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway" });
  expect((await failure(appTokens.installationToken("1001", REPOSITORY))).message).toBe("GitHub answered 502: Bad Gateway");

  github.answer = undefined;
  expect(await appTokens.installationToken("1001", REPOSITORY)).toBe(github.issuedTokens.at(-1)!);
  expect(github.requests).toHaveLength(3);
});

test("neither a token nor the JWT ever appears in an error message", async () => {
  const appTokens = tokens();
  const cachedToken = await appTokens.installationToken("1001", REPOSITORY);
  const messages: string[] = [];

  // GitHub echoing what it was sent, and what it issued before.
  github.answer = (request) =>
    Response.json({ message: `${request.headers.get("authorization")} ${cachedToken}` }, { status: 422 });
  messages.push((await failure(appTokens.installationToken("1002", REPOSITORY))).message);
  // A token without its expiry.
  github.answer = () => Response.json({ token: "ghs_incomplete_answer_token" }, { status: 201 });
  messages.push((await failure(appTokens.installationToken("1002", REPOSITORY))).message);
  github.answer = undefined;
  github.verifyingKey = otherKeys.publicKey;
  messages.push((await failure(appTokens.installationToken("1002", REPOSITORY))).message);
  messages.push((await failure(appTokens.installationToken("7777", REPOSITORY))).message);

  const jwts = github.requests.map(({ authorization }) => authorization.replace(/^Bearer /, ""));
  expect(jwts.length).toBeGreaterThan(1);
  for (const message of messages) {
    for (const secret of [...github.issuedTokens, "ghs_incomplete_answer_token", ...jwts]) expect(message).not.toContain(secret);
  }
  expect(messages[0]).toBe("GitHub answered 422: Bearer **** ****");
  expect(messages[1]).toBe("GitHub answered 201 without an installation token and its expires_at");
});

test("an API that cannot be reached or does not answer in time names the address", async () => {
  const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const closedOrigin = closed.url.origin;
  closed.stop(true);
  const refused = await failure(tokens({ apiBaseUrl: closedOrigin }).installationToken("1001", REPOSITORY));
  expect(refused.message).toStartWith(`could not reach ${closedOrigin}: `);

  github.answerDelayMs = 2_000;
  const started = performance.now();
  const slow = await failure(tokens({ timeoutMs: 200 }).installationToken("1001", REPOSITORY));
  expect(slow.message).toBe(`could not reach ${server.url.origin}: no answer within 0.2 s`);
  expect(performance.now() - started).toBeLessThan(1_500);
});

test("an endless answer is given up once it passes the size cap", async () => {
  const chunk = new Uint8Array(256 * 1024).fill(120);
  github.answer = () => new Response(new ReadableStream({ pull: (controller) => controller.enqueue(chunk) }), { status: 201 });
  const error = await failure(tokens().installationToken("1001", REPOSITORY));
  expect(error.message).toBe(`GitHub answered 201 with more than ${MAX_ANSWER_BYTES} bytes`);
});

test("a missing or invalid key file gives an error naming the setting, not the key", async () => {
  const missing = await failure(tokens({ privateKeyFile: join(keysDir, "absent.pem") }).installationToken("1001", REPOSITORY));
  expect(missing.message).toBe("PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE names a file that cannot be read (ENOENT)");

  const garbled = keyFile("garbled.pem", "-----BEGIN RSA PRIVATE KEY-----\nsecretish-key-material\n-----END RSA PRIVATE KEY-----\n");
  const invalid = await failure(tokens({ privateKeyFile: garbled }).installationToken("1001", REPOSITORY));
  expect(invalid.message).toBe("PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE does not hold an unencrypted PEM private key");

  const ecKey = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const notRsa = await failure(tokens({ privateKeyFile: keyFile("ec.pem", ecKey) }).installationToken("1001", REPOSITORY));
  expect(notRsa.message).toBe("PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE holds a key of type ec; GitHub Apps sign with RSA");
  expect(github.requests).toHaveLength(0);
});

test("a token is asked for the app's one repository: by GitHub's id, or by name when the id is not GitHub's number", async () => {
  const appTokens = tokens();
  await appTokens.installationToken("1001", REPOSITORY);
  await appTokens.installationToken("1001", { id: "not-a-number", name: "docs" });
  expect(github.requests.map(({ body }) => body)).toEqual([{ repository_ids: [1296269] }, { repositories: ["docs"] }]);
});

test("each repository of an installation has its own token", async () => {
  const appTokens = tokens();
  const site = await appTokens.installationToken("1001", REPOSITORY);
  const other = await appTokens.installationToken("1001", { id: "42", name: "other" });
  expect(other).not.toBe(site);
  expect(await appTokens.installationToken("1001", REPOSITORY)).toBe(site);
  expect(github.requests).toHaveLength(2);
});
