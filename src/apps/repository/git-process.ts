// Runs one git command and reads what it writes as bounded streams, never as a whole: standard
// output goes piece by piece to a reader that decides when it has seen enough (or too much),
// standard error keeps only its tail for messages, and both are capped in bytes. The command runs
// in a process group of its own, stopped as a whole (git-remote-http, index-pack...) the moment a
// limit, the deadline or the caller's abort is reached, so a repository made to expand (a tree of
// a billion paths in a few KB) costs the platform no more than the limit.

/** What a reader answers to stop git at once because it holds what it needs: not a failure. */
export const ENOUGH = Symbol("enough");

/** A limit was reached: git was stopped, and the message says which limit, for the build log. */
export class GitLimitReached extends Error {}

export interface GitCommand {
  /** The program and its arguments (`git`, ...), run by argv. */
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  signal: AbortSignal;
  /** Epoch ms by which the command must have ended; past it, it is stopped with `timeoutMessage`. */
  deadline: number;
  timeoutMessage: string;
  /**
   * Each piece of standard output as it arrives. Answers a message to stop git and fail with it,
   * or ENOUGH to stop git because nothing more is wanted. Without one, output past
   * `maxOutputBytes` stops git.
   */
  read?: (chunk: Uint8Array) => string | typeof ENOUGH | undefined;
  /** Standard output allowed when there is no reader (commands that print nothing of use). */
  maxOutputBytes?: number;
  /** Polled every `watchMs` while git runs; a message answered stops git and fails with it. */
  watch?: () => Promise<string | undefined>;
  watchMs?: number;
}

export interface GitResult {
  /** null when git was stopped because the reader had ENOUGH. */
  exitCode: number | null;
  /** The last STDERR_TAIL_BYTES of what git wrote to standard error. */
  stderrTail: string;
}

const STDERR_TAIL_BYTES = 4096;
/** Git run with --quiet writes a few lines; a server can make it relay far more ("remote: ..."). */
const MAX_STDERR_BYTES = 1024 * 1024;
const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024;
const DEFAULT_WATCH_MS = 100;

/** Keeps the last `size` bytes of a stream. */
class Tail {
  private kept = new Uint8Array(0);
  total = 0;

  constructor(private readonly size: number) {}

  push(chunk: Uint8Array) {
    this.total += chunk.byteLength;
    const joined = new Uint8Array(Math.min(this.size, this.kept.byteLength + chunk.byteLength));
    const fromChunk = Math.min(chunk.byteLength, joined.byteLength);
    const fromKept = joined.byteLength - fromChunk;
    joined.set(this.kept.subarray(this.kept.byteLength - fromKept), 0);
    joined.set(chunk.subarray(chunk.byteLength - fromChunk), fromKept);
    this.kept = joined;
  }

  text(): string {
    return new TextDecoder().decode(this.kept);
  }
}

/** Runs the command to its end or its first limit. Throws GitLimitReached at a limit, the signal's reason on abort. */
export async function runGitCommand(command: GitCommand): Promise<GitResult> {
  // detached: a new session, so the whole group can be killed: git-remote-http would otherwise
  // hold the pipes open, and the build, on a server that never answers.
  const child = Bun.spawn(command.argv, { cwd: command.cwd, env: command.env, stdin: "ignore", stdout: "pipe", stderr: "pipe", detached: true });
  const stdout = child.stdout.getReader();
  const stderr = child.stderr.getReader();
  let failure: string | undefined;
  let enough = false;
  // Once git is reaped its number is free: a group of that number may be someone else's.
  let exited = false;
  const exitCode = child.exited.finally(() => (exited = true));
  const stop = (why?: string) => {
    if (failure === undefined && !enough) {
      if (why === undefined) enough = true;
      else failure = why;
    }
    if (!exited) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    // A grandchild that left the group could still hold a pipe open: stop reading regardless.
    void stdout.cancel().catch(() => {});
    void stderr.cancel().catch(() => {});
  };
  const onAbort = () => stop("aborted");
  command.signal.addEventListener("abort", onAbort, { once: true });
  if (command.signal.aborted) onAbort();
  const timer = setTimeout(() => stop(command.timeoutMessage), Math.max(0, command.deadline - Date.now()));
  const watch = command.watch;
  let watching = false;
  const watcher = watch
    ? setInterval(async () => {
        if (watching) return;
        watching = true;
        const why = await watch().finally(() => (watching = false));
        if (why) stop(why);
      }, command.watchMs ?? DEFAULT_WATCH_MS)
    : undefined;

  const maxOutputBytes = command.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  let outputBytes = 0;
  const readOutput = async () => {
    for (let piece = await stdout.read(); !piece.done; piece = await stdout.read()) {
      if (failure !== undefined || enough) continue;
      if (command.read) {
        const verdict = command.read(piece.value);
        if (verdict === ENOUGH) stop();
        else if (verdict) stop(verdict);
      } else if ((outputBytes += piece.value.byteLength) > maxOutputBytes) {
        stop(`git wrote more than ${maxOutputBytes / 1024} KB of output where none was expected`);
      }
    }
  };
  const errors = new Tail(STDERR_TAIL_BYTES);
  const readErrors = async () => {
    for (let piece = await stderr.read(); !piece.done; piece = await stderr.read()) {
      errors.push(piece.value);
      // Not quoted in the message: only the caller knows which secrets to mask in git's words.
      if (errors.total > MAX_STDERR_BYTES) stop(`git wrote more than ${MAX_STDERR_BYTES / 1024 / 1024} MB of messages`);
    }
  };

  try {
    // A reader that fails must stop git: it would otherwise block on a pipe nobody reads until the deadline.
    const readFailed = (error: Error) => stop(`reading git's output failed: ${error.message}`);
    const [code] = await Promise.all([exitCode, readOutput().catch(readFailed), readErrors().catch(readFailed)]);
    if (command.signal.aborted) throw command.signal.reason;
    if (failure !== undefined) throw new GitLimitReached(failure);
    return { exitCode: enough ? null : code, stderrTail: errors.text() };
  } finally {
    clearTimeout(timer);
    clearInterval(watcher);
    command.signal.removeEventListener("abort", onAbort);
  }
}
