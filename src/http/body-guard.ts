// What every request body passes before anything parses, validates or authenticates it: its
// size, read from the headers (413 / 411), then how deep it nests (400 BODY_TOO_DEEP). Elysia
// parses a body before the routes' authentication runs, and its validator walks a parsed body
// recursively: a few KB of nested arrays overflowed its stack (a 500 on every JSON route), and
// 150 KB of them held the event loop for seconds. The depth is counted on the bytes, in one pass.
import { errorResponse } from "./envelope";

/** Every body but an upload's is a small JSON document (or a form of a few fields). */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;
/**
 * Routes that read their body themselves, bounded, and enforce their own limits: the uploads
 * stream (through ./multipart.ts or straight to disk), and webhook deliveries check their length
 * and signature before reading a byte (src/webhooks/github.ts), so nothing here reads them first.
 */
const SELF_READ_BODIES = [
  /^POST \/api\/apps\/deploy$/,
  /^POST \/api\/apps\/inspect-env$/,
  /^POST \/api\/databases\/[^/]+\/backups\/upload$/,
  /^POST \/api\/webhooks\/github(\/[^/]+)?$/,
];

/**
 * How deep a body may nest: the object of a JSON body (or the fields of a form) is level 1. The
 * deepest body the API takes is 3 levels (`rateLimits.perClient.burst` of app settings); 32
 * leaves room for any body a route may add, and is two orders of magnitude below the ~4,500
 * levels where the validator's recursion overflowed. Past it nothing is gained but work.
 */
export const MAX_BODY_DEPTH = 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = new Set([0x5b, 0x7b]); // [ {
const CLOSE = new Set([0x5d, 0x7d]); // ] }
const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * Counts how deep `[` and `{` nest outside JSON strings, fed the bytes in pieces. For valid JSON
 * the count is exact: a bracket can only open a level outside a string, and in UTF-8 no byte of a
 * multi-byte character is a quote, a backslash or a bracket. Invalid JSON fails its parse anyway.
 */
export class NestingScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;

  constructor(private readonly limit: number) {}

  /** False once the nesting went past the limit. */
  feed(bytes: Uint8Array): boolean {
    for (let index = 0; index < bytes.length; index++) {
      const byte = bytes[index]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
      } else if (byte === QUOTE) this.inString = true;
      else if (OPEN.has(byte)) {
        if (++this.depth > this.limit) return false;
      } else if (CLOSE.has(byte) && this.depth > 0) this.depth--;
    }
    return true;
  }
}

/** JSON text (a form field's value) nesting deeper than `limit`; text that does not start as an array or object holds no levels. */
export function textNestsDeeperThan(text: string, limit: number): boolean {
  const bytes = new TextEncoder().encode(text);
  const first = bytes.findIndex((byte) => !WHITESPACE.has(byte));
  if (first < 0 || !OPEN.has(bytes[first]!)) return false;
  return !new NestingScanner(limit).feed(bytes.subarray(first));
}

/** How many levels a form field's name adds: Elysia reads `a.b` and `a[0]` in multipart names as nested objects. */
function nameNesting(name: string): number {
  let levels = 0;
  for (const char of name) if (char === "." || char === "[") levels++;
  return levels;
}

/** A form field (name and value) taking the form deeper than MAX_BODY_DEPTH; the form itself is level 1. */
export function fieldTooDeep(name: string, value: string): boolean {
  const below = MAX_BODY_DEPTH - 1 - nameNesting(name);
  return below < 0 || textNestsDeeperThan(value, below);
}

export const TOO_DEEP_MESSAGE = `The request body nests deeper than ${MAX_BODY_DEPTH} levels of arrays and objects`;

function routeOf(request: Request): string {
  return `${request.method} ${new URL(request.url).pathname.replace(/\/+$/, "")}`;
}

/**
 * Without this an anonymous caller could have hundreds of MB held in memory (the server's own
 * limit is the upload limit). Runs on the headers alone, before anything is read.
 */
function refuseOversizedBody(request: Request, route: string): Response | undefined {
  const length = request.headers.get("content-length");
  const chunked = length === null && request.headers.has("transfer-encoding");
  if (!chunked && (length === null || Number(length) <= MAX_JSON_BODY_BYTES)) return undefined;
  if (SELF_READ_BODIES.some((selfRead) => selfRead.test(route))) return undefined;
  if (chunked) {
    return errorResponse("LENGTH_REQUIRED", "Send a Content-Length: request bodies without one (chunked) are refused, except for uploads");
  }
  return errorResponse("PAYLOAD_TOO_LARGE", `Request body is larger than ${MAX_JSON_BODY_BYTES} bytes; only uploads may be larger`);
}

/** A body read as JSON, whatever its media type says (some routes parse any body as JSON), one piece at a time. */
async function jsonTooDeep(body: ReadableStream<Uint8Array>): Promise<boolean> {
  const scanner = new NestingScanner(MAX_BODY_DEPTH);
  const reader = body.getReader();
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      if (!scanner.feed(next.value)) return true;
    }
    return false;
  } finally {
    void reader.cancel().catch(() => {});
  }
}

/** A URL-encoded or multipart form, read by Bun's own parsers; one that does not parse is left to its route to refuse. */
async function formTooDeep(copy: Request, multipart: boolean): Promise<boolean> {
  const fields = multipart ? await copy.formData().catch(() => null) : new URLSearchParams(await copy.text());
  if (!fields) return false;
  for (const [name, value] of fields.entries()) {
    // Routes that read forms themselves read a file part's text as they would a field's.
    const text = typeof value === "string" ? value : await (value as Blob).text();
    if (fieldTooDeep(name, text)) return true;
  }
  return false;
}

/**
 * Reads a copy of the body (the route still reads the request itself: it is the one Bun received,
 * which knows the client's address), within the size limit checked first. Uploads are streamed
 * by their routes (their form fields are checked by ./multipart.ts); deliveries are read by theirs.
 */
async function refuseDeepBody(request: Request, route: string): Promise<Response | undefined> {
  if (SELF_READ_BODIES.some((selfRead) => selfRead.test(route))) return undefined;
  const type = (request.headers.get("content-type") ?? "").toLowerCase();
  const multipart = type.startsWith("multipart/form-data");
  try {
    const copy = request.clone();
    const deep = multipart || type.startsWith("application/x-www-form-urlencoded") ? await formTooDeep(copy, multipart) : await jsonTooDeep(copy.body!);
    return deep ? errorResponse("BODY_TOO_DEEP", TOO_DEEP_MESSAGE) : undefined;
  } catch {
    return undefined; // the body could not be read (the client went away): the route meets the same end
  }
}

/** The refusal of a request's body, or undefined to let it through; a promise only when the body has to be read. */
export function screenBody(request: Request): Response | Promise<Response | undefined> | undefined {
  if (request.body === null) return undefined;
  const route = routeOf(request);
  return refuseOversizedBody(request, route) ?? refuseDeepBody(request, route);
}
