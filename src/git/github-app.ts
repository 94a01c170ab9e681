// Installation tokens of the platform's GitHub App, with which deploys clone private repositories:
// the app signs a short-lived JWT with its private key and trades it at GitHub's API for a token of
// one installation (an account or organization that installed the app), scoped to the one
// repository the deploy clones. Such a token lives an hour. Also how any request to GitHub is
// made here: bounded in time and in the bytes of its answer, never following a redirect.
import { createPrivateKey, sign, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { redact } from "../crypto/redact";

export interface GitHubAppSettings {
  appId: string;
  privateKeyFile: string;
  /** Without a trailing slash, e.g. https://api.github.com. */
  apiBaseUrl: string;
}

/** A failure to get a token, in words safe to show users: it never holds a token or the JWT. */
export class GitHubAppError extends Error {}

const KEY_SETTING = "PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE";
// GitHub refuses app JWTs that live over 10 minutes; iat is backdated for a clock that runs ahead of GitHub's.
const JWT_BACKDATE_SECONDS = 60;
const JWT_LIFETIME_SECONDS = 9 * 60;
/** A cached token is replaced this long before it expires, so that a clone started with it can finish. */
const REFRESH_BEFORE_EXPIRY_MS = 5 * 60_000;
const DEFAULT_TIMEOUT_MS = 15_000;
export const GITHUB_MESSAGE_MAX_CHARS = 200;
/** The most of an answer of GitHub's held in memory: a page of 100 installations is a few hundred KB. */
export const MAX_ANSWER_BYTES = 2 * 1024 * 1024;

/** What GitHub's REST API expects of every request. */
export const GITHUB_API_HEADERS = {
  Accept: "application/vnd.github+json",
  "X-GitHub-Api-Version": "2022-11-28",
  "User-Agent": "self-hosted-platform",
};

interface InstallationToken {
  token: string;
  refreshAt: number;
}

/** The repository a token is asked for: by GitHub's id when the app has it as a number, else by name. */
export interface TokenRepository {
  id: string | null;
  name: string;
}

/** What the token request asks for: read access to this one repository, not to all the installation grants. */
function repositoryScope(repository: TokenRepository): { repository_ids: number[] } | { repositories: string[] } {
  return repository.id !== null && /^\d{1,15}$/.test(repository.id) ? { repository_ids: [Number(repository.id)] } : { repositories: [repository.name] };
}

export class GitHubAppTokens {
  private readonly now: () => number;
  private readonly timeoutMs: number;
  private privateKey: KeyObject | undefined;
  private readonly tokens = new Map<string, InstallationToken>();
  private readonly requests = new Map<string, Promise<InstallationToken>>();

  constructor(
    private readonly settings: GitHubAppSettings,
    options: { now?: () => number; timeoutMs?: number } = {},
  ) {
    this.now = options.now ?? Date.now;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * A token of the installation for the one repository, cached until 5 minutes before its
   * expires_at. Concurrent calls share one request; `signal` only ends this caller's wait, so the
   * others still get the token.
   */
  async installationToken(installationId: string, repository: TokenRepository, signal?: AbortSignal): Promise<string> {
    assertInstallationId(installationId);
    signal?.throwIfAborted();
    const scope = repositoryScope(repository);
    const cacheKey = `${installationId} ${JSON.stringify(scope)}`;
    const cached = this.tokens.get(cacheKey);
    if (cached && this.now() < cached.refreshAt) return cached.token;
    let request = this.requests.get(cacheKey);
    if (!request) {
      request = this.requestToken(installationId, scope, cacheKey).finally(() => this.requests.delete(cacheKey));
      this.requests.set(cacheKey, request);
    }
    return (await untilAborted(request, signal)).token;
  }

  /** The signed app JWT (RS256), valid for 9 minutes. */
  appJwt(): string {
    const nowSeconds = Math.floor(this.now() / 1000);
    const header = base64Url(JSON.stringify({ alg: "RS256", typ: "JWT" }));
    const claims = base64Url(
      JSON.stringify({ iat: nowSeconds - JWT_BACKDATE_SECONDS, exp: nowSeconds + JWT_LIFETIME_SECONDS, iss: this.settings.appId }),
    );
    const signature = sign("RSA-SHA256", Buffer.from(`${header}.${claims}`), this.key()).toString("base64url");
    return `${header}.${claims}.${signature}`;
  }

  private async requestToken(installationId: string, scope: object, cacheKey: string): Promise<InstallationToken> {
    const { response, body, jwt } = await this.post(`/app/installations/${installationId}/access_tokens`, scope);
    if (!response.ok) throw this.failure(response, body, installationId, jwt);
    const expiresAt = typeof body?.expires_at === "string" ? Date.parse(body.expires_at) : Number.NaN;
    if (typeof body?.token !== "string" || body.token === "" || Number.isNaN(expiresAt)) {
      throw new GitHubAppError(`GitHub answered ${response.status} without an installation token and its expires_at`);
    }
    const token = { token: body.token, refreshAt: expiresAt - REFRESH_BEFORE_EXPIRY_MS };
    this.tokens.set(cacheKey, token);
    return token;
  }

  /** A POST to GitHub's API as the app (its JWT). */
  private async post(path: string, json: object) {
    const jwt = this.appJwt();
    const { response, body } = await requestGitHub(
      this.settings.apiBaseUrl,
      path,
      { method: "POST", headers: { ...GITHUB_API_HEADERS, Authorization: `Bearer ${jwt}`, "Content-Type": "application/json" }, body: JSON.stringify(json) },
      { signal: AbortSignal.timeout(this.timeoutMs), timeoutMs: this.timeoutMs, secrets: this.knownSecrets(jwt) },
    );
    return { response, body, jwt };
  }

  /** An answer other than success, in words. */
  private failure(response: Response, body: Record<string, unknown> | undefined, installationId: string, jwt: string): GitHubAppError {
    if (response.status === 401) {
      return new GitHubAppError(`GitHub refused the app's JWT (401): check PLATFORM_GITHUB_APP_ID and that ${KEY_SETTING} holds that app's private key`);
    }
    if (response.status === 404) return new GitHubAppError(`GitHub knows no such installation of the app (installation id ${installationId})`);
    const message = typeof body?.message === "string" ? body.message : response.statusText || "no message";
    return new GitHubAppError(`GitHub answered ${response.status}: ${this.withoutSecrets(message, jwt).slice(0, GITHUB_MESSAGE_MAX_CHARS)}`);
  }

  /** Text from GitHub or the network with the JWT and every token known here masked. */
  private withoutSecrets(text: string, jwt: string): string {
    return redact(text, this.knownSecrets(jwt));
  }

  private knownSecrets(jwt: string): string[] {
    return [jwt, ...[...this.tokens.values()].map(({ token }) => token)];
  }

  /** Read on first use, so that a platform without deploys from GitHub never needs the file. */
  private key(): KeyObject {
    if (this.privateKey) return this.privateKey;
    let pem: string;
    try {
      pem = readFileSync(this.settings.privateKeyFile, "utf8");
    } catch (error) {
      throw new GitHubAppError(`${KEY_SETTING} names a file that cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`);
    }
    let key: KeyObject;
    try {
      key = createPrivateKey(pem);
    } catch {
      throw new GitHubAppError(`${KEY_SETTING} does not hold an unencrypted PEM private key`);
    }
    if (key.asymmetricKeyType !== "rsa") {
      throw new GitHubAppError(`${KEY_SETTING} holds a key of type ${key.asymmetricKeyType}; GitHub Apps sign with RSA`);
    }
    this.privateKey = key;
    return key;
  }
}

export interface GitHubRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/**
 * A request to GitHub (`baseUrl` + `path`) with its answer read, all within `signal` (a deadline
 * of `timeoutMs`) and at most MAX_ANSWER_BYTES; the body is the answer's JSON object, if it is one.
 * A redirect is not followed: it would carry the credentials to wherever it points. Failures are
 * GitHubAppErrors with `secrets` masked.
 */
export async function requestGitHub(
  baseUrl: string,
  path: string,
  request: GitHubRequest,
  limits: { signal: AbortSignal; timeoutMs: number; secrets: string[] },
): Promise<{ response: Response; body: Record<string, unknown> | undefined }> {
  try {
    const response = await fetch(`${baseUrl}${path}`, { ...request, redirect: "manual", signal: limits.signal });
    return { response, body: parseJson(await boundedText(response)) };
  } catch (error) {
    if (error instanceof GitHubAppError) throw error;
    const reason = (error as Error).name === "TimeoutError" ? `no answer within ${limits.timeoutMs / 1000} s` : (error as Error).message;
    throw new GitHubAppError(`could not reach ${baseUrl}: ${redact(reason, limits.secrets)}`);
  }
}

/** The answer's text, given up past MAX_ANSWER_BYTES whatever its Content-Length said. */
async function boundedText(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    total += next.value.byteLength;
    if (total > MAX_ANSWER_BYTES) {
      void reader.cancel().catch(() => {});
      throw new GitHubAppError(`GitHub answered ${response.status} with more than ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(next.value);
  }
  return Buffer.concat(chunks).toString();
}

/** It goes into the URL's path. */
function assertInstallationId(installationId: string) {
  if (!/^\d+$/.test(installationId)) throw new GitHubAppError("repoHostInstallationId must be a number");
}

function base64Url(text: string): string {
  return Buffer.from(text).toString("base64url");
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** `promise`, or the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}
