// Importing a dump made elsewhere (moving in from another host): the request body is the dump, raw
// or gzipped, or a multipart form with it as `file`. It is streamed (never held in memory), counted
// against PLATFORM_BACKUP_UPLOAD_MAX_MB, decompressed when it is gzip, and stored like any backup
// (../backups/storage.ts); it becomes an `uploaded` backup only when it is a whole dump of the
// database's engine, judged as the platform's own dumps are (./engines dumpProblem).
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { newId } from "../crypto/tokens";
import { ApiError, diskFull, isDiskFull } from "../http/errors";
import { readMultipart } from "../http/multipart";
import type { OperationActor } from "./operations";
import type { BackupView, DatabaseBackups } from "./backups";
import { gunzip, type StoredBackup } from "../backups/storage";

const GZIP_MAGIC = [0x1f, 0x8b];

export class BackupUploads {
  constructor(
    private readonly backups: DatabaseBackups,
    private readonly maxBytes: number,
  ) {}

  /** Receives the dump within the request; answers the backup, `completed`, or throws the 4xx that says why not. */
  async receive(workspaceId: string, databaseId: string, request: Request, actor: OperationActor): Promise<BackupView> {
    const { service, storage } = this.backups;
    const database = service.find(workspaceId, databaseId);
    const definition = service.definitionOf(database);
    if (Number(request.headers.get("content-length") ?? 0) > this.maxBytes) throw this.tooLarge();
    if (!request.body) throw new ApiError("VALIDATION_FAILED", "Send the dump as the request body (raw or gzip), or as the `file` field of a multipart form");
    this.backups.assertBelowCap(database.id, "uploaded");
    const room = await this.backups.roomFor(database);
    let operation;
    try {
      // Nothing awaited since the room was given: the cap is checked again with the row made right after.
      this.backups.assertBelowCap(database.id, "uploaded");
      operation = service.operations.begin(database, "upload", actor, { exclusive: false });
    } catch (error) {
      room.release();
      throw error;
    }
    const row = this.backups.newRow(database, "uploaded", operation.id);
    operation.concerns(row.id);
    const formFile = join(storage.root, `upload-${newId("up")}.partial`);
    try {
      await operation.run(async () => {
        const body = await this.bodyOf(request, formFile);
        const accept = (written: StoredBackup) => {
          const problem = definition.dumpProblem(written.dump);
          if (problem) throw new ApiError("INVALID_DUMP", `The upload is not a whole ${definition.title} dump: ${problem}`);
          this.backups.recordStored(row.id, written);
        };
        const stored = await storage.write(row.storageKey, decompressedWhenGzip(body), { onWrite: room.add, accept }).catch((error: Error) => {
          if (room.refusal) throw room.refusal;
          if (error instanceof ApiError) throw error;
          if (isDiskFull(error)) throw diskFull("the uploaded dump", { nothingKept: true });
          throw new ApiError("INVALID_DUMP", `The upload could not be read: ${error.message}`);
        });
        await this.backups.completeStored(row, stored.sizeBytes, stored.sha256);
      });
    } catch (error) {
      const reason = (error as Error).message;
      this.backups.finish(row.id, { status: "failed", error: reason });
      throw error;
    } finally {
      room.release();
      await rm(formFile, { force: true });
    }
    return this.backups.viewOf(row.id);
  }

  /** The dump's bytes as sent: the body itself, or the `file` part of a multipart form saved to `formFile` first. */
  private async bodyOf(request: Request, formFile: string): Promise<ReadableStream<Uint8Array>> {
    if ((request.headers.get("content-type") ?? "").toLowerCase().startsWith("multipart/form-data")) {
      await mkdir(this.backups.storage.root, { recursive: true });
      const form = await readMultipart(request, { fileField: "file", destinationFile: formFile, maxBytes: this.maxBytes });
      if (!form.file) throw new ApiError("VALIDATION_FAILED", "The form has no `file` part holding the dump");
      return Bun.file(formFile).stream();
    }
    return limited(request.body!, this.maxBytes, () => this.tooLarge());
  }

  private tooLarge() {
    return new ApiError("PAYLOAD_TOO_LARGE", `The upload exceeds PLATFORM_BACKUP_UPLOAD_MAX_MB (${Math.round(this.maxBytes / 1024 / 1024)} MB)`);
  }
}

/** `body`, failing with `tooLarge()` once more than `maxBytes` came through. */
function limited(body: ReadableStream<Uint8Array>, maxBytes: number, tooLarge: () => Error): ReadableStream<Uint8Array> {
  let received = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        received += chunk.byteLength;
        if (received > maxBytes) controller.error(tooLarge());
        else controller.enqueue(chunk);
      },
    }),
  );
}

/** The stream's bytes, decompressed when they begin with gzip's magic number. */
function decompressedWhenGzip(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let output: ReadableStreamDefaultReader<Uint8Array> | null = null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!output) {
        // The first chunk decides; it is then read again, as the stream's beginning.
        const { value, done } = await reader.read();
        const first = done ? new Uint8Array(0) : value;
        const whole = replayed(first, reader);
        output = (GZIP_MAGIC.every((byte, index) => first[index] === byte) ? whole.pipeThrough(gunzip()) : whole).getReader();
      }
      const next = await output.read();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    cancel: (reason) => (output ? output.cancel(reason) : reader.cancel(reason)),
  });
}

/** `first`, then what is left in `reader`. */
function replayed(first: Uint8Array, reader: ReadableStreamDefaultReader<Uint8Array>): ReadableStream<Uint8Array> {
  let pending: Uint8Array | null = first;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (pending) {
        controller.enqueue(pending);
        pending = null;
        return;
      }
      const { value, done } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
