// Repositories made to expand inside the platform: a tree of a billion paths in a few KB, a commit
// subject of many megabytes, a big file in a push of a handful of objects (which git would unpack
// as loose objects, past a guard that only watched pack files), a .gitattributes that would make
// the checkout write more than the listing counted. Each is served by a real git
// server on loopback; the server's resident memory is sampled through the deploy (a ceiling kills
// a server that buffers without bound, so the machine survives the bug) and a lag probe checks the
// server keeps answering.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readdirSync, readlinkSync } from "node:fs";
import { TestServer } from "../../helpers/server";
import { deleteAllApps } from "../../helpers/apps";
import { startGitServer, type GitServer } from "../../helpers/git-server";
import { startLagProbe } from "../../helpers/event-loop-lag";
import { watchRss } from "../../helpers/process-memory";

const MB = 1024 * 1024;
const MAX_RSS_GROWTH = 50 * MB;
/** Past this growth the server is killed: the machine is shared, and the test has failed anyway. */
const RSS_CEILING = 1024 * MB;
const MAX_LAG_MS = 100;
const MAX_UNCOMPRESSED_BYTES = 8 * MB;

let git: GitServer;
let server: TestServer;
let key: string;

beforeAll(async () => {
  git = await startGitServer();
  server = await TestServer.start({
    PLATFORM_GIT_BASE_URL: git.baseUrl,
    PLATFORM_MAX_UNCOMPRESSED_BYTES: String(MAX_UNCOMPRESSED_BYTES),
    PLATFORM_GIT_CLONE_TIMEOUT_SECONDS: "120",
  });
  key = (await server.createKey("git-limits", "git-limits")).key;
  // One deploy first: what the server loads on its first build is not what a repository costs.
  await git.createRepo("acme", "plain", { files: { "index.html": "<p>plain</p>" } });
  expect((await deployWatched("plain", "plain")).build.status).toBe("succeeded");
}, 240_000);

afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
  await git.stop();
}, 60_000);

function deployFromRepo(name: string, repository: string) {
  return server.request("POST", "/api/apps/deploy-from-repo", {
    key,
    body: { name, runtime: "node", memoryMB: 64, repository: { id: name, owner: "acme", name: repository, branch: "main" } },
  });
}

/** Deploys the repository and waits for its build to end, sampling the server's RSS and lag meanwhile. */
async function deployWatched(name: string, repository: string) {
  const rss = watchRss(server.process!.pid, RSS_CEILING);
  const probe = startLagProbe(server);
  try {
    const response = await deployFromRepo(name, repository);
    expect(response.status).toBe(202);
    let answer: any;
    for (const deadline = Date.now() + 180_000; Date.now() < deadline; await Bun.sleep(250)) {
      answer = (await server.request("GET", `/api/apps/${response.body.app.id}/builds/${response.body.buildId}`, { key })).body;
      if (!["queued", "building"].includes(answer.build.status)) break;
    }
    const maxLagMs = await probe.stop();
    return { appId: response.body.app.id as string, build: answer.build, log: answer.log as string, maxLagMs, memory: rss.stop() };
  } catch (error) {
    if (rss.stop().killed) throw new Error(`the server's RSS grew by more than ${RSS_CEILING / MB} MB: it was killed`);
    throw error;
  } finally {
    rss.stop();
  }
}

/** Processes whose working folder is inside the server's data dir: git runs there, and must be gone. */
function processesInDataDir(): string[] {
  return readdirSync("/proc").filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return readlinkSync(`/proc/${pid}/cwd`).startsWith(server.dataDir);
    } catch {
      return false;
    }
  });
}

