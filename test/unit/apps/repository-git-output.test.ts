// How the platform reads git's output: the ls-tree tally counts files, folders and bytes as the
// listing streams in, however it is cut into pieces, and stops at the first limit; the process
// runner bounds standard output and error, stops the whole process group at a limit, at the
// deadline and when the reader has enough.
import { describe, expect, spyOn, test } from "bun:test";
import { readFileSync } from "node:fs";
import { TreeTally } from "../../../src/apps/repository/clone";
import { ENOUGH, GitLimitReached, runGitCommand, type GitCommand } from "../../../src/apps/repository/git-process";

const SHA = "0123456789abcdef0123456789abcdef01234567";
const record = (mode: string, type: string, size: string, path: string) => `${mode} ${type} ${SHA} ${size.padStart(7)}\t${path}\0`;
const LISTING = [
  record("040000", "tree", "-", "web"),
  record("100644", "blob", "1200", "web/index.html"),
  record("160000", "commit", "-", "vendor/lib"),
  record("100755", "blob", "34", "run.sh"),
].join("");
const limits = { maxBytes: 1_000_000, maxEntries: 100 };

function tally(pieces: Uint8Array[], given = limits) {
  const counter = new TreeTally({ label: "acme/site", limits: given });
  for (const piece of pieces) {
    const stop = counter.read(piece);
    if (stop) return { stop, entries: counter.entries, bytes: counter.bytes };
  }
  return { stop: undefined, entries: counter.entries, bytes: counter.bytes };
}

describe("the ls-tree tally", () => {
  test("counts every record and the files' sizes, wherever the pieces are cut", () => {
    const bytes = new TextEncoder().encode(LISTING);
    expect(tally([bytes])).toEqual({ stop: undefined, entries: 4, bytes: 1234 });
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(tally([bytes.subarray(0, cut), bytes.subarray(cut)])).toEqual({ stop: undefined, entries: 4, bytes: 1234 });
    }
    expect(tally(Array.from(bytes, (byte) => Uint8Array.of(byte)))).toEqual({ stop: undefined, entries: 4, bytes: 1234 });
  });

  test("stops at the first entry past the limit, and at the first byte past the size", () => {
    const many = new TextEncoder().encode(record("100644", "blob", "1", "f").repeat(1000));
    expect(tally([many], { ...limits, maxEntries: 10 })).toEqual({ stop: "acme/site has more than 10 files and folders (PLATFORM_MAX_ARCHIVE_ENTRIES)", entries: 11, bytes: 11 });
    const big = new TextEncoder().encode(record("100644", "blob", String(3 * 1024 * 1024), "big") + record("100644", "blob", "1", "after"));
    expect(tally([big], { ...limits, maxBytes: 2 * 1024 * 1024 })).toMatchObject({ stop: "acme/site is larger than 2 MB checked out (PLATFORM_MAX_UNCOMPRESSED_BYTES)", entries: 1 });
  });

  test("refuses a path longer than 4096 bytes, and a record head it does not know, without holding either", () => {
    const longPath = new TextEncoder().encode(record("100644", "blob", "1", "a".repeat(5000)));
    expect(tally([longPath]).stop).toBe("acme/site holds a path longer than 4096 bytes");
    expect(tally([new Uint8Array(300).fill(0x61)]).stop).toBe("git listed the tree of acme/site in a form the platform does not know");
  });
});

function command(argv: string[], extra: Partial<GitCommand> = {}): GitCommand {
  return { argv, cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, signal: new AbortController().signal, deadline: Date.now() + 30_000, timeoutMessage: "too slow", ...extra };
}

/** The process has ended (a zombie waiting for its parent counts as ended). */
function gone(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

describe("the git process runner", () => {
  test("output nobody asked for is stopped past 64 KB; endless messages past 1 MB, keeping their tail", async () => {
    await expect(runGitCommand(command(["yes"]))).rejects.toThrow(new GitLimitReached("git wrote more than 64 KB of output where none was expected"));
    await expect(runGitCommand(command(["sh", "-c", "yes 'remote: noise' >&2"]))).rejects.toThrow(new GitLimitReached("git wrote more than 1 MB of messages"));
    const failed = await runGitCommand(command(["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x >&2; echo 'fatal: the reason' >&2; exit 128"]));
    expect(failed.exitCode).toBe(128);
    expect(failed.stderrTail.length).toBe(4096);
    expect(failed.stderrTail.endsWith("fatal: the reason\n")).toBe(true);
  });

  test("a reader with ENOUGH, a limit or the deadline stops the whole process group at once", async () => {
    // The shell's background child is in git's group, as git-remote-http is: it must go too.
    let childPid = 0;
    const started = Date.now();
    const enough = await runGitCommand(
      command(["sh", "-c", "sleep 300 & echo $!; wait"], {
        read: (chunk) => {
          childPid = Number(new TextDecoder().decode(chunk).trim());
          return ENOUGH;
        },
      }),
    );
    expect(enough.exitCode).toBeNull();
    expect(Date.now() - started).toBeLessThan(5_000);
    for (const deadline = Date.now() + 2_000; !gone(childPid) && Date.now() < deadline; ) await Bun.sleep(20);
    expect(gone(childPid)).toBe(true);

    await expect(runGitCommand(command(["yes"], { read: () => "the listing passed a limit" }))).rejects.toThrow(new GitLimitReached("the listing passed a limit"));
    const slow = Date.now();
    await expect(runGitCommand(command(["sleep", "300"], { deadline: Date.now() + 300 }))).rejects.toThrow(new GitLimitReached("too slow"));
    expect(Date.now() - slow).toBeLessThan(5_000);
  });

  test("a reader that throws stops git at once with the reason, instead of leaving it blocked on a full pipe until the deadline", async () => {
    const started = Date.now();
    const reading = runGitCommand(
      command(["yes"], {
        deadline: Date.now() + 20_000,
        read: () => {
          throw new Error("the reader broke");
        },
      }),
    );
    await expect(reading).rejects.toThrow(new GitLimitReached("reading git's output failed: the reader broke"));
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test("a size check that answers after git has exited kills nothing: git's process group may be someone else's by then", async () => {
    const kill = spyOn(process, "kill");
    try {
      const answered = Promise.withResolvers<void>();
      const result = await runGitCommand(
        command(["sleep", "0.1"], {
          watchMs: 10,
          watch: async () => {
            await Bun.sleep(400);
            answered.resolve();
            return "too large";
          },
        }),
      );
      expect(result.exitCode).toBe(0);
      await answered.promise;
      await Bun.sleep(50);
      expect(kill).not.toHaveBeenCalled();
    } finally {
      kill.mockRestore();
    }
  });

  test("an abort stops git and rejects with the signal's reason", async () => {
    const controller = new AbortController();
    const running = runGitCommand(command(["sleep", "300"], { signal: controller.signal }));
    setTimeout(() => controller.abort(new Error("build cancelled")), 100);
    await expect(running).rejects.toThrow("build cancelled");
  });
});
