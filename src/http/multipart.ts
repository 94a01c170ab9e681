// Streaming multipart/form-data reader for uploads. Bun's request.formData() holds the whole body
// in memory; this reads the body as it arrives, writes the one file part straight to disk and
// keeps only the small text fields, so memory stays flat whatever the upload's size.
import { open, unlink } from "node:fs/promises";
import { ApiError } from "./errors";
import { fieldTooDeep, TOO_DEEP_MESSAGE } from "./body-guard";

export interface MultipartResult {
  fields: Record<string, string>;
  /**
   * The uploaded file, saved at the destination path, or null when the form had none. Its
   * `filename` is the client's, with line breaks and other control characters escaped (`\n`,
   * `\u001b`): it is shown in build logs, where it must not start a line of its own.
   */
  file: { filename: string; size: number } | null;
}

export interface MultipartOptions {
  fileField: string;
  destinationFile: string;
  maxBytes: number;
  maxFieldBytes?: number;
}

const CRLF_CRLF = Buffer.from("\r\n\r\n");
const MAX_PREAMBLE_BYTES = 8 * 1024;
/** Text fields are held in memory: their number is bounded as well as each one's size. */
const MAX_FIELDS = 50;
/**
 * Every body chunk is a fresh buffer that only the garbage collector frees, and it runs by heap
 * growth: in a server with a large heap, ~100 MB of spent chunks piled up during a 200 MB upload.
 * A collection hint this often keeps the growth near 40 MB at no measurable cost in time.
 */
const GC_HINT_BYTES = 8 * 1024 * 1024;

/** Another media type is 415; multipart/form-data without a usable boundary is a malformed body, 400. */
function boundaryOf(contentType: string | null): string {
  if (!/^multipart\/form-data\s*(;|$)/i.test(contentType ?? "")) throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Send the upload as multipart/form-data");
  const match = /;(?:.*;)?\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType!);
  const boundary = match?.[1] ?? match?.[2];
  if (!boundary || boundary.length > 70) {
    throw new ApiError("VALIDATION_FAILED", "Malformed multipart body: the Content-Type names no boundary (1 to 70 characters)");
  }
  return boundary;
}

/** C0 and C1 controls, DEL, and the Unicode line and paragraph separators. */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** `\n`, `\r`, `\t` or `\uXXXX` in place of each character that could break or forge a log line. */
function printable(text: string): string {
  const short: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };
  return text.replace(UNPRINTABLE, (char) => short[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function parsePartHeaders(raw: string): { name: string; filename: string | null } {
  const disposition = raw.split("\r\n").find((line) => /^content-disposition:/i.test(line)) ?? "";
  const name = /\bname="([^"]*)"/i.exec(disposition)?.[1];
  if (name === undefined) throw new ApiError("VALIDATION_FAILED", "Malformed multipart body: a part has no name");
  const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1];
  return { name, filename: filename === undefined ? null : printable(filename) };
}

