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

/**
 * A multipart upload with its progress (fetch cannot report an upload's progress; XMLHttpRequest
 * can). `onProgress` gets the fraction sent, 0 to 1. Resolves with the payload like api().
 */
export function upload<Payload = any>(path: string, form: FormData, onProgress: (fraction: number) => void, signal?: AbortSignal): Promise<Payload> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", path);
    request.setRequestHeader("accept", "application/json");
    request.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded / event.total);
    request.onerror = () => reject(new ApiError("The upload was cut off: check the connection and try again.", 0, undefined));
    request.onabort = () => reject(new ApiError("The upload was canceled.", 0, "CANCELED"));
    request.onload = () => {
      let envelope: any = null;
      try {
        envelope = JSON.parse(request.responseText);
      } catch {}
      if (request.status >= 200 && request.status < 300 && envelope?.success) resolve((envelope.data ?? envelope) as Payload);
      else reject(new ApiError(envelope?.error ?? `Upload failed with HTTP ${request.status}`, request.status, envelope?.code));
    };
    signal?.addEventListener("abort", () => request.abort());
    request.send(form);
  });
}

/**
 * Follows a text/plain stream of lines (app logs and build logs with `follow=true`): `onLine` gets
 * each complete line as it comes, until the stream ends or `signal` aborts. Rejects with ApiError
 * when the API refuses.
 */
export async function followLines(path: string, onLine: (line: string) => void, signal: AbortSignal): Promise<void> {
  const response = await fetch(path, { signal, headers: { accept: "text/plain" } });
  if (!response.ok || !response.body) {
    const envelope = await response.json().catch(() => null);
    throw new ApiError(envelope?.error ?? `Request failed with HTTP ${response.status}`, response.status, envelope?.code);
  }
  const decoder = new TextDecoder();
  let pending = "";
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      pending += decoder.decode(chunk, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) onLine(line);
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  }
  if (pending) onLine(pending);
}
