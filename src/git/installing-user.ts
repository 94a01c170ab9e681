// Which installations the user who installed the GitHub App can reach, as GitHub tells it when the
// App has "Request user authorization (OAuth) during installation" on: the setup URL then gets a
// one-time `code`, which the platform trades, with the App's client id and secret, for a token of
// that user, and GitHub lists with that token the App's installations the user may access
// (GET /user/installations). The token serves that one listing and is not kept.
import type { GitHubUserAuthorizationSettings } from "../config";
import { redact } from "../crypto/redact";
import { GITHUB_API_HEADERS, GITHUB_MESSAGE_MAX_CHARS, GitHubAppError, requestGitHub } from "./github-app";

/** GitHub did not take the code: it is single-use and lives 10 minutes. */
export class AuthorizationCodeRefused extends GitHubAppError {}

const PAGE_SIZE = 100;
/** A user who can reach more than 1,000 installations of this one App is not expected: past them the answer is no. */
const MAX_PAGES = 10;
/** For the whole check: the code's exchange and every page of the listing. */
const DEFAULT_TIMEOUT_MS = 20_000;

export class InstallingUsers {
  private readonly timeoutMs: number;

  constructor(
    private readonly settings: GitHubUserAuthorizationSettings & { apiBaseUrl: string },
    options: { timeoutMs?: number } = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** Whether GitHub lists the installation among those the user given `code` can reach. */
  async canReach(code: string, installationId: string): Promise<boolean> {
    const limits = { signal: AbortSignal.timeout(this.timeoutMs), timeoutMs: this.timeoutMs };
    const userToken = await this.userToken(code, limits);
    const secrets = [code, this.settings.clientSecret, userToken];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const { response, body } = await requestGitHub(
        this.settings.apiBaseUrl,
        `/user/installations?per_page=${PAGE_SIZE}&page=${page}`,
        { method: "GET", headers: { ...GITHUB_API_HEADERS, Authorization: `Bearer ${userToken}` } },
        { ...limits, secrets },
      );
      const installations = body?.installations;
      if (!response.ok || !Array.isArray(installations)) {
        throw new GitHubAppError(`GitHub answered ${response.status} without the user's installations${messageOf(body, secrets)}`);
      }
      if (installations.some((installation) => String((installation as { id?: unknown } | null)?.id) === installationId)) return true;
      if (installations.length < PAGE_SIZE) return false;
    }
    return false;
  }

  /** The user's token for `code` (POST <oauthBaseUrl>/login/oauth/access_token). */
  private async userToken(code: string, limits: { signal: AbortSignal; timeoutMs: number }): Promise<string> {
    const { clientId, clientSecret, oauthBaseUrl } = this.settings;
    const secrets = [code, clientSecret];
    const { response, body } = await requestGitHub(
      oauthBaseUrl,
      "/login/oauth/access_token",
      {
        method: "POST",
        headers: { Accept: "application/json", "Content-Type": "application/x-www-form-urlencoded", "User-Agent": GITHUB_API_HEADERS["User-Agent"] },
        body: new URLSearchParams({ client_id: clientId, client_secret: clientSecret, code }).toString(),
      },
      { ...limits, secrets },
    );
    // GitHub answers 200 with an `error` field when it refuses.
    if (response.ok && typeof body?.access_token === "string" && body.access_token !== "") return body.access_token;
    if (body?.error === "bad_verification_code") throw new AuthorizationCodeRefused("GitHub did not accept the setup's authorization code (it is single-use and expires after 10 minutes)");
    if (body?.error === "incorrect_client_credentials") {
      throw new GitHubAppError("GitHub refused the App's client id and secret: check PLATFORM_GITHUB_APP_CLIENT_ID and PLATFORM_GITHUB_APP_CLIENT_SECRET");
    }
    throw new GitHubAppError(`GitHub answered ${response.status} without a user token${messageOf(body, secrets)}`);
  }
}

/** GitHub's words for a refusal, if it gave any, shortened and with the secrets masked. */
function messageOf(body: Record<string, unknown> | undefined, secrets: string[]): string {
  const message = body?.error_description ?? body?.message ?? body?.error;
  return typeof message === "string" ? `: ${redact(message, secrets).slice(0, GITHUB_MESSAGE_MAX_CHARS)}` : "";
}