export async function readMultipart(request: Request, options: MultipartOptions): Promise<MultipartResult> {
  const boundary = boundaryOf(request.headers.get("content-type"));
  const declared = Number(request.headers.get("content-length") ?? "0");
  const tooLarge = () => new ApiError("PAYLOAD_TOO_LARGE", `Upload exceeds the limit of ${options.maxBytes} bytes (see /api/platform/config)`);
  if (declared > options.maxBytes) throw tooLarge();
  if (!request.body) throw new ApiError("VALIDATION_FAILED", "Empty request body");

  const opening = Buffer.from(`--${boundary}`);
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const maxFieldBytes = options.maxFieldBytes ?? 256 * 1024;
  const fields: Record<string, string> = {};
  let file: MultipartResult["file"] = null;
  let fileHandle: Awaited<ReturnType<typeof open>> | null = null;

  // File bytes are written in batches: one write per network chunk would be one syscall each.
  const WRITE_BATCH_BYTES = 256 * 1024;
  let pendingFileBytes: Buffer[] = [];
  let pendingFileSize = 0;
  const flushFile = async () => {
    if (pendingFileSize === 0 || !fileHandle) return;
    // A write may take fewer bytes than given (a disk nearly full): the rest is written after them,
    // and the next write says why it cannot be.
    let written = (await fileHandle.writev(pendingFileBytes)).bytesWritten;
    if (written < pendingFileSize) {
      const rest = Buffer.concat(pendingFileBytes).subarray(written);
      for (let at = 0; at < rest.length; at += written) {
        written = (await fileHandle.write(rest, at)).bytesWritten;
        // Neither a byte nor an error: asking again would never end.
        if (written === 0) throw new Error("a write of the uploaded file took no byte");
      }
    }
    pendingFileBytes = [];
    pendingFileSize = 0;
  };

  let buffer: Buffer = Buffer.alloc(0);
  let state: "preamble" | "headers" | "body" | "done" = "preamble";
  let part: { name: string; filename: string | null; chunks: Buffer[]; size: number } | null = null;
  let received = 0;
  let hintedAt = 0;
  let fieldCount = 0;

  const finishPart = async () => {
    if (!part) return;
    if (part.filename !== null && part.name === options.fileField) {
      file = { filename: part.filename, size: part.size };
    } else if (part.filename === null) {
      fieldCount += 1;
      if (fieldCount > MAX_FIELDS) throw new ApiError("VALIDATION_FAILED", `At most ${MAX_FIELDS} form fields`);
      const value = Buffer.concat(part.chunks).toString("utf8");
      if (fieldTooDeep(part.name, value)) throw new ApiError("BODY_TOO_DEEP", TOO_DEEP_MESSAGE);
      fields[part.name] = value;
    }
    part = null;
  };

  const writeBody = async (bytes: Buffer) => {
    if (!part || bytes.length === 0) return;
    part.size += bytes.length;
    if (part.filename !== null) {
      if (part.name !== options.fileField) return; // other file parts are ignored
      if (file !== null || fileHandle === null) throw new ApiError("VALIDATION_FAILED", `Only one '${options.fileField}' file may be sent`);
      pendingFileBytes.push(bytes); // a view: `buffer` is replaced, never written into
      pendingFileSize += bytes.length;
      if (pendingFileSize >= WRITE_BATCH_BYTES) await flushFile();
    } else {
      if (part.size > maxFieldBytes) throw new ApiError("VALIDATION_FAILED", `Field '${part.name}' is longer than ${maxFieldBytes} bytes`);
      part.chunks.push(Buffer.from(bytes));
    }
  };

  try {
    for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
      received += chunk.length;
      if (received > options.maxBytes) throw tooLarge();
      if (received - hintedAt >= GC_HINT_BYTES) {
        hintedAt = received;
        Bun.gc(false);
      }
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      let progressed = true;
      while (progressed && state !== "done") {
        progressed = false;
        if (state === "preamble") {
          const at = buffer.indexOf(opening);
          if (at >= 0) {
            buffer = buffer.subarray(at + opening.length);
            state = "headers";
            progressed = true;
          } else if (buffer.length > MAX_PREAMBLE_BYTES) {
            // Clients send none; searching an ever-growing preamble would be quadratic.
            throw new ApiError("VALIDATION_FAILED", "Malformed multipart body: no opening boundary");
          }
        } else if (state === "headers") {
          if (buffer.length >= 2 && buffer.subarray(0, 2).toString() === "--") {
            state = "done";
            break;
          }
          const end = buffer.indexOf(CRLF_CRLF);
          if (end >= 0) {
            const headers = parsePartHeaders(buffer.subarray(0, end).toString("utf8"));
            part = { ...headers, chunks: [], size: 0 };
            if (headers.filename !== null && headers.name === options.fileField && file === null && fileHandle === null) {
              fileHandle = await open(options.destinationFile, "w", 0o600);
            }
            buffer = buffer.subarray(end + CRLF_CRLF.length);
            state = "body";
            progressed = true;
          } else if (buffer.length > 16 * 1024) {
            throw new ApiError("VALIDATION_FAILED", "Malformed multipart body: part headers too long");
          }
        } else if (state === "body") {
          const at = buffer.indexOf(delimiter);
          if (at >= 0) {
            await writeBody(buffer.subarray(0, at));
            const wasFile = part?.filename !== null && part?.name === options.fileField;
            await finishPart();
            if (wasFile && fileHandle) {
              await flushFile();
              await fileHandle.close();
              fileHandle = null;
            }
            buffer = buffer.subarray(at + delimiter.length);
            state = "headers";
            progressed = true;
          } else if (buffer.length > delimiter.length) {
            // Keep a tail that might be the start of a delimiter split across chunks.
            const safe = buffer.length - delimiter.length;
            await writeBody(buffer.subarray(0, safe));
            buffer = Buffer.from(buffer.subarray(safe));
          }
        }
      }
    }
    if (state !== "done") throw new ApiError("VALIDATION_FAILED", "Malformed multipart body: it ends before its closing boundary");
    return { fields, file };
  } catch (error) {
    await fileHandle?.close().catch(() => {});
    await unlink(options.destinationFile).catch(() => {});
    throw error;
  }
}
