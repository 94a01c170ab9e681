// Fetches one commit of a repository into a folder with the git CLI, run by argv (never a shell),
// shallow (depth 1), with no tags, submodules, hooks or templates, and with symbolic links checked
// out as plain files holding their target, so nothing in the tree points outside it. Git gets no
// system or user config and may never prompt; a token travels as an HTTP header set through the
// environment (GIT_CONFIG_*), so it is in no URL, argv or message. The download is bounded in
// time and size, the checked-out tree in size and entries, like an uploaded archive.
import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { BuildFailed } from "../../docker/driver";
import { redact } from "../../crypto/redact";

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

const SIZE_CHECK_MS = 500;
const STDERR_KEPT_CHARS = 4096;
const MAX_MESSAGE_CHARS = 300;

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

async function runGit(args: string[], cwd: string, env: Record<string, string>, request: CloneRequest, watchPacks?: string): Promise<string> {
  // In a process group of its own: git's HTTP helper (git-remote-http) is killed with it, else it
  // would hold the pipes open, and the build, on a server that never answers.
  const child = Bun.spawn(["git", ...args], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe", detached: true });
  let stopped: string | undefined;
  const stop = (why: string) => {
    stopped ??= why;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  };
  const onAbort = () => stop("aborted");
  request.signal.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => stop(`fetching ${request.label} took longer than ${Math.round(request.timeoutMs / 1000)} s (PLATFORM_GIT_CLONE_TIMEOUT_SECONDS)`), request.timeoutMs);
  // Git writes the incoming pack into objects/pack: its size is what the download has brought so far.
  const sizeWatch = watchPacks
    ? setInterval(async () => {
        if ((await folderBytes(watchPacks)) > request.limits.maxBytes) {
          stop(`${request.label} is larger than ${Math.round(request.limits.maxBytes / 1024 / 1024)} MB (PLATFORM_MAX_UNCOMPRESSED_BYTES)`);
        }
      }, SIZE_CHECK_MS)
    : undefined;
  try {
    const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    if (request.signal.aborted) throw request.signal.reason;
    if (stopped) throw new BuildFailed(stopped);
    if (exitCode !== 0) {
      const secrets = request.token ? [request.token, btoa(`x-access-token:${request.token}`)] : [];
      throw new BuildFailed(explain(redact(stderr.slice(-STDERR_KEPT_CHARS), secrets), request));
    }
    return stdout;
  } finally {
    clearTimeout(timer);
    clearInterval(sizeWatch);
    request.signal.removeEventListener("abort", onAbort);
  }
}

/**
 * The fetched tree against the upload limits, before anything is written: files (their sizes as
 * checked out) and folders, from git's own listing. A small pack can hold a huge file of zeros.
 */
async function checkTree(destination: string, env: Record<string, string>, request: CloneRequest): Promise<{ bytes: number; entries: number }> {
  const listing = await runGit(["ls-tree", "-r", "-t", "-l", "-z", "FETCH_HEAD"], destination, env, request);
  let bytes = 0;
  let entries = 0;
  const { limits, label } = request;
  for (const line of listing.split("\0")) {
    if (!line) continue;
    entries++;
    const size = Number(line.slice(0, line.indexOf("\t")).trim().split(/\s+/)[3]);
    if (Number.isFinite(size)) bytes += size;
  }
  if (entries > limits.maxEntries) throw new BuildFailed(`${label} has more than ${limits.maxEntries} files and folders (PLATFORM_MAX_ARCHIVE_ENTRIES)`);
  if (bytes > limits.maxBytes) throw new BuildFailed(`${label} is larger than ${Math.round(limits.maxBytes / 1024 / 1024)} MB checked out (PLATFORM_MAX_UNCOMPRESSED_BYTES)`);
  return { bytes, entries };
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
    const refspec = "branch" in request.ref ? `refs/heads/${request.ref.branch}` : request.ref.commit;
    request.log(`==> Fetching ${request.label} ${"branch" in request.ref ? `branch ${request.ref.branch}` : `commit ${request.ref.commit}`} from ${request.url}`);
    await runGit(["init", "--quiet", "--template=", destination], home, env, request);
    await runGit(
      // A server that stops sending for a minute fails the fetch before the clone timeout has to.
      ["-c", "protocol.version=2", "-c", "http.lowSpeedLimit=1", "-c", "http.lowSpeedTime=60", "fetch", "--depth", "1", "--no-tags", "--no-recurse-submodules", "--quiet", "--", request.url, refspec],
      destination,
      gitEnvironment(home, request.token),
      request,
      join(destination, ".git", "objects", "pack"),
    );
    const { bytes, entries } = await checkTree(destination, env, request);
    await runGit(["-c", "core.symlinks=false", "checkout", "--quiet", "--detach", "FETCH_HEAD"], destination, env, request);
    const [sha = "", subject = ""] = (await runGit(["log", "-1", "--format=%H%x00%s"], destination, env, request)).trim().split("\0");
    await rm(join(destination, ".git"), { recursive: true, force: true });
    const message = subject.replace(/[\0-\x1f\x7f-\x9f]/g, " ").slice(0, MAX_MESSAGE_CHARS);
    request.log(`==> Commit ${sha.slice(0, 12)} "${message}" (${entries} files and folders, ${(bytes / 1024 / 1024).toFixed(1)} MB)`);
    return { sha, message, bytes };
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
