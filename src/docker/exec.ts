// Commands run in a running container (what database dumps and restores need): stdout streamed
// back, stdin piped in, stderr kept as a bounded tail, and limits (time, inactivity, output) that
// really end the command. Called through DockerDriver.
import { FrameDemuxer } from "./stream";
import type { Engine } from "./engine";

/** Environment variable marking an exec's processes, so a timed-out one can be found and killed. */
const EXEC_MARKER = "PLATFORM_EXEC_ID";
const KILL_EXEC_TIMEOUT_MS = 10_000;
const STDOUT_BUFFER_BYTES = 1024 * 1024;
/** What is kept of stderr for messages: its end, where tools say why they failed. */
const STDERR_TAIL_BYTES = 64 * 1024;
/** exec() holds what it collects: the most output it takes unless told otherwise. */
const DEFAULT_MAX_OUTPUT_BYTES = 4 * 1024 * 1024;
/**
 * Every chunk through an exec is a fresh buffer that only the garbage collector frees, and it runs
 * by heap growth: unprompted, 400 MB through an exec grew the server by 80 MB. A full collection
 * this often (a few milliseconds each, a few times a second at most) keeps it near 25.
 */
const GC_HINT_BYTES = 16 * 1024 * 1024;

/** Hints a collection once every GC_HINT_BYTES of what it is told passed. */
function gcHinter(): (bytes: number) => void {
  let sinceHint = 0;
  return (bytes) => {
    sinceHint += bytes;
    if (sinceHint < GC_HINT_BYTES) return;
    sinceHint = 0;
    Bun.gc(true);
  };
}

export interface ExecOptions {
  command: string[];
  env?: Record<string, string>;
  user?: string;
  stdin?: ReadableStream<Uint8Array> | Uint8Array;
  /** When the command runs longer, it is stopped: its stream destroyed, its processes killed, `done` rejects with ExecStopped. */
  timeoutMs?: number;
  /**
   * When nothing moves for this long (no byte of stdin taken, none of stdout or stderr written),
   * it is stopped likewise. Time the reader holds stdout back does not count.
   */
  idleTimeoutMs?: number;
  /**
   * The most the command may write to stdout and stderr together; past it, it is stopped likewise.
   * execStream: no limit unless given (its reader paces stdout); exec: DEFAULT_MAX_OUTPUT_BYTES.
   */
  maxOutputBytes?: number;
}

export interface RunOptions extends ExecOptions {
  /** stdout is counted against maxOutputBytes and dropped, not held: a client whose output is not wanted. */
  discardStdout?: boolean;
}

export interface ExecStream {
  stdout: ReadableStream<Uint8Array>;
  /** Exit code and the last STDERR_TAIL_BYTES of stderr once the command ends. */
  done: Promise<{ exitCode: number; stderr: string }>;
}

/** An exec past one of its limits (time, inactivity, output); it was ended (stream destroyed, processes killed), not left running. */
export class ExecStopped extends Error {}

/** The last `limit` bytes of a stream, and how many went by: what a command's messages need, in bounded memory. */
export class ByteTail {
  private chunks: Uint8Array[] = [];
  private held = 0;
  total = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Uint8Array) {
    this.total += chunk.byteLength;
    // A copy: a view would pin the whole socket chunk it came in.
    this.chunks.push(chunk.slice(-this.limit));
    this.held += Math.min(chunk.byteLength, this.limit);
    while (this.held - this.chunks[0]!.byteLength >= this.limit) this.held -= this.chunks.shift()!.byteLength;
  }

  /** The tail as text, saying how much was cut before it. */
  text(): string {
    const joined = Buffer.concat(this.chunks);
    const tail = new TextDecoder().decode(joined.subarray(Math.max(0, joined.byteLength - this.limit)));
    const cut = this.total - Math.min(joined.byteLength, this.limit);
    return cut > 0 ? `[${cut} bytes cut]${tail}` : tail;
  }
}

function mebibytes(bytes: number): string {
  return `${+(bytes / (1024 * 1024)).toFixed(2)} MiB`;
}

/**
 * Runs argv in a running container with stdout streamed back (what dumps and restores need).
 * The engine has no call to end an exec, so each one carries a marker in its environment: when it
 * passes a limit the stream is destroyed and every process holding the marker (the command and
 * its children) is killed from a second exec, so nothing is left running behind the caller's back.
 */
