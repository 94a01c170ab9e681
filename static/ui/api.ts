// The one way the dashboard talks to the platform: its public JSON API with the session cookie.
// Every answer is the envelope `{success, ...payload}`; a failure becomes an ApiError carrying the
// API's message and stable code, which pages show near where it happened.

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** Calls the API and returns the envelope's payload; throws ApiError with the API's message. */
export async function api<Payload = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Payload> {
  const init: RequestInit = { method, headers: { accept: "application/json", ...headers } };
  if (body !== undefined) {
    (init.headers as Record<string, string>)["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response: Response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError("The platform did not answer: check the connection and try again.", 0, undefined);
  }
  const envelope = await response.json().catch(() => null);
  if (!response.ok || !envelope?.success) {
    throw new ApiError(envelope?.error ?? `Request failed with HTTP ${response.status}`, response.status, envelope?.code);
  }
  return (envelope.data ?? envelope) as Payload;
}

/** A path segment from an id or name: never a way out of the path. */
export const segment = (value: string) => encodeURIComponent(value);
