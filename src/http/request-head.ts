// The size of a request's head (request line and headers). Bun refuses a head past its limit
// itself, with a bare 431 and no body, before any JavaScript sees the request; so its limit is
// raised above the API's own, which is checked here and answered in the error envelope.
import http from "node:http";
import { errorResponse } from "./envelope";

/** The API's limit: Bun's default, what clients have always been held to. */
export const MAX_HEAD_BYTES = 16 * 1024;
/**
 * Bun's limit, for the whole process (it is read as each head is parsed). Above the public
 * proxy's own 64 KiB (src/proxy/http1.ts), so a head it forwards to the API is answered in the
 * envelope too; past it Bun still closes the connection with its bare 431.
 */
export const SERVER_HEAD_LIMIT_BYTES = 128 * 1024;

/** Raises Bun's limit; the API's own is checked by refuseLargeHead. */
export function raiseServerHeadLimit(): void {
  // Typed read-only after Node's, where it is set by a command-line flag; Bun reads the property.
  (http as { maxHeaderSize: number }).maxHeaderSize = SERVER_HEAD_LIMIT_BYTES;
}

/** The head's size as the client sent it, near enough: `METHOD target HTTP/1.1`, each `name: value`, CRLFs. */
function headBytes(request: Request): number {
  const url = request.url;
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  let bytes = request.method.length + (pathStart < 0 ? 1 : url.length - pathStart) + " HTTP/1.1\r\n\r\n".length + 1;
  request.headers.forEach((value, name) => {
    bytes += name.length + value.length + 4;
  });
  return bytes;
}

export function refuseLargeHead(request: Request): Response | undefined {
  if (headBytes(request) <= MAX_HEAD_BYTES) return undefined;
  return errorResponse("HEADERS_TOO_LARGE", `The request line and headers are over ${MAX_HEAD_BYTES} bytes: send long data in a body`);
}
