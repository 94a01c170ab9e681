// HTTP/1.1 message heads and body framing, as the public proxy reads them from clients and apps
// (RFC 9112). The proxy relays bodies byte for byte, so all it must know of a message is where it
// ends; a message whose end two parsers could disagree on is refused, as request smuggling
// depends on exactly that disagreement:
// - Content-Length together with Transfer-Encoding, Content-Length given twice or as a list, a
//   transfer coding other than `chunked` alone, or Transfer-Encoding in HTTP/1.0;
// - obsolete line folding, whitespace before a header's colon, or control characters in a value.
// A body is then followed to its end by ./body.ts.

export class HeadError extends Error {
  constructor(
    /** What the client gets: 400, 431 (head too large), 501 (a method the proxy cannot frame), 505. */
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "HeadError";
  }
}

/** How a message's body is framed. `close`: until the connection closes (responses only). */
export type BodyFraming = { kind: "none" } | { kind: "length"; length: number } | { kind: "chunked" } | { kind: "close" };
/** The framings without a length, shared rather than made for each message. */
const NO_BODY: BodyFraming = Object.freeze({ kind: "none" });
const CHUNKED: BodyFraming = Object.freeze({ kind: "chunked" });
const UNTIL_CLOSE: BodyFraming = Object.freeze({ kind: "close" });

export interface MessageHead {
  /**
   * The bytes it was read from, and where in them it starts and ends (before its final CRLF CRLF):
   * the lines passed on are copied from there. Its lines are checked as bytes. A response head is
   * not made a string at all (making it one cost a quarter of reading it); a request head is, once,
   * for the few strings taken from it (method, target, Host).
   */
  source: Uint8Array;
  sourceStart: number;
  sourceEnd: number;
  /**
   * Its header lines, FIELD_STRIDE numbers each: where the line starts, where its name ends (the
   * colon), where its trimmed value starts and ends (offsets from sourceStart), and its FieldKind.
   * Offsets rather than strings: most fields are only passed on, and a string for each cost a tenth
   * of a proxied request.
   */
  fields: number[];
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minorVersion: number;
  /** Lowercase tokens of the Connection fields. */
  connection: string[];
  contentLength: number | null;
  chunked: boolean;
}

export interface RequestHead extends MessageHead {
  method: string;
  /** The request target in origin form (`/path?query`), or `*`. */
  target: string;
  /** The Host field, or the authority of an absolute-form target (which takes precedence). */
  host: string | null;
  framing: BodyFraming;
  /** The connection may carry another request after this one. */
  keepAlive: boolean;
  /** The target was in absolute form (`http://host/path`): the request line and Host are rewritten. */
  absoluteForm: boolean;
}

export interface ResponseHead extends MessageHead {
  status: number;
  reason: string;
}

/** The Connection tokens of a head without any, shared rather than made for each head (never changed). */
const NO_TOKENS: string[] = [];

/** Largest request or response head the proxy reads. */
export const MAX_HEAD_BYTES = 64 * 1024;
const MAX_HEADERS = 200;

/** Visible ASCII only: no spaces or control characters in a request target. */
const TARGET = /^[\x21-\x7e]+$/;

const HEAD_END = Buffer.from("\r\n\r\n");

/** The bytes of `data` from `start` to `end` as text: latin1, one character per byte (Buffer's method, called on socket data, which arrives as plain Uint8Arrays). */
const latin1 = (data: Uint8Array, start: number, end: number): string => Buffer.prototype.toString.call(data, "latin1", start, end);

/** Index of the CRLF CRLF that ends a head, or -1. */
export function indexOfHeadEnd(data: Uint8Array, from = 0): number {
  return Buffer.prototype.indexOf.call(data, HEAD_END, from);
}

/**
 * Where the head in `data` from `at` ends (as indexOfHeadEnd) when its bytes, CRLF CRLF included,
 * are those `head` was read from; else -1. A connection's next head is often the same as its last
 * (a client asking the same again, an app answering within the same second): byte for byte the
 * same, it reads the same, and is not read again.
 */
export function endOfSameHead(data: Uint8Array, at: number, head: MessageHead): number {
  const source = head.source;
  const start = head.sourceStart;
  const length = head.sourceEnd + 4 - start;
  if (data.byteLength - at < length) return -1;
  return Buffer.prototype.compare.call(data, source, start, start + length, at, at + length) === 0 ? at + length - 4 : -1;
}