export async function streamExec(engine: Engine, id: string, options: ExecOptions): Promise<ExecStream> {
  const container = engine.docker.getContainer(id);
  const marker = crypto.randomUUID().replaceAll("-", "");
  const name = options.command[0];
  const exec = await engine.call(`exec in ${id}`, () =>
    container.exec({
      Cmd: options.command,
      Env: Object.entries({ ...options.env, [EXEC_MARKER]: marker }).map(([name, value]) => `${name}=${value}`),
      User: options.user,
      AttachStdin: options.stdin !== undefined,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    }),
  );
  const duplex = await engine.call(`exec in ${id}`, () => exec.start({ hijack: true, stdin: options.stdin !== undefined }));
  const demuxer = new FrameDemuxer();
  const stderr = new ByteTail(STDERR_TAIL_BYTES);
  let stdoutController!: ReadableStreamDefaultController<Uint8Array>;
  // A stream its reader canceled (killExec giving up) takes no more chunks, nor a close: both would throw.
  let stdoutCanceled = false;
  let lastProgress = performance.now();
  let outputBytes = 0;
  let stopped: { reason: string; killed: Promise<void> } | null = null;
  const stop = (reason: string) => {
    if (stopped) return;
    stopped = { reason, killed: killExec(engine, id, marker) };
    duplex.destroy();
  };
  // Backpressure: a command writing faster than its reader reads (a dump into gzip) is paused
  // past STDOUT_BUFFER_BYTES, instead of its output piling up in memory.
  const stdout = new ReadableStream<Uint8Array>(
    {
      start: (controller) => void (stdoutController = controller),
      pull: () => {
        if (!duplex.isPaused()) return;
        lastProgress = performance.now();
        duplex.resume();
      },
      cancel: () => {
        stdoutCanceled = true;
        duplex.destroy();
      },
    },
    { highWaterMark: STDOUT_BUFFER_BYTES, size: (chunk) => chunk?.byteLength ?? 0 },
  );
  const passed = gcHinter();
  duplex.on("data", (chunk: Buffer) => {
    if (stopped) return;
    passed(chunk.byteLength);
    lastProgress = performance.now();
    // A view, not a copy: each chunk the socket hands over is a fresh buffer, the reader's to keep.
    for (const frame of demuxer.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))) {
      outputBytes += frame.payload.byteLength;
      if (options.maxOutputBytes !== undefined && outputBytes > options.maxOutputBytes) {
        return stop(`${name} wrote more than ${mebibytes(options.maxOutputBytes)} of output, more than it may, and was stopped`);
      }
      if (frame.stream === "stderr") stderr.push(frame.payload);
      else if (!stdoutCanceled) stdoutController.enqueue(frame.payload);
    }
    if ((stdoutController.desiredSize ?? 1) <= 0) duplex.pause();
  });
  const ended = new Promise<void>((resolve, reject) => {
    duplex.on("end", resolve);
    duplex.on("close", resolve);
    duplex.on("error", reject);
  });
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => stop(`${name} did not finish within ${options.timeoutMs! / 1000} s and was stopped`), options.timeoutMs);
  const idleTimeoutMs = options.idleTimeoutMs;
  const idleCheck =
    idleTimeoutMs === undefined
      ? undefined
      : setInterval(
          () => {
            if (!duplex.isPaused() && performance.now() - lastProgress > idleTimeoutMs) {
              stop(`${name} made no progress (no input read, no output written) for ${idleTimeoutMs / 1000} s and was stopped`);
            }
          },
          Math.min(1000, Math.max(50, idleTimeoutMs / 10)),
        );
  if (options.stdin !== undefined) void pipeStdin(options.stdin, duplex, () => void (lastProgress = performance.now())).catch(() => {});
  const done = ended.then(
    () => null,
    (error: Error) => error,
  ).then(async (failure) => {
    clearTimeout(timer);
    clearInterval(idleCheck);
    // Stopped: whatever the stream's end said, the reason is the limit it passed.
    if (stopped) {
      await stopped.killed;
      throw new ExecStopped(stopped.reason);
    }
    if (failure) throw failure;
    if (!stdoutCanceled) stdoutController.close();
    const info = await engine.call(`exec in ${id}`, () => exec.inspect());
    return { exitCode: info.ExitCode ?? -1, stderr: stderr.text() };
  });
  done.catch((error) => stdoutController.error(error));
  return { stdout, done };
}

/** Kills, as root, every process of the container whose environment holds the exec's marker. */
async function killExec(engine: Engine, id: string, marker: string): Promise<void> {
  const script =
    `for p in /proc/[0-9]*; do ` +
    `if tr '\\0' '\\n' < "$p/environ" 2>/dev/null | grep -qx "${EXEC_MARKER}=${marker}"; then kill -9 "\${p#/proc/}" 2>/dev/null; fi; ` +
    `done`;
  try {
    // Not a timeoutMs of its own: a killer that hangs is given up, not killed in turn.
    const { stdout, done } = await streamExec(engine, id, { command: ["sh", "-c", script], user: "0" });
    const giveUp = setTimeout(() => void stdout.cancel(), KILL_EXEC_TIMEOUT_MS);
    await done.finally(() => clearTimeout(giveUp));
  } catch (error) {
    console.warn(`[docker] could not kill a stopped exec in ${id.slice(0, 12)}: ${(error as Error).message}`);
  }
}

/** Runs argv and collects its output (at most maxOutputBytes, DEFAULT_MAX_OUTPUT_BYTES unless given). */
export async function runExec(engine: Engine, id: string, options: RunOptions): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const { stdout, done } = await streamExec(engine, id, { ...options, maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES });
  const collected = options.discardStdout ? stdout.pipeTo(new WritableStream()).then(() => "") : new Response(stdout).text();
  const [text, result] = await Promise.all([collected, done]);
  return { exitCode: result.exitCode, stdout: text, stderr: result.stderr };
}

async function pipeStdin(stdin: ReadableStream<Uint8Array> | Uint8Array, duplex: NodeJS.ReadWriteStream, progressed: () => void) {
  const passed = gcHinter();
  const write = (chunk: Uint8Array) => {
    passed(chunk.byteLength);
    const view = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    return new Promise<void>((resolve, reject) =>
      duplex.write(view, (error) => {
        if (error) return reject(error);
        progressed();
        resolve();
      }),
    );
  };
  try {
    if (stdin instanceof Uint8Array) await write(stdin);
    else for await (const chunk of stdin as unknown as AsyncIterable<Uint8Array>) await write(chunk);
  } finally {
    // Half-close: the command sees end of input while its output keeps flowing back.
    duplex.end();
  }
}
