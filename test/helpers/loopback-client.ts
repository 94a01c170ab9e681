// Requests from another client address: the whole 127.0.0.0/8 range is loopback, so a test can
// connect from 127.0.0.2, 127.0.0.3... and the server sees a different socket peer for each.
import http from "node:http";
import type { TestServer } from "./server";

export type Answer = { status: number; headers: Headers; body: any };

/** A JSON request to the test server whose TCP connection comes from `localAddress`. */
export function requestFrom(
  server: TestServer,
  localAddress: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const url = new URL(server.baseUrl + path);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const bodyHeaders = payload ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) } : {};
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method, localAddress, agent: false, headers: { ...headers, ...bodyHeaders } },
      (response) => {
        let text = "";
        response.on("data", (chunk) => (text += chunk));
        response.on("end", () => {
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            for (const item of Array.isArray(value) ? value : [value ?? ""]) responseHeaders.append(name, item);
          }
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {}
          resolve({ status: response.statusCode!, headers: responseHeaders, body: parsed });
        });
      },
    );
    request.on("error", reject);
    request.end(payload);
  });
}
