// What the proxy itself answers when it cannot hand a request to an app: a small HTML page, or
// JSON when the client asks for JSON (an API client behind the app's address). Each carries a
// stable code, like the API's errors.

export type ProxyErrorCode = "APP_NOT_FOUND" | "APP_UNAVAILABLE" | "APP_NOT_ANSWERING" | "RATE_LIMITED" | "BAD_REQUEST";

const TITLES: Record<ProxyErrorCode, string> = {
  APP_NOT_FOUND: "No app here",
  APP_UNAVAILABLE: "This app is not running",
  APP_NOT_ANSWERING: "This app is not answering",
  RATE_LIMITED: "Too many requests",
  BAD_REQUEST: "Bad request",
};

/** JSON when the client prefers it to HTML: `Accept: application/json` and no text/html before it. */
function wantsJson(accept: string | null): boolean {
  if (!accept) return false;
  const json = accept.indexOf("application/json");
  const html = accept.indexOf("text/html");
  return json >= 0 && (html < 0 || json < html);
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

export function proxyErrorResponse(
  status: number,
  code: ProxyErrorCode,
  message: string,
  accept: string | null,
  headers: Record<string, string> = {},
): Response {
  const common = { "cache-control": "no-store", "x-content-type-options": "nosniff", ...headers };
  if (wantsJson(accept)) {
    return new Response(JSON.stringify({ success: false, error: message, code }), {
      status,
      headers: { ...common, "content-type": "application/json; charset=utf-8" },
    });
  }
  const title = escapeHtml(TITLES[code]);
  const page =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
    `<title>${status} ${title}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:15vh auto;padding:0 1em;color:#222}` +
    `h1{font-size:1.4em}p{color:#555}</style></head><body><h1>${title}</h1><p>${escapeHtml(message)}</p>` +
    `<p><small>${status} · ${code}</small></p></body></html>`;
  return new Response(page, { status, headers: { ...common, "content-type": "text/html; charset=utf-8" } });
}