/** tchar of RFC 9110 5.6.2, by character code. */
const TOKEN_CHARS = new Uint8Array(128);
for (const character of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TOKEN_CHARS[character.charCodeAt(0)] = 1;

/** Classes of the characters of a head, read as latin1 (every code below 256), as bits: one lookup per character. */
const TOKEN_CHAR = 1;
/** Allowed in a field value: tab, space, visible ASCII and obs-text; no other control character. */
const VALUE_CHAR = 2;
const CHAR_CLASS = new Uint8Array(256);
for (let code = 0; code < 256; code++) {
  if (code === 0x09 || (code >= 0x20 && code !== 0x7f)) CHAR_CLASS[code]! |= VALUE_CHAR;
  if (code < 128 && TOKEN_CHARS[code]) CHAR_CLASS[code]! |= TOKEN_CHAR;
}

function isToken(text: string, start: number, end: number): boolean {
  if (end <= start) return false;
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code > 127 || !TOKEN_CHARS[code]) return false;
  }
  return true;
}

/** Tabs, spaces, visible ASCII and obs-text: no other control character. */
function isFieldValue(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (!(CHAR_CLASS[bytes[i]!]! & VALUE_CHAR)) return false;
  return true;
}

const isOws = (code: number) => code === 0x20 || code === 0x09;

/**
 * Same name, ASCII case aside; `lowerName` is lowercase. Only A-Z are folded: `| 0x20` alone would
 * also make `^` a `~`, and Connection tokens (which name headers to drop) are the sender's choice.
 */
function nameIs(bytes: Uint8Array, start: number, end: number, lowerName: string): boolean {
  if (end - start !== lowerName.length) return false;
  for (let i = 0; i < lowerName.length; i++) {
    let code = bytes[start + i]!;
    if (code >= 0x41 && code <= 0x5a) code |= 0x20;
    if (code !== lowerName.charCodeAt(i)) return false;
  }
  return true;
}

/** Numbers per header line in MessageHead.fields. */
const FIELD_STRIDE = 5;
const LINE_START = 0;
const NAME_END = 1;
const VALUE_START = 2;
const VALUE_END = 3;
const KIND = 4;

/** What the proxy does with a header field, known from its name when the head is read. */
export const FieldKind = {
  other: 0,
  host: 1,
  connection: 2,
  contentLength: 3,
  transferEncoding: 4,
  /** Hop-by-hop (RFC 9110 7.6.1) other than Connection and Upgrade. */
  hopByHop: 5,
  upgrade: 6,
  /** X-Forwarded-*, X-Real-IP, Forwarded: who the client is, written by the proxy itself. */
  clientIdentity: 7,
  requestId: 8,
  strictTransportSecurity: 9,
} as const;
export type FieldKind = (typeof FieldKind)[keyof typeof FieldKind];

/** Lowercase names by kind, grouped by length (the index) so a name is compared with few of them. */
const KNOWN_NAMES: [string, FieldKind][][] = [];
for (const [name, kind] of [
  ["host", FieldKind.host],
  ["connection", FieldKind.connection],
  ["content-length", FieldKind.contentLength],
  ["transfer-encoding", FieldKind.transferEncoding],
  ["keep-alive", FieldKind.hopByHop],
  ["proxy-connection", FieldKind.hopByHop],
  ["te", FieldKind.hopByHop],
  ["trailer", FieldKind.hopByHop],
  ["proxy-authenticate", FieldKind.hopByHop],
  ["proxy-authorization", FieldKind.hopByHop],
  ["upgrade", FieldKind.upgrade],
  ["x-forwarded-for", FieldKind.clientIdentity],
  ["x-forwarded-host", FieldKind.clientIdentity],
  ["x-forwarded-proto", FieldKind.clientIdentity],
  ["x-forwarded-port", FieldKind.clientIdentity],
  ["x-real-ip", FieldKind.clientIdentity],
  ["forwarded", FieldKind.clientIdentity],
  ["x-request-id", FieldKind.requestId],
  ["strict-transport-security", FieldKind.strictTransportSecurity],
] as const) {
  (KNOWN_NAMES[name.length] ??= []).push([name, kind]);
}
for (let length = 0; length < KNOWN_NAMES.length; length++) KNOWN_NAMES[length] ??= [];