describe("git output is read as a bounded stream", () => {
  test("a tree bomb (10 trees of 10, nine deep: a billion paths in a few KB) fails its build on the entry limit; RSS grows under 50 MB", async () => {
    const repo = await git.rawRepo("acme", "bomb");
    const blob = await repo(["hash-object", "-w", "--stdin"], "boom\n");
    let tree = await repo(["mktree"], Array.from({ length: 10 }, (_, index) => `100644 blob ${blob}\tf${index}\n`).join(""));
    for (let level = 1; level < 9; level++) tree = await repo(["mktree"], Array.from({ length: 10 }, (_, index) => `040000 tree ${tree}\td${index}\n`).join(""));
    const commit = await repo(["commit-tree", tree, "-m", "A billion paths"]);
    await repo(["update-ref", "refs/heads/main", commit]);
    expect(Number((await repo(["count-objects", "-v"])).match(/^size: (\d+)/m)?.[1])).toBeLessThan(64); // KB, loose

    const { appId, build, log, maxLagMs, memory } = await deployWatched("tree-bomb", "bomb");
    expect(memory.killed).toBe(false);
    expect(build.status).toBe("failed");
    expect(build.error).toContain("acme/bomb has more than 20000 files and folders (PLATFORM_MAX_ARCHIVE_ENTRIES)");
    expect(log).toContain("more than 20000 files and folders");
    const app = (await server.request("GET", `/api/apps/${appId}`, { key })).body.app;
    expect(app.status).toBe("failed");
    expect(app.statusReason).toContain("PLATFORM_MAX_ARCHIVE_ENTRIES");
    expect(memory.peak - memory.before).toBeLessThan(MAX_RSS_GROWTH);
    expect(maxLagMs).toBeLessThan(MAX_LAG_MS);
    // git ls-tree was stopped at the limit, with its whole process group.
    expect(processesInDataDir()).toEqual([]);
  }, 240_000);

  test("a commit subject of 64 MB is cut to 300 characters while it is read; RSS grows under 50 MB", async () => {
    const repo = await git.rawRepo("acme", "subject");
    const page = await repo(["hash-object", "-w", "--stdin"], "<p>long subject</p>\n");
    const tree = await repo(["mktree"], `100644 blob ${page}\tindex.html\n`);
    const commit = await repo(["commit-tree", tree], "s".repeat(64 * MB));
    await repo(["update-ref", "refs/heads/main", commit]);

    const { build, log, memory } = await deployWatched("long-subject", "subject");
    expect(memory.killed).toBe(false);
    expect(build.status).toBe("succeeded");
    expect(build.commitSha).toBe(commit);
    expect(build.commitMessage).toBe("s".repeat(300));
    expect(log).toContain(`==> Commit ${commit.slice(0, 12)} "${"s".repeat(300)}"`);
    expect(memory.peak - memory.before).toBeLessThan(MAX_RSS_GROWTH);
  }, 240_000);
});

describe("the download's size guard sees every byte", () => {
  test("a push of four objects with a 24 MB file is stopped while it downloads, at PLATFORM_MAX_UNCOMPRESSED_BYTES", async () => {
    // Random bytes do not compress: the pack is as large as the file. Under 100 objects, git would
    // unpack them as loose objects, where a guard watching pack files never looks.
    await git.createRepo("acme", "big", { files: { "index.html": "<p>big</p>", "big.bin": randomBytes(24 * MB) } });
    const fetchedBefore = git.requests.length;
    // 16 MB/s: the guard (a look every 100 ms) has time to act well before the pack is through.
    git.setRate(16 * MB);
    try {
      const { build } = await deployWatched("big-file", "big");
      expect(build.status).toBe("failed");
      expect(build.error).toContain("acme/big is larger than 8 MB to download (PLATFORM_MAX_UNCOMPRESSED_BYTES)");
    } finally {
      git.setRate(0);
    }
    const packBytes = git.requests
      .slice(fetchedBefore)
      .filter((request) => request.url.endsWith("/git-upload-pack"))
      .reduce((sum, request) => sum + request.responseBytes, 0);
    expect(packBytes).toBeGreaterThan(MAX_UNCOMPRESSED_BYTES);
    expect(packBytes).toBeLessThan(16 * MB);
    expect(processesInDataDir()).toEqual([]);
  }, 240_000);
});

describe("the checkout writes what the listing counted", () => {
  test("a repository's own .gitattributes (eol=crlf, ident, working-tree-encoding) cannot make its files larger on disk than their blobs", async () => {
    // 6 MB of newlines counts under the 8 MB limit, and would be written as 12 MB with eol=crlf.
    const repo = await git.rawRepo("acme", "attributes");
    const blobs = {
      ".gitattributes": "* text eol=crlf ident\nwide.txt working-tree-encoding=UTF-16\n",
      "index.html": "<p>attributes</p>\n",
      "newlines.txt": "\n".repeat(6 * MB),
      "ident.txt": "a\n$Id$\n",
      "wide.txt": "ab\n",
    };
    const entries = await Promise.all(
      Object.entries(blobs).map(async ([path, content]) => `100644 blob ${await repo(["hash-object", "-w", "--stdin"], content)}\t${path}\n`),
    );
    const commit = await repo(["commit-tree", await repo(["mktree"], entries.join("")), "-m", "Attributes that grow the checkout"]);
    await repo(["update-ref", "refs/heads/main", commit]);

    const { appId, build } = await deployWatched("attributes", "attributes");
    expect(build.status).toBe("succeeded");
    const listed = (await server.request("GET", `/api/apps/${appId}/fs/list`, { key })).body.entries as { name: string; size: number }[];
    expect(Object.fromEntries(listed.map((entry) => [entry.name, entry.size]))).toEqual(
      Object.fromEntries(Object.entries(blobs).map(([path, content]) => [path, content.length])),
    );
    for (const path of ["ident.txt", "wide.txt"]) {
      const file = (await server.request("GET", `/api/apps/${appId}/fs/file?path=${path}`, { key })).body.file;
      expect(file.content).toBe(blobs[path as keyof typeof blobs]);
    }
  }, 240_000);
});
