// A real git server over HTTP on 127.0.0.1 for tests that clone app sources: git's own
// git-http-backend run as a CGI per request, so dumb and smart HTTP, protocol v2, shallow clones
// and fetches of single commits behave as on a real host. Repos are public unless made private;
// a private one wants the server's token as the HTTP Basic password. The helper commits in a work
// tree of its own per repo and pushes over HTTP, so its pushes are among the recorded requests.
// Repos whose objects no work tree can make (tree bombs, huge messages) are written with git's
// plumbing in the bare repo (rawRepo). Answers can be slowed to a byte rate (setRate), and the
// bytes each answer sent are recorded, to see where a client stopped reading.
import type { Server } from "bun";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { tempDir } from "./temp";

export interface RecordedRequest {
  method: string;
  /** Path and query as sent. */
  url: string;
  /** Lowercase names. */
  headers: Record<string, string>;
  /** Bytes of the answer's body sent so far. */
  responseBytes: number;
}

export interface GitServer {
  /** Repos are at `${baseUrl}/<owner>/<name>.git`. */
  baseUrl: string;
  /** Makes a bare repo <owner>/<name> and a work tree to commit in; files written, committed, pushed to `branch`. Answers the commit SHA. */
  createRepo(owner: string, name: string, options: { branch?: string; files: Record<string, string | Uint8Array>; message?: string; private?: boolean }): Promise<string>;
  /**
   * Makes a public bare repo <owner>/<name> without a work tree and answers a function running git
   * in it with `input` on its stdin (hash-object, mktree, commit-tree, update-ref...), answering
   * its output trimmed. `commit` does not work on such a repo.
   */
  rawRepo(owner: string, name: string): Promise<(args: string[], input?: string | Uint8Array) => Promise<string>>;
  /**
   * Writes (string) or deletes (null) files in the work tree on `branch` (default: the branch the
   * repo was made with; created from the current head when new), commits with `message`, pushes.
   * Answers the new SHA.
   */
  commit(owner: string, name: string, options: { branch?: string; files: Record<string, string | null>; symlinks?: Record<string, string>; message: string }): Promise<string>;
  /** Every request the server got, the helper's own pushes (git-receive-pack) included. */
  requests: RecordedRequest[];
  /** Token a private repo accepts as HTTP Basic password (any username); other repos are public. */
  readonly token: string;
  /** Makes the next requests wait `ms` before answering (to test clone timeouts); 0 turns it off. */
  setDelay(ms: number): void;
  /** Sends the next answers' bodies at most at this many bytes a second; 0 turns it off. */
  setRate(bytesPerSecond: number): void;
  /** Stops the server and deletes its temp dirs. */
  stop(): Promise<void>;
}

const HTTP_BACKEND = "/usr/lib/git-core/git-http-backend";
const SAFE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const REPO_PATH = /^\/([^/]+)\/([^/]+\.git)(?:\/|$)/;

interface Repo {
  /** "" for a raw repo. */
  workTree: string;
  defaultBranch: string;
  isPrivate: boolean;
}

