// What the proxy itself answers when it cannot hand a request to an app: a small HTML page, or
// JSON when the client asks for JSON (an API client behind the app's address). Each carries a
// stable code, like the API's errors. They are written to the client's socket as they are, a whole
// HTTP/1.1 response.

export type ProxyErrorCode =
  | "APP_NOT_FOUND"
  | "APP_UNAVAILABLE"
  | "APP_NOT_ANSWERING"
  | "APP_TIMED_OUT"
  | "RATE_LIMITED"
  | "TOO_MANY_CONNECTIONS"
  | "BAD_REQUEST"
  | "HEADERS_TOO_LARGE"
  | "REQUEST_TIMEOUT";

const TITLES: Record<ProxyErrorCode, string> = {
  APP_NOT_FOUND: "No app here",
  APP_UNAVAILABLE: "This app is not running",
  APP_NOT_ANSWERING: "This app is not answering",
  APP_TIMED_OUT: "This app took too long",
  RATE_LIMITED: "Too many requests",
  TOO_MANY_CONNECTIONS: "Too many connections",
  BAD_REQUEST: "Bad request",
  HEADERS_TOO_LARGE: "Request headers too large",
  REQUEST_TIMEOUT: "Request timed out",
};

const REASONS: Record<number, string> = {
  400: "Bad Request",
  404: "Not Found",
  408: "Request Timeout",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  505: "HTTP Version Not Supported",
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

/** A whole response; `close` says the connection ends after it (`Connection: close`). */
export function proxyErrorAnswer(
  status: number,
  code: ProxyErrorCode,
  message: string,
  accept: string | null,
  headers: Record<string, string>,
  close: boolean,
): Uint8Array {
  let body: string;
  let contentType: string;
  if (wantsJson(accept)) {
    body = JSON.stringify({ success: false, error: message, code });
    contentType = "application/json; charset=utf-8";
  } else {
    const title = escapeHtml(TITLES[code]);
    body =
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
      `<title>${status} ${title}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:15vh auto;padding:0 1em;color:#222}` +
      `h1{font-size:1.4em}p{color:#555}</style></head><body><h1>${title}</h1><p>${escapeHtml(message)}</p>` +
      `<p><small>${status} · ${code}</small></p></body></html>`;
    contentType = "text/html; charset=utf-8";
  }
  const bytes = Buffer.from(body, "utf8");
  let head = `HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}\r\ncontent-type: ${contentType}\r\ncontent-length: ${bytes.byteLength}\r\n`;
  head += "cache-control: no-store\r\nx-content-type-options: nosniff\r\n";
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  if (close) head += "connection: close\r\n";
  return Buffer.concat([Buffer.from(`${head}\r\n`, "latin1"), bytes]);
}

/** The answer to an ACME HTTP-01 challenge: the key authorization as plain text (its head only, to HEAD). */
export function challengeAnswer(keyAuthorization: string, headOnly: boolean, close: boolean): string {
  return (
    `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${keyAuthorization.length}\r\ncache-control: no-store\r\n` +
    `${close ? "connection: close\r\n" : ""}\r\n${headOnly ? "" : keyAuthorization}`
  );
}

/** 308 to the same request over HTTPS: unlike 301, the method and body are kept. */
export function httpsRedirectAnswer(location: string, close: boolean): string {
  return `HTTP/1.1 308 Permanent Redirect\r\nlocation: ${location}\r\ncontent-length: 0\r\n${close ? "connection: close\r\n" : ""}\r\n`;
}
