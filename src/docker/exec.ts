// Commands run in a running container (what database dumps and restores need): stdout streamed
// back, stdin piped in, and a timeout that really ends the command. Called through DockerDriver.
import { FrameDemuxer } from "./stream";
import type { Engine } from "./engine";

/** Environment variable marking an exec's processes, so a timed-out one can be found and killed. */
const EXEC_MARKER = "PLATFORM_EXEC_ID";
const KILL_EXEC_TIMEOUT_MS = 10_000;
const STDOUT_BUFFER_BYTES = 1024 * 1024;
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
  /** When the command runs longer: its stream is destroyed, its processes killed, `done` rejects with ExecTimedOut. */
  timeoutMs?: number;
}

export interface ExecStream {
  stdout: ReadableStream<Uint8Array>;
  /** Exit code and collected stderr once the command ends. */
  done: Promise<{ exitCode: number; stderr: string }>;
}

/** An exec ran past its timeoutMs; it was ended (stream destroyed, processes killed), not left running. */
export class ExecTimedOut extends Error {}

/**
 * Runs argv in a running container with stdout streamed back (what dumps and restores need).
 * The engine has no call to end an exec, so each one carries a marker in its environment: on
 * timeout the stream is destroyed and every process holding the marker (the command and its
 * children) is killed from a second exec, so nothing is left running behind the caller's back.
 */
export async function streamExec(engine: Engine, id: string, options: ExecOptions): Promise<ExecStream> {
  const container = engine.docker.getContainer(id);
  const marker = crypto.randomUUID().replaceAll("-", "");
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
  const stderrChunks: Uint8Array[] = [];
  let stdoutController!: ReadableStreamDefaultController<Uint8Array>;
  // Backpressure: a command writing faster than its reader reads (a dump into gzip) is paused
  // past STDOUT_BUFFER_BYTES, instead of its output piling up in memory.
  const stdout = new ReadableStream<Uint8Array>(
    {
      start: (controller) => void (stdoutController = controller),
      pull: () => void (duplex.isPaused() && duplex.resume()),
      cancel: () => void duplex.destroy(),
    },
    { highWaterMark: STDOUT_BUFFER_BYTES, size: (chunk) => chunk?.byteLength ?? 0 },
  );
  const passed = gcHinter();
  duplex.on("data", (chunk: Buffer) => {
    passed(chunk.byteLength);
    // A view, not a copy: each chunk the socket hands over is a fresh buffer, the reader's to keep.
    for (const frame of demuxer.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))) {
      if (frame.stream === "stdout") stdoutController.enqueue(frame.payload);
      else stderrChunks.push(frame.payload);
    }
    if ((stdoutController.desiredSize ?? 1) <= 0) duplex.pause();
  });
  const ended = new Promise<void>((resolve, reject) => {
    duplex.on("end", resolve);
    duplex.on("close", resolve);
    duplex.on("error", reject);
  });
  let killed: Promise<void> | null = null;
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          killed = killExec(engine, id, marker);
          duplex.destroy();
        }, options.timeoutMs);
  if (options.stdin !== undefined) void pipeStdin(options.stdin, duplex).catch(() => {});
  const done = ended.then(async () => {
    clearTimeout(timer);
    if (killed) {
      await killed;
      throw new ExecTimedOut(`${options.command[0]} did not finish within ${options.timeoutMs! / 1000} s and was stopped`);
    }
    stdoutController.close();
    const info = await engine.call(`exec in ${id}`, () => exec.inspect());
    return { exitCode: info.ExitCode ?? -1, stderr: new TextDecoder().decode(Buffer.concat(stderrChunks)) };
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
    console.warn(`[docker] could not kill a timed-out exec in ${id.slice(0, 12)}: ${(error as Error).message}`);
  }
}

/** Runs argv and collects its output. */
export async function runExec(engine: Engine, id: string, options: ExecOptions): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const { stdout, done } = await streamExec(engine, id, options);
  const [text, result] = await Promise.all([new Response(stdout).text(), done]);
  return { exitCode: result.exitCode, stdout: text, stderr: result.stderr };
}

async function pipeStdin(stdin: ReadableStream<Uint8Array> | Uint8Array, duplex: NodeJS.ReadWriteStream) {
  const passed = gcHinter();
  const write = (chunk: Uint8Array) => {
    passed(chunk.byteLength);
    const view = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    return new Promise<void>((resolve, reject) => duplex.write(view, (error) => (error ? reject(error) : resolve())));
  };
  try {
    if (stdin instanceof Uint8Array) await write(stdin);
    else for await (const chunk of stdin as unknown as AsyncIterable<Uint8Array>) await write(chunk);
  } finally {
    // Half-close: the command sees end of input while its output keeps flowing back.
    duplex.end();
  }
}
