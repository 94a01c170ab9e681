// Repository deploys: where they clone from and the GitHub App that grants access (PLATFORM_GIT_*, PLATFORM_GITHUB_*).
import { baseUrlSetting, integerSetting } from "./parse";

/** Where repository deploys clone from, and how the platform proves it may (src/apps/repository). */
export interface GitSettings {
  /** Repositories are `<baseUrl>/<owner>/<name>.git`. */
  baseUrl: string;
  cloneTimeoutSeconds: number;
  /** The GitHub App that grants access to private repositories; null unless PLATFORM_GITHUB_APP_ID is set. */
  githubApp: {
    appId: string;
    privateKeyFile: string;
    apiBaseUrl: string;
    /** The App's public page (https://github.com/apps/<slug>), where install links point; null: none are made. */
    publicUrl: string | null;
    /** The App's OAuth client, with which the setup URL learns who installed it; null: no installation can be connected. */
    userAuthorization: GitHubUserAuthorizationSettings | null;
  } | null;
  /** The GitHub App's webhook secret, which signs the deliveries of POST /api/webhooks/github; that webhook is off while unset. */
  githubAppWebhookSecret: string | undefined;
  /** PLATFORM_GITHUB_WEBHOOK_SECRET, the secret every tenant once shared, is set: it is read no more, and the start says so. */
  sharedWebhookSecretSet: boolean;
}

/** The GitHub App's OAuth client (PLATFORM_GITHUB_APP_CLIENT_ID/SECRET) and where GitHub's OAuth endpoints are. */
export interface GitHubUserAuthorizationSettings {
  clientId: string;
  clientSecret: string;
  /** Without a trailing slash, e.g. https://github.com: the code is traded at `<oauthBaseUrl>/login/oauth/access_token`. */
  oauthBaseUrl: string;
}

export function gitSettings(env: Record<string, string | undefined>): GitSettings {
  const appId = env.PLATFORM_GITHUB_APP_ID || undefined;
  if (appId !== undefined && !/^\d+$/.test(appId)) throw new Error(`PLATFORM_GITHUB_APP_ID must be a number, got "${appId}"`);
  const privateKeyFile = env.PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE || undefined;
  if (appId && !privateKeyFile) throw new Error("PLATFORM_GITHUB_APP_ID is set: PLATFORM_GITHUB_APP_PRIVATE_KEY_FILE must name the app's private key");
  const clientId = env.PLATFORM_GITHUB_APP_CLIENT_ID || undefined;
  const clientSecret = env.PLATFORM_GITHUB_APP_CLIENT_SECRET || undefined;
  if (Boolean(clientId) !== Boolean(clientSecret)) throw new Error("PLATFORM_GITHUB_APP_CLIENT_ID and PLATFORM_GITHUB_APP_CLIENT_SECRET go together: set both or neither");
  return {
    baseUrl: baseUrlSetting(env, "PLATFORM_GIT_BASE_URL", "https://github.com"),
    cloneTimeoutSeconds: integerSetting(env, "PLATFORM_GIT_CLONE_TIMEOUT_SECONDS", 300, 1),
    githubApp:
      appId && privateKeyFile
        ? {
            appId,
            privateKeyFile,
            apiBaseUrl: baseUrlSetting(env, "PLATFORM_GITHUB_API_URL", "https://api.github.com"),
            publicUrl: env.PLATFORM_GITHUB_APP_URL ? baseUrlSetting(env, "PLATFORM_GITHUB_APP_URL", "") : null,
            userAuthorization:
              clientId && clientSecret ? { clientId, clientSecret, oauthBaseUrl: baseUrlSetting(env, "PLATFORM_GITHUB_OAUTH_URL", "https://github.com") } : null,
          }
        : null,
    githubAppWebhookSecret: env.PLATFORM_GITHUB_APP_WEBHOOK_SECRET || undefined,
    sharedWebhookSecretSet: Boolean(env.PLATFORM_GITHUB_WEBHOOK_SECRET),
  };
}