function kindOf(bytes: Uint8Array, start: number, end: number): FieldKind {
  if (end - start >= KNOWN_NAMES.length) return FieldKind.other;
  const candidates = KNOWN_NAMES[end - start]!;
  for (let i = 0; i < candidates.length; i++) if (nameIs(bytes, start, end, candidates[i]![0])) return candidates[i]![1];
  return FieldKind.other;
}

export const fieldCount = (head: MessageHead): number => head.fields.length / FIELD_STRIDE;
export const fieldKind = (head: MessageHead, index: number): FieldKind => head.fields[index * FIELD_STRIDE + KIND] as FieldKind;
/** Where header line `index` starts, from the head's first byte. */
export const fieldLineStart = (head: MessageHead, index: number): number => head.fields[index * FIELD_STRIDE + LINE_START]!;
export const fieldName = (head: MessageHead, index: number): string =>
  latin1(head.source, head.sourceStart + head.fields[index * FIELD_STRIDE + LINE_START]!, head.sourceStart + head.fields[index * FIELD_STRIDE + NAME_END]!);
export const fieldValue = (head: MessageHead, index: number): string =>
  latin1(head.source, head.sourceStart + head.fields[index * FIELD_STRIDE + VALUE_START]!, head.sourceStart + head.fields[index * FIELD_STRIDE + VALUE_END]!);
/** The name of header line `index` is `lowerName`, ASCII case aside. */
export const fieldNameIs = (head: MessageHead, index: number, lowerName: string): boolean =>
  nameIs(head.source, head.sourceStart + head.fields[index * FIELD_STRIDE + LINE_START]!, head.sourceStart + head.fields[index * FIELD_STRIDE + NAME_END]!, lowerName);

/** The value of the first header field named `lowerName`, or null. */
export function headerValue(head: MessageHead, lowerName: string): string | null {
  for (let index = 0; index < fieldCount(head); index++) if (fieldNameIs(head, index, lowerName)) return fieldValue(head, index);
  return null;
}

