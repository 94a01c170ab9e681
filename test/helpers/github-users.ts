// The part of a GitHub stand-in (on loopback) that says who installed the App: the OAuth code
// exchange (POST /login/oauth/access_token, checking the App's client id and secret) and
// GET /user/installations with the user token it gave, paginated as GitHub does.

export const TEST_OAUTH_CLIENT = { id: "Iv1.0123456789abcdef", secret: "the-apps-client-secret-0123456789abcdef" };

/** A GitHub user: the setup code GitHub gives them and the installations of the App they can reach. */
export interface GitHubUser {
  code: string;
  installations: string[];
}

/** The settings that point a test server's setup URL at the stand-in. */
export function installingUserSettings(origin: string): Record<string, string> {
  return { PLATFORM_GITHUB_APP_CLIENT_ID: TEST_OAUTH_CLIENT.id, PLATFORM_GITHUB_APP_CLIENT_SECRET: TEST_OAUTH_CLIENT.secret, PLATFORM_GITHUB_OAUTH_URL: origin };
}

const userToken = (user: GitHubUser) => `ghu_${user.code}`;

/** The stand-in's answer when the request is one of those two, else undefined. */
export async function installingUserAnswer(request: Request, users: GitHubUser[]): Promise<Response | undefined> {
  const url = new URL(request.url);
  if (request.method === "POST" && url.pathname === "/login/oauth/access_token") {
    const form = new URLSearchParams(await request.text());
    // GitHub answers these refusals with 200 and an `error` field.
    if (form.get("client_id") !== TEST_OAUTH_CLIENT.id || form.get("client_secret") !== TEST_OAUTH_CLIENT.secret) {
      return Response.json({ error: "incorrect_client_credentials", error_description: "The client_id and/or client_secret passed are incorrect." });
    }
    const user = users.find(({ code }) => code === form.get("code"));
    if (!user) return Response.json({ error: "bad_verification_code", error_description: "The code passed is incorrect or expired." });
    return Response.json({ access_token: userToken(user), token_type: "bearer", scope: "" });
  }
  if (request.method === "GET" && url.pathname === "/user/installations") {
    const user = users.find((candidate) => request.headers.get("authorization") === `Bearer ${userToken(candidate)}`);
    if (!user) return Response.json({ message: "Bad credentials" }, { status: 401 });
    const perPage = Math.min(Number(url.searchParams.get("per_page") ?? 30), 100);
    const page = Number(url.searchParams.get("page") ?? 1);
    const installations = user.installations.slice((page - 1) * perPage, page * perPage).map((id) => ({ id: Number(id), account: { login: "someone" } }));
    return Response.json({ total_count: user.installations.length, installations });
  }
  return undefined;
}
