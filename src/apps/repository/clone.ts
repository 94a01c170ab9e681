// Fetches one commit of a repository into a folder with the git CLI, run by argv (never a shell),
// shallow (depth 1), with no tags, submodules, hooks or templates, and with symbolic links checked
// out as plain files holding their target, so nothing in the tree points outside it; every file is
// written as its blob's bytes, whatever the repository's .gitattributes ask. Git gets no
// system or user config and may never prompt; a token travels as an HTTP header set through the
// environment (GIT_CONFIG_*), so it is in no URL, argv or message. The download is bounded in
// time and size, the checked-out tree in size and entries, like an uploaded archive; git's output
// is read as it streams (./git-process.ts), so the limits hold however far a tree would expand.
import { mkdir, readdir, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { BuildFailed } from "../../docker/driver";
import { redact } from "../../crypto/redact";
import { ENOUGH, GitLimitReached, runGitCommand, type GitCommand } from "./git-process";

export type CommitRef = { branch: string } | { commit: string };

export interface CloneRequest {
  /** `<base>/<owner>/<name>.git`; shown in messages, so it must hold no credentials. */
  url: string;
  /** `owner/name`, as messages name the repository. */
  label: string;
  ref: CommitRef;
  /** Sent as the password of HTTP Basic auth (user `x-access-token`, as GitHub wants for app tokens; others ignore the user). */
  token?: string;
  /** A folder that does not exist yet; made here, and left for the caller to remove on failure too. */
  destination: string;
  timeoutMs: number;
  limits: { maxBytes: number; maxEntries: number };
  signal: AbortSignal;
  log: (line: string) => void;
}

export interface ClonedCommit {
  sha: string;
  /** The first line of the commit message. */
  message: string;
}

const MAX_MESSAGE_CHARS = 300;
/** Enough of `git log`'s output for the SHA and MAX_MESSAGE_CHARS of the subject, at 4 bytes a character. */
const LOG_HEAD_BYTES = 2048;
/** Linux's PATH_MAX: a longer path could not be checked out anyway. */
const MAX_PATH_BYTES = 4096;
/** `<mode> <type> <object> <size>` of an ls-tree record: well under this even with SHA-256. */
const MAX_RECORD_HEAD_BYTES = 256;
const [TAB, SPACE, DIGIT_0, DIGIT_9] = [0x09, 0x20, 0x30, 0x39];
/**
 * Written as the clone's info/attributes, which outrank the repository's own .gitattributes: the
 * size limit counts blob sizes, and eol=crlf (a file of newlines doubles), ident (`$Id$` grows
 * elevenfold), working-tree-encoding or a filter would write more than that.
 */
const BLOB_BYTES_ATTRIBUTES = "* -text -eol -ident -filter -working-tree-encoding\n";

/** Git's environment: nothing from the machine's or a user's config, no prompts, stable messages. */
function gitEnvironment(home: string, token: string | undefined): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    LC_ALL: "C",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ASKPASS: "/bin/false",
    SSH_ASKPASS: "/bin/false",
  };
  if (token !== undefined) {
    Object.assign(env, {
      GIT_CONFIG_COUNT: "1",
      GIT_CONFIG_KEY_0: "http.extraHeader",
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${btoa(`x-access-token:${token}`)}`,
    });
  }
  return env;
}

/** Why git failed, in the user's terms; the raw message (redacted) when it is none of the known ones. */
function explain(stderr: string, request: CloneRequest): string {
  const { label, url, ref } = request;
  if ("branch" in ref && /couldn't find remote ref/i.test(stderr)) return `branch '${ref.branch}' does not exist in ${label}`;
  if ("commit" in ref && /not our ref|couldn't find remote ref|unadvertised object/i.test(stderr)) return `commit ${ref.commit} is no longer in ${label}`;
  if (/authentication failed|could not read username|terminal prompts disabled|returned error: 40[13]/i.test(stderr)) {
    return request.token
      ? `the git server refused the credentials for ${label} (${url})`
      : `the git server asked for credentials for ${label} (${url}): a private repository needs repoHostInstallationId or an accessToken`;
  }
  if (/not found|returned error: 404/i.test(stderr)) return `no repository ${label} at ${url}`;
  if (/could not resolve host|failed to connect|connection refused|timed out/i.test(stderr)) return `could not reach ${url}`;
  const lastLine = stderr.trim().split("\n").pop() ?? "";
  return `git could not fetch ${label}: ${lastLine.slice(0, 300) || "no message"}`;
}

async function folderBytes(folder: string): Promise<number> {
  const names = await readdir(folder).catch(() => [] as string[]);
  const sizes = await Promise.all(names.map((name) => stat(join(folder, name)).then((info) => info.size, () => 0)));
  return sizes.reduce((sum, size) => sum + size, 0);
}

const megabytes = (bytes: number) => Math.round(bytes / 1024 / 1024);

/**
 * Counts the records of `git ls-tree -r -t -l -z` as they stream in: files and folders, and the
 * bytes the files will take checked out. Nothing is kept of a record but its place in the head
 * (`<mode> <type> <object> <size>`) and the size read so far; its path is skipped, its length
 * bounded. Nothing is allocated per record either: a tree of a billion paths must not leave
 * megabytes of garbage behind for the collector. The first limit passed stops git.
 */
export class TreeTally {
  entries = 0;
  bytes = 0;
  private inPath = false;
  private headBytes = 0;
  /** 1 mode, 2 type, 3 object, 4 size: the field of the head the last byte was in (0 before the first). */
  private field = 0;
  private inField = false;
  private size = 0;
  /** False once the size field holds anything but digits (folders and submodules show "-"). */
  private sizeIsNumber = true;
  private pathBytes = 0;

  constructor(private readonly request: Pick<CloneRequest, "label" | "limits">) {}

  /** Reads one piece of the listing; answers why to stop, if a limit is passed. */
  read(chunk: Uint8Array): string | undefined {
    const { label, limits } = this.request;
    for (let at = 0; at < chunk.length; ) {
      if (!this.inPath) {
        const tab = chunk.indexOf(TAB, at);
        const end = tab < 0 ? chunk.length : tab;
        this.headBytes += end - at;
        if (this.headBytes > MAX_RECORD_HEAD_BYTES) return `git listed the tree of ${label} in a form the platform does not know`;
        for (let index = at; index < end; index++) this.readHeadByte(chunk[index]!);
        if (tab < 0) return undefined;
        if (this.field === 4 && this.sizeIsNumber) this.bytes += this.size;
        this.inPath = true;
        at = tab + 1;
      } else {
        const nul = chunk.indexOf(0, at);
        const end = nul < 0 ? chunk.length : nul;
        this.pathBytes += end - at;
        if (this.pathBytes > MAX_PATH_BYTES) return `${label} holds a path longer than ${MAX_PATH_BYTES} bytes`;
        if (nul < 0) return undefined;
        this.entries++;
        if (this.entries > limits.maxEntries) return `${label} has more than ${limits.maxEntries} files and folders (PLATFORM_MAX_ARCHIVE_ENTRIES)`;
        if (this.bytes > limits.maxBytes) return `${label} is larger than ${megabytes(limits.maxBytes)} MB checked out (PLATFORM_MAX_UNCOMPRESSED_BYTES)`;
        this.nextRecord();
        at = nul + 1;
      }
    }
    return undefined;
  }

  private readHeadByte(byte: number) {
    if (byte === SPACE) {
      this.inField = false;
      return;
    }
    if (!this.inField) {
      this.inField = true;
      this.field++;
    }
    if (this.field !== 4) return;
    if (byte >= DIGIT_0 && byte <= DIGIT_9) this.size = this.size * 10 + (byte - DIGIT_0);
    else this.sizeIsNumber = false;
  }

  private nextRecord() {
    this.inPath = this.inField = false;
    this.headBytes = this.field = this.size = this.pathBytes = 0;
    this.sizeIsNumber = true;
  }
}

/** One clone: every git command it runs shares the clone's environment, deadline and abort signal. */
class CloneRun {
  private readonly deadline: number;

  constructor(private readonly request: CloneRequest) {
    this.deadline = Date.now() + request.timeoutMs;
  }

  /** Runs git; a limit, the deadline or a failure fails the build with a message for the log. */
  async git(args: string[], cwd: string, env: Record<string, string>, options: Pick<GitCommand, "read" | "watch"> = {}): Promise<void> {
    const { request } = this;
    let result;
    try {
      result = await runGitCommand({
        argv: ["git", ...args],
        cwd,
        env,
        signal: request.signal,
        deadline: this.deadline,
        timeoutMessage: `fetching ${request.label} took longer than ${Math.round(request.timeoutMs / 1000)} s (PLATFORM_GIT_CLONE_TIMEOUT_SECONDS)`,
        ...options,
      });
    } catch (error) {
      if (error instanceof GitLimitReached) throw new BuildFailed(error.message);
      throw error;
    }
    if (result.exitCode !== null && result.exitCode !== 0) {
      const secrets = request.token ? [request.token, btoa(`x-access-token:${request.token}`)] : [];
      throw new BuildFailed(explain(redact(result.stderrTail, secrets), request));
    }
  }

  /** The fetch, with the download's size watched as it lands: every object stays in one pack file (no loose objects), so its size is all that was brought. */
  fetch(destination: string, env: Record<string, string>): Promise<void> {
    const { request } = this;
    const refspec = "branch" in request.ref ? `refs/heads/${request.ref.branch}` : request.ref.commit;
    const packs = join(destination, ".git", "objects", "pack");
    return this.git(
      [
        ...["-c", "protocol.version=2", "-c", "fetch.unpackLimit=1", "-c", "transfer.unpackLimit=1"],
        // A server that stops sending for a minute fails the fetch before the clone timeout has to.
        ...["-c", "http.lowSpeedLimit=1", "-c", "http.lowSpeedTime=60"],
        ...["fetch", "--depth", "1", "--no-tags", "--no-recurse-submodules", "--quiet", "--", request.url, refspec],
      ],
      destination,
      env,
      {
        watch: async () =>
          (await folderBytes(packs)) > request.limits.maxBytes
            ? `${request.label} is larger than ${megabytes(request.limits.maxBytes)} MB to download (PLATFORM_MAX_UNCOMPRESSED_BYTES)`
            : undefined,
      },
    );
  }

  /** The fetched tree against the upload limits, before anything is written. A small pack can hold a huge file of zeros, or a billion paths. */
  async checkTree(destination: string, env: Record<string, string>): Promise<TreeTally> {
    const tally = new TreeTally(this.request);
    await this.git(["ls-tree", "-r", "-t", "-l", "-z", "FETCH_HEAD"], destination, env, { read: (chunk) => tally.read(chunk) });
    return tally;
  }

  /** The checked-out commit's SHA and subject, reading no more of them than is kept. */
  async commit(destination: string, env: Record<string, string>): Promise<ClonedCommit> {
    const head = new Uint8Array(LOG_HEAD_BYTES);
    let filled = 0;
    await this.git(["log", "-1", "--format=%H%x00%s"], destination, env, {
      read: (chunk) => {
        const taken = Math.min(chunk.byteLength, LOG_HEAD_BYTES - filled);
        head.set(chunk.subarray(0, taken), filled);
        filled += taken;
        return filled === LOG_HEAD_BYTES ? ENOUGH : undefined;
      },
    });
    const [sha = "", subject = ""] = new TextDecoder().decode(head.subarray(0, filled)).trim().split("\0");
    return { sha, message: subject.replace(/[\0-\x1f\x7f-\x9f]/g, " ").slice(0, MAX_MESSAGE_CHARS) };
  }
}

/**
 * Fetches `request.ref` into `request.destination` (made here): the tree as files, without `.git`.
 * Throws BuildFailed with a message for the build log and the app's status; never the token.
 */
export async function cloneCommit(request: CloneRequest): Promise<ClonedCommit & { bytes: number }> {
  const { destination } = request;
  const home = `${destination}.home`;
  await mkdir(home, { recursive: true, mode: 0o700 });
  try {
    const env = gitEnvironment(home, undefined);
    const run = new CloneRun(request);
    request.log(`==> Fetching ${request.label} ${"branch" in request.ref ? `branch ${request.ref.branch}` : `commit ${request.ref.commit}`} from ${request.url}`);
    await run.git(["init", "--quiet", "--template=", destination], home, env);
    await run.fetch(destination, gitEnvironment(home, request.token));
    const { bytes, entries } = await run.checkTree(destination, env);
    await mkdir(join(destination, ".git", "info"), { recursive: true });
    await writeFile(join(destination, ".git", "info", "attributes"), BLOB_BYTES_ATTRIBUTES);
    await run.git(["-c", "core.symlinks=false", "checkout", "--quiet", "--detach", "FETCH_HEAD"], destination, env);
    const { sha, message } = await run.commit(destination, env);
    await rm(join(destination, ".git"), { recursive: true, force: true });
    request.log(`==> Commit ${sha.slice(0, 12)} "${message}" (${entries} files and folders, ${(bytes / 1024 / 1024).toFixed(1)} MB)`);
    return { sha, message, bytes };
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