/** Parses decimal digits; -1 when they are not only digits, or more than 15 (past that a number is no longer exact). */
function digitsValue(bytes: Uint8Array, start: number, end: number): number {
  if (end <= start || end - start > 15) return -1;
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = bytes[i]! - 0x30;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** Where the line starting at `from` ends (its CRLF) in a head ending at `end`: `end` when it is the last line. */
function lineEndOf(bytes: Uint8Array, from: number, end: number): number {
  for (let at = from; at + 1 < end; at++) if (bytes[at] === 0x0d && bytes[at + 1] === 0x0a) return at;
  return end;
}

/** Why the header line at `at` has no valid name before its colon. */
function nameError(bytes: Uint8Array, at: number, end: number, status: number): HeadError {
  const line = latin1(bytes, at, lineEndOf(bytes, at, end));
  const colon = line.indexOf(":");
  if (colon < 0) return new HeadError(status, "a header line without a colon");
  return new HeadError(status, `invalid header name ${JSON.stringify(line.slice(0, Math.min(colon, 64)))}`);
}

/** What parseFields read. */
interface FieldsRead extends Pick<MessageHead, "fields" | "connection" | "contentLength" | "chunked"> {
  host: string | null;
}

/**
 * parseFields's answer, one object for all heads: a head is read at once and its caller takes what
 * it needs before the next is read (an object made for each head cost more than the rest of it).
 */
const fieldsRead: FieldsRead = { fields: [], connection: NO_TOKENS, contentLength: null, chunked: false, host: null };

/**
 * The header lines of a head in `source` from `from` (just after its start line's CRLF) to `end`:
 * names and values checked, framing fields (and a request's Host) gathered, offsets kept from
 * `start` (the head's first byte). `requestText`: a request's head as text, where its Host is
 * taken from; null for a response. Errors are HeadErrors: 400 for a request, 502 for a response.
 * Written with loops over the bytes rather than split and regular expressions, and keeping
 * offsets rather than strings: it runs twice for every proxied request.
 */
function parseFields(source: Uint8Array, start: number, end: number, from: number, requestText: string | null): FieldsRead {
  const request = requestText !== null;
  const status = request ? 400 : 502;
  const fields: number[] = [];
  let connection = NO_TOKENS;
  let contentLength: number | null = null;
  let transferEncoding: string | null = null;
  let host: string | null = null;
  // One pass over each line's bytes, checking them as it finds its colon and its end.
  for (let at = from; at < end; ) {
    if (isOws(source[at]!)) throw new HeadError(status, "obsolete line folding");
    // The name: token characters up to the colon.
    let colon = at;
    while (colon < end && CHAR_CLASS[source[colon]!]! & TOKEN_CHAR) colon++;
    if (colon === at || colon === end || source[colon] !== 0x3a) throw nameError(source, at, end, status);
    // The value, up to the CRLF: tabs, spaces, visible ASCII and obs-text. Optional whitespace around
    // it is spaces and tabs only: String.trim() would also take a vertical tab or a no-break space,
    // and a value the app reads otherwise than the proxy is a smuggling risk.
    let valueStart = colon + 1;
    while (valueStart < end && isOws(source[valueStart]!)) valueStart++;
    let lineEnd = valueStart;
    while (lineEnd < end && CHAR_CLASS[source[lineEnd]!]! & VALUE_CHAR) lineEnd++;
    // Stopped at the end of the head, at the line's CRLF, or at a byte no value may hold.
    if (lineEnd < end && (lineEnd + 1 === end || source[lineEnd] !== 0x0d || source[lineEnd + 1] !== 0x0a)) {
      throw new HeadError(status, `a control character in ${latin1(source, at, colon)}`);
    }
    let valueEnd = lineEnd;
    while (valueEnd > valueStart && isOws(source[valueEnd - 1]!)) valueEnd--;
    const kind = kindOf(source, at, colon);
    fields.push(at - start, colon - start, valueStart - start, valueEnd - start, kind);
    if (fields.length > MAX_HEADERS * FIELD_STRIDE) throw new HeadError(status, `more than ${MAX_HEADERS} header fields`);
    if (kind === FieldKind.host && request) {
      if (host !== null) throw new HeadError(status, "Host given twice");
      host = requestText.slice(valueStart - start, valueEnd - start);
    } else if (kind === FieldKind.connection) {
      if (connection === NO_TOKENS) connection = [];
      for (const token of latin1(source, valueStart, valueEnd).toLowerCase().split(",")) connection.push(token.trim());
    } else if (kind === FieldKind.contentLength) {
      if (contentLength !== null) throw new HeadError(status, "Content-Length given twice");
      contentLength = digitsValue(source, valueStart, valueEnd);
      if (contentLength < 0) throw new HeadError(status, `invalid Content-Length ${JSON.stringify(latin1(source, valueStart, Math.min(valueEnd, valueStart + 32)))}`);
    } else if (kind === FieldKind.transferEncoding) {
      if (transferEncoding !== null) throw new HeadError(status, "Transfer-Encoding given twice");
      transferEncoding = latin1(source, valueStart, valueEnd).toLowerCase();
    }
    at = lineEnd + 2;
  }
  if (transferEncoding !== null) {
    if (contentLength !== null) throw new HeadError(status, "both Content-Length and Transfer-Encoding");
    if (transferEncoding !== "chunked") throw new HeadError(status, `unsupported Transfer-Encoding ${JSON.stringify(transferEncoding.slice(0, 64))}`);
  }
  fieldsRead.fields = fields;
  fieldsRead.connection = connection;
  fieldsRead.contentLength = contentLength;
  fieldsRead.chunked = transferEncoding !== null;
  fieldsRead.host = host;
  return fieldsRead;
}

/** A request head: the bytes of `source` from `start` (its first byte) to `end` (its CRLF CRLF). */
export function parseRequestHead(source: Uint8Array, start: number, end: number): RequestHead {
  // The head is made text once, for the few strings taken from it (a call out of JavaScript costs
  // more than the copy); its header lines are checked as bytes.
  const text = latin1(source, start, end);
  let lineEnd = text.indexOf("\r\n");
  if (lineEnd < 0) lineEnd = text.length;
  const firstSpace = text.indexOf(" ");
  const lastSpace = text.lastIndexOf(" ", lineEnd);
  if (firstSpace <= 0 || firstSpace >= lineEnd || lastSpace === firstSpace) throw new HeadError(400, "malformed request line");
  if (!isToken(text, 0, firstSpace)) throw new HeadError(400, "invalid method");
  const method = text.slice(0, firstSpace);
  let target = text.slice(firstSpace + 1, lastSpace);
  if (!TARGET.test(target)) throw new HeadError(400, "invalid request target");
  // HTTP/1.1 or HTTP/1.0, compared in place: no string made for it.
  const minorVersion = lineEnd - lastSpace === 9 && text.startsWith("HTTP/1.", lastSpace + 1) ? text.charCodeAt(lineEnd - 1) - 0x30 : -1;
  if (minorVersion !== 1 && minorVersion !== 0) {
    const version = text.slice(lastSpace + 1, lineEnd);
    if (/^HTTP\/\d\.\d$/.test(version)) throw new HeadError(505, `${version} is not supported`);
    throw new HeadError(400, "malformed request line");
  }
  if (method === "CONNECT") throw new HeadError(501, "CONNECT is not supported");

  const fields = parseFields(source, start, end, start + lineEnd + 2, text);
  if (fields.chunked && minorVersion === 0) throw new HeadError(400, "Transfer-Encoding in an HTTP/1.0 request");
  let host = fields.host;
  let absoluteForm = false;
  if (host === null && minorVersion === 1) throw new HeadError(400, "an HTTP/1.1 request without Host");
  if (target.charCodeAt(0) !== 0x2f && target !== "*") {
    // Absolute form (`http://host/path`): its authority is the host (RFC 9112 3.2.2).
    const absolute = /^https?:\/\/([^/?#]+)([^#]*)$/i.exec(target);
    if (!absolute) throw new HeadError(400, "invalid request target");
    host = absolute[1]!;
    absoluteForm = true;
    target = absolute[2]!.startsWith("/") ? absolute[2]! : `/${absolute[2]}`;
  } else if (target === "*" && method !== "OPTIONS") {
    throw new HeadError(400, "invalid request target");
  }

  const { fields: lines, connection, contentLength, chunked } = fields;
  const framing: BodyFraming = chunked ? CHUNKED : contentLength ? { kind: "length", length: contentLength } : NO_BODY;
  const keepAlive = minorVersion === 1 ? !connection.includes("close") : connection.includes("keep-alive");
  return { source, sourceStart: start, sourceEnd: end, fields: lines, minorVersion, connection, contentLength, chunked, method, target, host, framing, keepAlive, absoluteForm };
}

/** `HTTP/1.` */
const STATUS_LINE_START = [0x48, 0x54, 0x54, 0x50, 0x2f, 0x31, 0x2e];

/** The reason of a status line from `start` to `end`; "OK" is not made again for each response. */
const reasonOf = (source: Uint8Array, start: number, end: number): string =>
  end - start === 2 && source[start] === 0x4f && source[start + 1] === 0x4b ? "OK" : latin1(source, start, end);

/**
 * A response head: the bytes of `source` from `start` (its first byte) to `end` (its CRLF CRLF).
 * Its status line is `HTTP/1.x nnn reason` (the reason may be absent, and holds no control
 * character but tab).
 */
export function parseResponseHead(source: Uint8Array, start: number, end: number): ResponseHead {
  const lineEnd = lineEndOf(source, start, end);
  const lineLength = lineEnd - start;
  let valid = lineLength >= 12 && source[start + 8] === 0x20;
  for (let i = 0; valid && i < STATUS_LINE_START.length; i++) valid = source[start + i] === STATUS_LINE_START[i];
  const minorVersion = source[start + 7]! - 0x30;
  const status = valid ? digitsValue(source, start + 9, start + 12) : -1;
  valid &&= (minorVersion === 0 || minorVersion === 1) && status >= 100;
  valid &&= lineLength === 12 || (source[start + 12] === 0x20 && isFieldValue(source, start + 13, lineEnd));
  if (!valid) throw new HeadError(502, `invalid status line ${JSON.stringify(latin1(source, start, Math.min(lineEnd, start + 100)))}`);
  const reason = lineLength > 13 ? reasonOf(source, start + 13, lineEnd) : "";
  const fields = parseFields(source, start, end, lineEnd + 2, null);
  if (fields.chunked && minorVersion === 0) throw new HeadError(502, "Transfer-Encoding in an HTTP/1.0 response");
  const { fields: lines, connection, contentLength, chunked } = fields;
  return { source, sourceStart: start, sourceEnd: end, fields: lines, minorVersion, connection, contentLength, chunked, status, reason };
}

/** How the body of a response to `method` is framed (RFC 9112 6.3). */
export function responseFraming(method: string, head: ResponseHead): BodyFraming {
  if (method === "HEAD" || head.status === 204 || head.status === 304 || head.status < 200) return NO_BODY;
  if (head.chunked) return CHUNKED;
  if (head.contentLength !== null) return head.contentLength ? { kind: "length", length: head.contentLength } : NO_BODY;
  return UNTIL_CLOSE;
}