export async function startGitServer(): Promise<GitServer> {
  const root = tempDir("platform-git-");
  const projectRoot = join(root, "repos");
  const workTrees = join(root, "work");
  const home = join(root, "home");
  for (const dir of [projectRoot, workTrees, home]) mkdirSync(dir);
  // Neither the machine's nor the user's git config may change what the server or the helper do.
  const gitEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0", LANG: "C" };

  const token = Array.from(crypto.getRandomValues(new Uint8Array(20)), (byte) => byte.toString(16).padStart(2, "0")).join("");
  const repos = new Map<string, Repo>();
  const requests: RecordedRequest[] = [];
  const backends = new Set<ReturnType<typeof Bun.spawn>>();
  let delayMs = 0;
  let bytesPerSecond = 0;
  let stopped = false;

  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    // A delayed answer (setDelay) must not be cut by Bun's idle timeout before the client gives up.
    idleTimeout: 0,
    async fetch(request, server) {
      const url = new URL(request.url);
      const recorded: RecordedRequest = { method: request.method, url: url.pathname + url.search, headers: Object.fromEntries(request.headers), responseBytes: 0 };
      requests.push(recorded);
      if (delayMs > 0) await Bun.sleep(delayMs);
      // A client that gave up while delayed, or a server stopped meanwhile, gets no backend run.
      if (request.signal.aborted || stopped) return new Response(null, { status: 503 });

      let pathInfo: string;
      try {
        pathInfo = decodeURIComponent(url.pathname);
      } catch {
        return new Response("Bad path\n", { status: 400 });
      }
      // The private check reads the repo from the path: a path git-http-backend would resolve to
      // another repo (dot segments, doubled slashes) must not slip past it.
      if (pathInfo.split("/").slice(1).some((segment) => segment === "" || segment === "." || segment === "..")) {
        return new Response("Not found\n", { status: 404 });
      }
      const repoMatch = REPO_PATH.exec(pathInfo);
      const repo = repoMatch ? repos.get(`${repoMatch[1]}/${repoMatch[2]}`) : undefined;
      const user = basicUser(request.headers.get("authorization"), token);
      if (repo?.isPrivate && user === null) {
        return new Response("Authentication required\n", { status: 401, headers: { "WWW-Authenticate": 'Basic realm="git"' } });
      }

      const body = request.body ? new Uint8Array(await request.arrayBuffer()) : null;
      const env: Record<string, string> = {
        ...gitEnv,
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: "1",
        PATH_INFO: pathInfo,
        REQUEST_METHOD: request.method,
        QUERY_STRING: url.search.slice(1),
        REMOTE_ADDR: server.requestIP(request)?.address ?? "127.0.0.1",
      };
      const contentType = request.headers.get("content-type");
      if (contentType) env.CONTENT_TYPE = contentType;
      if (body) env.CONTENT_LENGTH = String(body.byteLength);
      const contentEncoding = request.headers.get("content-encoding");
      if (contentEncoding) env.HTTP_CONTENT_ENCODING = contentEncoding;
      const gitProtocol = request.headers.get("git-protocol");
      if (gitProtocol) env.GIT_PROTOCOL = gitProtocol;
      if (user !== null) env.REMOTE_USER = user;

      const backend = Bun.spawn([HTTP_BACKEND], { env, stdin: body ?? "ignore", stdout: "pipe", stderr: "pipe" });
      backends.add(backend);
      backend.exited.then(() => backends.delete(backend));
      const errors = new Response(backend.stderr).text();
      return cgiResponse(backend, errors, async (bytes) => {
        recorded.responseBytes += bytes;
        if (bytesPerSecond > 0) await Bun.sleep((bytes / bytesPerSecond) * 1000);
      });
    },
  });

  async function git(args: string[], cwd: string, input?: string | Uint8Array): Promise<string> {
    const stdin = typeof input === "string" ? new TextEncoder().encode(input) : (input ?? "ignore");
    const child = Bun.spawn(["git", ...args], { cwd, env: gitEnv, stdin, stdout: "pipe", stderr: "pipe" });
    const [output, errors, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    if (exitCode !== 0) throw new Error(`git ${args.join(" ")} failed (${exitCode}): ${errors.trim()}`);
    return output.trim();
  }

  async function commitAndPush(owner: string, name: string, repo: Repo, branch: string, message: string): Promise<string> {
    await git(["add", "--all"], repo.workTree);
    await git(["commit", "--quiet", "--allow-empty", "--message", message], repo.workTree);
    const auth = repo.isPrivate ? ["-c", `http.extraHeader=Authorization: Basic ${btoa(`helper:${token}`)}`] : [];
    await git([...auth, "push", "--quiet", `${baseUrl}/${owner}/${name}.git`, branch], repo.workTree);
    return git(["rev-parse", "HEAD"], repo.workTree);
  }

  async function makeBare(owner: string, name: string, branch: string): Promise<string> {
    for (const part of [owner, name]) if (!SAFE_NAME.test(part)) throw new Error(`Not a repo name part: ${part}`);
    if (repos.has(`${owner}/${name}.git`)) throw new Error(`Repo ${owner}/${name}.git exists already`);
    const bare = join(projectRoot, owner, `${name}.git`);
    mkdirSync(bare, { recursive: true });
    await git(["init", "--quiet", "--bare", "--initial-branch", branch], bare);
    // git-http-backend serves receive-pack only to an authenticated REMOTE_USER unless told to.
    await git(["config", "http.receivepack", "true"], bare);
    return bare;
  }

  const baseUrl = `http://127.0.0.1:${server.port}`;

  return {
    baseUrl,
    requests,
    token,
    setDelay(ms) {
      delayMs = ms;
    },

    setRate(rate) {
      bytesPerSecond = rate;
    },

    async rawRepo(owner, name) {
      const bare = await makeBare(owner, name, "main");
      await git(["config", "user.name", "Test Author"], bare);
      await git(["config", "user.email", "author@example.test"], bare);
      repos.set(`${owner}/${name}.git`, { workTree: "", defaultBranch: "main", isPrivate: false });
      return (args, input) => git(args, bare, input);
    },

    async createRepo(owner, name, options) {
      const key = `${owner}/${name}.git`;
      const branch = options.branch ?? "main";
      await makeBare(owner, name, branch);

      const repo: Repo = { workTree: join(workTrees, owner, name), defaultBranch: branch, isPrivate: options.private ?? false };
      mkdirSync(repo.workTree, { recursive: true });
      await git(["init", "--quiet", "--initial-branch", branch], repo.workTree);
      await git(["config", "user.name", "Test Author"], repo.workTree);
      await git(["config", "user.email", "author@example.test"], repo.workTree);
      writeFiles(repo.workTree, options.files);
      repos.set(key, repo);
      return commitAndPush(owner, name, repo, branch, options.message ?? "Initial commit");
    },

    async commit(owner, name, options) {
      const repo = repos.get(`${owner}/${name}.git`);
      if (!repo?.workTree) throw new Error(`No repo ${owner}/${name} with a work tree`);
      const branch = options.branch ?? repo.defaultBranch;
      const branchExists = await git(["branch", "--list", branch], repo.workTree);
      await git(branchExists ? ["switch", "--quiet", branch] : ["switch", "--quiet", "--create", branch], repo.workTree);
      writeFiles(repo.workTree, options.files);
      for (const [path, target] of Object.entries(options.symlinks ?? {})) symlinkSync(target, join(repo.workTree, path));
      return commitAndPush(owner, name, repo, branch, options.message);
    },

    async stop() {
      stopped = true;
      server.stop(true);
      for (const backend of backends) backend.kill();
      await Promise.all([...backends].map((backend) => backend.exited));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function writeFiles(workTree: string, files: Record<string, string | Uint8Array | null>) {
  for (const [path, content] of Object.entries(files)) {
    const file = join(workTree, path);
    if (!file.startsWith(`${workTree}/`)) throw new Error(`File outside the work tree: ${path}`);
    if (content === null) {
      rmSync(file, { force: true });
      continue;
    }
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
}

/** The username of valid Basic credentials (the password is the token), else null. */
function basicUser(authorization: string | null, token: string): string | null {
  const encoded = /^Basic\s+(\S+)$/i.exec(authorization ?? "")?.[1];
  if (!encoded) return null;
  let decoded: string;
  try {
    decoded = atob(encoded);
  } catch {
    return null;
  }
  const colon = decoded.indexOf(":");
  if (colon < 0 || decoded.slice(colon + 1) !== token) return null;
  return decoded.slice(0, colon) || "git";
}

/**
 * Turns a CGI answer into a Response: the head (a `Status:` line and headers up to the blank
 * line) becomes status and headers, the rest is streamed as the body. A backend that dies before
 * its head is a 500 carrying what it wrote to stderr.
 */
async function cgiResponse(backend: Bun.Subprocess<"ignore" | Uint8Array, "pipe", "pipe">, errors: Promise<string>, sent: (bytes: number) => Promise<void>): Promise<Response> {
  const reader = backend.stdout.getReader();
  let buffered: Uint8Array = new Uint8Array(0);
  let headEnd = -1;
  let separatorLength = 0;
  while (headEnd < 0) {
    const { done, value } = await reader.read();
    if (done) return new Response(`git-http-backend answered no head: ${await errors}\n`, { status: 500 });
    buffered = concat(buffered, value);
    const crlf = indexOf(buffered, "\r\n\r\n");
    const lf = indexOf(buffered, "\n\n");
    if (crlf >= 0 && (lf < 0 || crlf < lf)) [headEnd, separatorLength] = [crlf, 4];
    else if (lf >= 0) [headEnd, separatorLength] = [lf, 2];
  }

  let status = 200;
  let statusText = "OK";
  const headers = new Headers();
  for (const line of new TextDecoder().decode(buffered.subarray(0, headEnd)).split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const field = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (field.toLowerCase() === "status") {
      const [code, ...reason] = value.split(" ");
      status = Number(code);
      statusText = reason.join(" ");
    } else {
      headers.append(field, value);
    }
  }

  const rest = buffered.subarray(headEnd + separatorLength);
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      if (rest.byteLength) controller.enqueue(rest);
      await sent(rest.byteLength);
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      controller.enqueue(value);
      await sent(value.byteLength);
    },
    cancel() {
      backend.kill();
    },
  });
  return new Response(body, { status, statusText, headers });
}

function concat(first: Uint8Array, second: Uint8Array): Uint8Array {
  const joined = new Uint8Array(first.byteLength + second.byteLength);
  joined.set(first);
  joined.set(second, first.byteLength);
  return joined;
}

function indexOf(bytes: Uint8Array, text: string): number {
  const pattern = new TextEncoder().encode(text);
  outer: for (let start = 0; start + pattern.length <= bytes.length; start++) {
    for (let offset = 0; offset < pattern.length; offset++) if (bytes[start + offset] !== pattern[offset]) continue outer;
    return start;
  }
  return -1;
}
