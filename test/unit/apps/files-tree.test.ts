// The file manager on a real folder: hostile paths and planted links never reach outside the
// app's tree, each operation does what it says and refuses conflicts with its own code, saves are
// atomic and guarded by versions, the ZIP download holds the tree, and rename batches lose nothing.
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { unzipSync } from "fflate";
import { inspectZip } from "../../../src/apps/archive";
import { pathSegments } from "../../../src/apps/files/paths";
import { AppTree, MAX_FOLDER_ENTRIES, MAX_TEXT_FILE_BYTES } from "../../../src/apps/files/tree";
import { ApiError, type ErrorCode } from "../../../src/http/errors";
import { onSmallTmpfs, tempDir, writesTakingNoByte } from "../../helpers/temp";

/** An app's tree at <dir>/source beside a folder outside it holding a secret. */
function setUp(files: Record<string, string> = {}) {
  const dir = tempDir();
  const root = join(dir, "source");
  const outside = join(dir, "outside");
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), "secret");
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return { root, outside, tree: new AppTree(root) };
}

async function refusal(work: Promise<unknown>): Promise<ApiError> {
  const error = await work.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return error;
}

async function expectCode(work: Promise<unknown>, code: ErrorCode, status?: number) {
  const error = await refusal(work);
  expect(error.code).toBe(code);
  if (status) expect(error.status).toBe(status);
}

const sha256 = (bytes: string | Uint8Array) => createHash("sha256").update(bytes).digest("hex");

function outsideUntouched(outside: string) {
  expect(readdirSync(outside)).toEqual(["secret.txt"]);
  expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("secret");
}

describe("hostile paths", () => {
  const hostile: Record<string, string> = {
    "parent segment": "../outside/secret.txt",
    "parent segment deeper": "src/../../outside/secret.txt",
    "bare parent": "..",
    absolute: "/etc/passwd",
    backslash: "src\\..\\..\\outside",
    NUL: "index.js\u0000.txt",
    "control character": "a\nb",
    "C1 control character": "a\u0085b",
    "percent-encoded dots": "%2e%2e/outside/secret.txt",
    "percent-encoded slash": "..%2Foutside",
    "percent-encoded backslash": "..%5coutside",
    "double-encoded dots": "%252e%252e/outside",
    "empty segment": "src//index.js",
    "dot segment": "./index.js",
    "over-long segment": `${"a".repeat(256)}.txt`,
    "over-long path": Array.from({ length: 20 }, () => "b".repeat(250)).join("/"),
    "too many segments": Array.from({ length: 65 }, () => "d").join("/"),
  };

  for (const [name, path] of Object.entries(hostile)) {
    test(`${name} is refused with 400 INVALID_PATH by every operation, nothing touched`, async () => {
      const { root, outside, tree } = setUp({ "index.js": "x" });
      await expectCode(tree.read(path), "INVALID_PATH", 400);
      await expectCode(tree.list(path), "INVALID_PATH");
      await expectCode(tree.write(path, "pwned"), "INVALID_PATH");
      await expectCode(tree.create(path, "pwned"), "INVALID_PATH");
      await expectCode(tree.mkdir(path), "INVALID_PATH");
      await expectCode(tree.move("index.js", path), "INVALID_PATH");
      await expectCode(tree.move(path, "moved"), "INVALID_PATH");
      await expectCode(tree.remove(path), "INVALID_PATH");
      await expectCode(tree.walk(path, 100), "INVALID_PATH");
      expect(readdirSync(root)).toEqual(["index.js"]);
      outsideUntouched(outside);
    });
  }

  test("the error says what is wrong with the path", async () => {
    const { tree } = setUp();
    expect((await refusal(tree.read("../x"))).message).toContain(`".." is not allowed`);
    expect((await refusal(tree.read("/etc/passwd"))).message).toContain("relative to the app's root");
  });

  test("ordinary names pass: spaces, unicode, a literal %20, dots inside names, a trailing slash", () => {
    expect(pathSegments("")).toEqual([]);
    expect(pathSegments("src/")).toEqual(["src"]);
    expect(pathSegments("my docs/ünïcødé 日本.md")).toEqual(["my docs", "ünïcødé 日本.md"]);
    expect(pathSegments("100%20off/..hidden/a..b/.env")).toEqual(["100%20off", "..hidden", "a..b", ".env"]);
    expect(pathSegments(Array.from({ length: 64 }, () => "d").join("/"))).toHaveLength(64);
    expect(pathSegments("a".repeat(255))).toHaveLength(1);
  });

  test("the root cannot be deleted, moved or created over", async () => {
    const { root, tree } = setUp({ "index.js": "x" });
    await expectCode(tree.remove(""), "INVALID_PATH");
    await expectCode(tree.move("", "elsewhere"), "INVALID_PATH");
    await expectCode(tree.create(""), "INVALID_PATH");
    await expectCode(tree.mkdir("/"), "INVALID_PATH");
    expect(readdirSync(root)).toEqual(["index.js"]);
  });

  test("the data folder may be reached through a link: the root itself is the platform's", async () => {
    const { root } = setUp({ "index.js": "x" });
    const linkedRoot = join(tempDir(), "linked-source");
    symlinkSync(root, linkedRoot);
    expect((await new AppTree(linkedRoot).list("")).map((entry) => entry.name)).toEqual(["index.js"]);
  });

  test("an app without a source tree answers 404", async () => {
    const tree = new AppTree(join(tempDir(), "never-deployed"));
    await expectCode(tree.list(""), "NOT_FOUND", 404);
    await expectCode(tree.create("a.txt"), "NOT_FOUND");
  });
});

describe("planted symbolic links are never followed", () => {
  /** Links to the outside folder at three depths, to /etc, to a file outside, and to a folder inside. */
  function linkedTree() {
    const setup = setUp({ "index.js": "x", "src/lib/util.js": "u", "inner/kept.txt": "kept" });
    const { root, outside } = setup;
    symlinkSync(outside, join(root, "out"));
    symlinkSync("../../outside", join(root, "src/out"));
    symlinkSync("../../../outside", join(root, "src/lib/out"));
    symlinkSync("/etc", join(root, "etc"));
    symlinkSync(join(outside, "secret.txt"), join(root, "secret-link.txt"));
    symlinkSync("inner", join(root, "inner-link"));
    return setup;
  }
  const linkedFolders = ["out", "src/out", "src/lib/out", "etc", "inner-link"];

  for (const link of linkedFolders) {
    test(`through ${link}: read, list, write, create, mkdir, move and delete are refused with 403`, async () => {
      const { root, outside, tree } = linkedTree();
      const inside = link === "etc" ? "etc/passwd" : link === "inner-link" ? "inner-link/kept.txt" : `${link}/secret.txt`;
      await expectCode(tree.read(inside), "SYMLINK_NOT_FOLLOWED", 403);
      await expectCode(tree.list(link), "SYMLINK_NOT_FOLLOWED");
      await expectCode(tree.list(`${link}/`), "SYMLINK_NOT_FOLLOWED");
      await expectCode(tree.write(inside, "pwned"), "SYMLINK_NOT_FOLLOWED");
      await expectCode(tree.write(`${link}/new.txt`, "pwned"), "SYMLINK_NOT_FOLLOWED");
      await expectCode(tree.create(`${link}/deeper/new.txt`, "pwned"), "SYMLINK_NOT_FOLLOWED");
      await expectCode(tree.mkdir(`${link}/made`), "SYMLINK_NOT_FOLLOWED");
      await expectCode(tree.move("index.js", `${link}/index.js`), "SYMLINK_NOT_FOLLOWED");
      await expectCode(tree.move(inside, "stolen.txt"), "SYMLINK_NOT_FOLLOWED");
      await expectCode(tree.remove(inside), "SYMLINK_NOT_FOLLOWED");
      await expectCode(tree.walk(link, 100), "SYMLINK_NOT_FOLLOWED");
      expect(await tree.applyRenames([{ from: inside, to: "stolen.txt", overwrite: true }])).toEqual([
        { from: inside, to: "stolen.txt", result: "failed", reason: expect.stringContaining("symbolic link") },
      ]);
      outsideUntouched(outside);
      expect(readFileSync(join(root, "inner/kept.txt"), "utf8")).toBe("kept");
      expect(existsSync(join(root, "stolen.txt"))).toBe(false);
    });
  }

  test("a link to a file is neither read nor written through, and a save does not replace it", async () => {
    const { root, outside, tree } = linkedTree();
    await expectCode(tree.read("secret-link.txt"), "SYMLINK_NOT_FOLLOWED");
    await expectCode(tree.write("secret-link.txt", "pwned"), "SYMLINK_NOT_FOLLOWED");
    await expectCode(tree.create("secret-link.txt", "pwned"), "FILE_EXISTS");
    expect(lstatSync(join(root, "secret-link.txt")).isSymbolicLink()).toBe(true);
    outsideUntouched(outside);
  });

  test("links are listed as links, and deleting or moving one acts on the link only", async () => {
    const { root, outside, tree } = linkedTree();
    const listed = await tree.list("");
    expect(listed.filter((entry) => entry.type === "symlink").map((entry) => entry.name)).toEqual(["etc", "inner-link", "out", "secret-link.txt"]);
    expect(await tree.move("out", "src/moved-link")).toEqual({ from: "out", to: "src/moved-link" });
    expect(lstatSync(join(root, "src/moved-link")).isSymbolicLink()).toBe(true);
    expect(await tree.remove("src/moved-link")).toEqual({ path: "src/moved-link", type: "symlink" });
    expect(await tree.remove("secret-link.txt")).toEqual({ path: "secret-link.txt", type: "symlink" });
    expect(await tree.remove("inner-link")).toEqual({ path: "inner-link", type: "symlink" });
    outsideUntouched(outside);
    expect(readFileSync(join(root, "inner/kept.txt"), "utf8")).toBe("kept");
  });

  test("deleting a folder that holds links deletes the links, not what they point to", async () => {
    const { root, outside, tree } = linkedTree();
    await tree.remove("src");
    expect(existsSync(join(root, "src"))).toBe(false);
    outsideUntouched(outside);
    expect(readdirSync("/etc").length).toBeGreaterThan(0);
  });

  test("the walk lists links as names without going into them", async () => {
    const { tree } = linkedTree();
    const walked = await tree.walk("", 100);
    expect(walked.map((entry) => entry.path)).not.toContain("out/secret.txt");
    expect(walked.some((entry) => entry.path.startsWith("etc/"))).toBe(false);
    expect(walked).toContainEqual({ path: "src/lib/out", type: "file" });
    expect(walked).toContainEqual({ path: "inner-link", type: "file" });
  });

  test("the ZIP leaves links out", async () => {
    const { tree } = linkedTree();
    const names = Object.keys(unzipSync(await new Response(tree.zip()).bytes()));
    expect(names.sort()).toEqual(["index.js", "inner/", "inner/kept.txt", "src/", "src/lib/", "src/lib/util.js"]);
  });
});

describe("list", () => {
  test("folders first, then files by name, with sizes and times", async () => {
    const { root, tree } = setUp({ "b.txt": "hello", "a.txt": "", "zeta/x": "", "alpha/y": "" });
    utimesSync(join(root, "b.txt"), new Date("2024-05-01T10:00:00Z"), new Date("2024-05-01T10:00:00Z"));
    const listed = await tree.list();
    expect(listed.map((entry) => [entry.name, entry.type, entry.size])).toEqual([
      ["alpha", "dir", 0],
      ["zeta", "dir", 0],
      ["a.txt", "file", 0],
      ["b.txt", "file", 5],
    ]);
    expect(listed.find((entry) => entry.name === "b.txt")!.modifiedAt).toBe("2024-05-01T10:00:00.000Z");
    expect((await tree.list("alpha/"))).toEqual([expect.objectContaining({ name: "y", path: "alpha/y", type: "file" })]);
  });

  test("a file or a missing folder is refused", async () => {
    const { tree } = setUp({ "a.txt": "" });
    await expectCode(tree.list("a.txt"), "NOT_A_DIRECTORY", 409);
    await expectCode(tree.list("missing"), "NOT_FOUND", 404);
    await expectCode(tree.list("a.txt/x"), "NOT_A_DIRECTORY");
  });

  test(`a folder of more than ${MAX_FOLDER_ENTRIES} entries answers TOO_MANY_ENTRIES`, async () => {
    const { root, tree } = setUp();
    mkdirSync(join(root, "many"));
    for (let index = 0; index < MAX_FOLDER_ENTRIES; index++) writeFileSync(join(root, "many", `f${index}`), "");
    expect(await tree.list("many")).toHaveLength(MAX_FOLDER_ENTRIES);
    writeFileSync(join(root, "many", "one-more"), "");
    await expectCode(tree.list("many"), "TOO_MANY_ENTRIES", 400);
  });
});

describe("read", () => {
  test("text with its size, time and sha256 version", async () => {
    const { tree } = setUp({ "src/app.js": "console.log('héllo');\n" });
    const file = await tree.read("src/app.js");
    expect(file).toMatchObject({ path: "src/app.js", binary: false, content: "console.log('héllo');\n" });
    expect(file.size).toBe(Buffer.byteLength("console.log('héllo');\n"));
    expect(file.version).toBe(sha256("console.log('héllo');\n"));
    expect(Date.parse(file.modifiedAt)).toBeGreaterThan(0);
  });

  test("a byte-order mark is kept, so saving back changes nothing", async () => {
    const { tree } = setUp({ "bom.txt": "\uFEFFhi" });
    expect((await tree.read("bom.txt")).content).toBe("\uFEFFhi");
  });

  test("binary files say so: a NUL byte near the start, or bytes that are not UTF-8", async () => {
    const { root, tree } = setUp();
    writeFileSync(join(root, "image.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    writeFileSync(join(root, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    for (const path of ["image.png", "latin1.txt"]) {
      const file = await tree.read(path);
      expect(file).toMatchObject({ binary: true, content: null });
      expect(file.version).toBe(sha256(readFileSync(join(root, path))));
    }
  });

  test(`files over ${MAX_TEXT_FILE_BYTES} bytes answer 413 FILE_TOO_LARGE; one of exactly that size opens`, async () => {
    const { root, tree } = setUp();
    writeFileSync(join(root, "max.txt"), "a".repeat(MAX_TEXT_FILE_BYTES));
    writeFileSync(join(root, "big.txt"), "a".repeat(MAX_TEXT_FILE_BYTES + 1));
    expect((await tree.read("max.txt")).size).toBe(MAX_TEXT_FILE_BYTES);
    await expectCode(tree.read("big.txt"), "FILE_TOO_LARGE", 413);
  });

  test("a folder, a missing file and a special file are refused", async () => {
    const { root, tree } = setUp({ "src/a.js": "" });
    await expectCode(tree.read("src"), "NOT_A_FILE", 409);
    await expectCode(tree.read("src/missing.js"), "NOT_FOUND", 404);
    await expectCode(tree.read("missing/a.js"), "NOT_FOUND");
    Bun.spawnSync(["mkfifo", join(root, "pipe")]);
    await expectCode(tree.read("pipe"), "NOT_A_FILE");
  });
});

describe("write", () => {
  test("creates or replaces a file and answers the version a read gives", async () => {
    const { root, tree } = setUp({ "a.txt": "old" });
    const saved = await tree.write("a.txt", "new text");
    expect(saved).toMatchObject({ path: "a.txt", size: 8, version: sha256("new text") });
    expect((await tree.read("a.txt")).version).toBe(saved.version);
    expect((await tree.write("b.txt", "fresh")).version).toBe(sha256("fresh"));
    expect(readdirSync(root).sort()).toEqual(["a.txt", "b.txt"]); // no temp file left beside them
  });

  test("keeps the file's permissions (an executable script stays executable)", async () => {
    const { root, tree } = setUp({ "run.sh": "#!/bin/sh\n" });
    chmodSync(join(root, "run.sh"), 0o755);
    await tree.write("run.sh", "#!/bin/sh\necho hi\n");
    expect(statSync(join(root, "run.sh")).mode & 0o777).toBe(0o755);
  });

  test("with ifMatch: saved when the file is still that version, else 409 FILE_CHANGED and untouched", async () => {
    const { root, tree } = setUp({ "a.txt": "v1" });
    const opened = await tree.read("a.txt");
    const second = await tree.write("a.txt", "v2", opened.version);
    await expectCode(tree.write("a.txt", "v2 from a stale editor", opened.version), "FILE_CHANGED", 409);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("v2");
    await tree.write("a.txt", "v3", second.version);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("v3");
  });

  test("with ifMatch on a file deleted meanwhile: FILE_CHANGED, nothing made", async () => {
    const { root, tree } = setUp({ "a.txt": "v1" });
    const opened = await tree.read("a.txt");
    await tree.remove("a.txt");
    await expectCode(tree.write("a.txt", "again", opened.version), "FILE_CHANGED");
    expect(existsSync(join(root, "a.txt"))).toBe(false);
  });

  test("two editors saving from one version at once: one wins, the other gets FILE_CHANGED", async () => {
    const { root, tree } = setUp({ "a.txt": "v1" });
    const { version } = await tree.read("a.txt");
    const results = await Promise.allSettled([tree.write("a.txt", "first", version), tree.write("a.txt", "second", version)]);
    expect(results.map((result) => result.status).sort()).toEqual(["fulfilled", "rejected"]);
    const rejected = results.find((result) => result.status === "rejected") as PromiseRejectedResult;
    expect((rejected.reason as ApiError).code).toBe("FILE_CHANGED");
    expect(["first", "second"]).toContain(readFileSync(join(root, "a.txt"), "utf8"));
  });

  test("refusals: missing folder, a folder in the way, too large", async () => {
    const { root, tree } = setUp({ "src/a.js": "" });
    await expectCode(tree.write("lib/a.js", "x"), "NOT_FOUND");
    await expectCode(tree.write("src", "x"), "NOT_A_FILE");
    await expectCode(tree.write("big.txt", "é".repeat(MAX_TEXT_FILE_BYTES / 2 + 1)), "FILE_TOO_LARGE", 413);
    expect(readdirSync(root)).toEqual(["src"]);
    expect((await tree.write("max.txt", "a".repeat(MAX_TEXT_FILE_BYTES))).size).toBe(MAX_TEXT_FILE_BYTES);
  });
});

describe("create and mkdir", () => {
  test("create makes the file and its missing folders; empty by default", async () => {
    const { root, tree } = setUp();
    expect(await tree.create("src/routes/users.ts", "export {};\n")).toMatchObject({ path: "src/routes/users.ts", size: 11, version: sha256("export {};\n") });
    expect(readFileSync(join(root, "src/routes/users.ts"), "utf8")).toBe("export {};\n");
    expect((await tree.create(".env")).size).toBe(0);
    expect(readFileSync(join(root, ".env"), "utf8")).toBe("");
  });

  test("create answers 409 FILE_EXISTS for a file or a folder already there, and leaves it", async () => {
    const { root, tree } = setUp({ "a.txt": "kept", "src/x.js": "" });
    await expectCode(tree.create("a.txt", "new"), "FILE_EXISTS", 409);
    await expectCode(tree.create("src", "new"), "FILE_EXISTS");
    await expectCode(tree.create("a.txt/b.txt"), "NOT_A_DIRECTORY");
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("kept");
  });

  test("mkdir makes a folder with its parents; 409 when anything is there", async () => {
    const { root, tree } = setUp({ "a.txt": "" });
    expect(await tree.mkdir("assets/img/")).toBe("assets/img");
    expect(statSync(join(root, "assets/img")).isDirectory()).toBe(true);
    await expectCode(tree.mkdir("assets/img"), "FILE_EXISTS", 409);
    await expectCode(tree.mkdir("a.txt"), "FILE_EXISTS");
  });

  test("a disk that fills up part-way through the missing folders answers 507 and keeps none of them", async () => {
    // A tmpfs with room for one more inode besides its root and the app's root: the 1st missing folder is made, the 2nd is not.
    await onSmallTmpfs("size=1m,nr_inodes=3", async (mountPoint) => {
      const root = join(mountPoint, "source");
      mkdirSync(root);
      const tree = new AppTree(root);
      await expectCode(tree.create("a/b/c.txt", "text"), "INSUFFICIENT_STORAGE", 507);
      expect(readdirSync(root)).toEqual([]);
      await expectCode(tree.mkdir("x/y/z"), "INSUFFICIENT_STORAGE", 507);
      expect(readdirSync(root)).toEqual([]);
    });
  });
});

describe("a write that takes no byte", () => {
  test("fails the save (no error from the system, no endless retry) and leaves the file and the folder as they were", async () => {
    const { root, tree } = setUp({ "a.txt": "old" });
    const restore = await writesTakingNoByte();
    try {
      await expect(tree.write("a.txt", "new")).rejects.toThrow("took no byte");
    } finally {
      restore();
    }
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("old");
    expect(readdirSync(root)).toEqual(["a.txt"]);
  }, 5_000);
});

describe("writes a crash interrupted", () => {
  test("a save leaves no temp file, and the temp files a crash left are removed (a user's file of a like name stays)", async () => {
    const leftover = ".platform-write-0b6f2c1e-9a4d-4c55-8f6e-2d8e4b7a1c3f";
    const { root, tree } = setUp({ "a.txt": "old", [leftover]: "half", [`src/${leftover}`]: "half", ".platform-write-notes.txt": "mine" });
    await tree.write("a.txt", "new");
    await tree.create("src/b.txt", "b");
    expect(await tree.removeWriteLeftovers(100)).toBe(2);
    expect(readdirSync(root).sort()).toEqual([".platform-write-notes.txt", "a.txt", "src"]);
    expect(readdirSync(join(root, "src"))).toEqual(["b.txt"]);
  });

  test("the sweep looks at no more entries than it is given, and an app never deployed has nothing to sweep", async () => {
    const { root, tree } = setUp({ "a.txt": "", "b.txt": "", "z/.platform-write-0b6f2c1e-9a4d-4c55-8f6e-2d8e4b7a1c3f": "" });
    expect(await tree.removeWriteLeftovers(3)).toBe(0);
    expect(readdirSync(join(root, "z"))).toHaveLength(1);
    expect(await tree.removeWriteLeftovers(4)).toBe(1);
    expect(await new AppTree(join(root, "missing")).removeWriteLeftovers(10)).toBe(0);
  });
});

describe("move and remove", () => {
  test("move renames a file or moves a folder with its contents", async () => {
    const { root, tree } = setUp({ "a.txt": "a", "lib/x.js": "x", "dest/keep": "" });
    expect(await tree.move("a.txt", "b.txt")).toEqual({ from: "a.txt", to: "b.txt" });
    expect(await tree.move("lib/", "dest/lib")).toEqual({ from: "lib", to: "dest/lib" });
    expect(readFileSync(join(root, "b.txt"), "utf8")).toBe("a");
    expect(readFileSync(join(root, "dest/lib/x.js"), "utf8")).toBe("x");
    expect(readdirSync(root).sort()).toEqual(["b.txt", "dest"]);
  });

  test("refusals: target exists, folder into itself, missing source, missing target folder", async () => {
    const { root, tree } = setUp({ "a.txt": "a", "b.txt": "b", "lib/x.js": "x" });
    await expectCode(tree.move("a.txt", "b.txt"), "FILE_EXISTS", 409);
    await expectCode(tree.move("a.txt", "lib"), "FILE_EXISTS");
    await expectCode(tree.move("lib", "lib/inner"), "MOVE_INTO_ITSELF", 400);
    await expectCode(tree.move("missing.txt", "c.txt"), "NOT_FOUND");
    await expectCode(tree.move("a.txt", "nowhere/a.txt"), "NOT_FOUND");
    expect(readFileSync(join(root, "b.txt"), "utf8")).toBe("b");
    expect(readdirSync(root).sort()).toEqual(["a.txt", "b.txt", "lib"]);
  });

  test("a case-only rename works", async () => {
    const { root, tree } = setUp({ "readme.md": "r" });
    await tree.move("readme.md", "README.md");
    expect(readdirSync(root)).toEqual(["README.md"]);
  });

  test("remove deletes a file, or a folder with everything in it", async () => {
    const { root, tree } = setUp({ "a.txt": "", "src/deep/er/x.js": "", "keep.txt": "" });
    expect(await tree.remove("a.txt")).toEqual({ path: "a.txt", type: "file" });
    expect(await tree.remove("src")).toEqual({ path: "src", type: "dir" });
    expect(readdirSync(root)).toEqual(["keep.txt"]);
    await expectCode(tree.remove("a.txt"), "NOT_FOUND", 404);
  });
});

describe("walk", () => {
  test("every entry under the base folder, paths from the root, folders before their contents", async () => {
    const { tree } = setUp({ "src/b.js": "", "src/a/z.js": "", "src/c/y.js": "", "other.txt": "" });
    expect(await tree.walk("src", 100)).toEqual([
      { path: "src/a", type: "dir" },
      { path: "src/b.js", type: "file" },
      { path: "src/c", type: "dir" },
      { path: "src/a/z.js", type: "file" },
      { path: "src/c/y.js", type: "file" },
    ]);
    expect(await tree.walk("", 100)).toHaveLength(7);
  });

  test("more entries than the bound answers TOO_MANY_ENTRIES", async () => {
    const { tree } = setUp({ "a/1": "", "a/2": "", "a/3": "" });
    expect(await tree.walk("", 4)).toHaveLength(4);
    await expectCode(tree.walk("", 3), "TOO_MANY_ENTRIES", 400);
    await expectCode(tree.walk("a/1", 3), "NOT_A_DIRECTORY");
  });
});

describe("applyRenames", () => {
  test("runs in order, so a chain of renames through a free name swaps two files", async () => {
    const { root, tree } = setUp({ "a.txt": "A", "b.txt": "B" });
    const outcomes = await tree.applyRenames([
      { from: "a.txt", to: "swap.tmp", overwrite: false },
      { from: "b.txt", to: "a.txt", overwrite: false },
      { from: "swap.tmp", to: "b.txt", overwrite: false },
    ]);
    expect(outcomes.map((outcome) => outcome.result)).toEqual(["renamed", "renamed", "renamed"]);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("B");
    expect(readFileSync(join(root, "b.txt"), "utf8")).toBe("A");
  });

  test("without overwrite an existing target fails that step only; nothing is lost", async () => {
    const { root, tree } = setUp({ "a.txt": "A", "b.txt": "B", "c.txt": "C" });
    const outcomes = await tree.applyRenames([
      { from: "a.txt", to: "b.txt", overwrite: false },
      { from: "c.txt", to: "d.txt", overwrite: false },
    ]);
    expect(outcomes).toEqual([
      { from: "a.txt", to: "b.txt", result: "failed", reason: `"b.txt" already exists` },
      { from: "c.txt", to: "d.txt", result: "renamed" },
    ]);
    expect(readdirSync(root).sort()).toEqual(["a.txt", "b.txt", "d.txt"]);
  });

  test("overwrite replaces a file, an empty folder, or a file a folder is renamed onto", async () => {
    const { root, tree } = setUp({ "a.txt": "A", "b.txt": "B", "x/f.txt": "F", "y.txt": "Y", "c.txt": "C" });
    mkdirSync(join(root, "empty"));
    const outcomes = await tree.applyRenames([
      { from: "a.txt", to: "b.txt", overwrite: true },
      { from: "x", to: "y.txt", overwrite: true },
      { from: "c.txt", to: "empty", overwrite: true },
    ]);
    expect(outcomes.map((outcome) => outcome.result)).toEqual(["overwritten", "overwritten", "overwritten"]);
    expect(readFileSync(join(root, "b.txt"), "utf8")).toBe("A");
    expect(readFileSync(join(root, "y.txt/f.txt"), "utf8")).toBe("F");
    expect(readFileSync(join(root, "empty"), "utf8")).toBe("C");
    expect(readdirSync(root).sort()).toEqual(["b.txt", "empty", "y.txt"]);
  });

  test("overwrite never replaces a folder that holds anything", async () => {
    const { root, tree } = setUp({ "a.txt": "A", "full/keep.txt": "K" });
    expect(await tree.applyRenames([{ from: "a.txt", to: "full", overwrite: true }])).toEqual([
      { from: "a.txt", to: "full", result: "failed", reason: "a folder that is not empty is in the way" },
    ]);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("A");
    expect(readFileSync(join(root, "full/keep.txt"), "utf8")).toBe("K");
  });

  test("a vanished source, a hostile path or a folder into itself fail alone, without a server path in the reason", async () => {
    const { root, outside, tree } = setUp({ "a.txt": "A", "dir/x": "" });
    const outcomes = await tree.applyRenames([
      { from: "gone.txt", to: "new.txt", overwrite: false },
      { from: "a.txt", to: "../outside/a.txt", overwrite: true },
      { from: "dir", to: "dir/dir", overwrite: false },
      { from: "a.txt", to: "b.txt", overwrite: false },
    ]);
    expect(outcomes.map((outcome) => outcome.result)).toEqual(["failed", "failed", "failed", "renamed"]);
    for (const outcome of outcomes) if (outcome.result === "failed") expect(outcome.reason).not.toContain(root);
    expect(readdirSync(root).sort()).toEqual(["b.txt", "dir"]);
    outsideUntouched(outside);
  });

  test("a case-only rename is a rename, not a conflict", async () => {
    const { root, tree } = setUp({ "Photo.JPG": "p" });
    expect(await tree.applyRenames([{ from: "Photo.JPG", to: "Photo.jpg", overwrite: false }])).toEqual([
      { from: "Photo.JPG", to: "Photo.jpg", result: "renamed" },
    ]);
    expect(readdirSync(root)).toEqual(["Photo.jpg"]);
  });
});

describe("zip", () => {
  test("holds every file with its bytes, every folder (empty ones too), and the executable bit", async () => {
    const { root, tree } = setUp({ "index.js": "console.log(1)", "src/ünï 日本.txt": "unicode", "src/nested/deep.txt": "deep" });
    writeFileSync(join(root, "bin.dat"), new Uint8Array(300_000).map((_, index) => (index * 7919) % 256));
    writeFileSync(join(root, "run.sh"), "#!/bin/sh\n");
    chmodSync(join(root, "run.sh"), 0o755);
    mkdirSync(join(root, "empty"));
    utimesSync(join(root, "index.js"), new Date(0), new Date(0)); // before 1980: ZIP dates cannot hold it

    const zipped = await new Response(tree.zip()).bytes();
    const unzipped = unzipSync(zipped);
    expect(Object.keys(unzipped).sort()).toEqual(["bin.dat", "empty/", "index.js", "run.sh", "src/", "src/nested/", "src/nested/deep.txt", "src/ünï 日本.txt"]);
    for (const path of ["bin.dat", "index.js", "run.sh", "src/nested/deep.txt", "src/ünï 日本.txt"]) {
      expect(sha256(unzipped[path]!)).toBe(sha256(readFileSync(join(root, path))));
    }

    const zipFile = join(tempDir(), "download.zip");
    writeFileSync(zipFile, zipped);
    const contents = await inspectZip(zipFile, { maxArchiveEntries: 100, maxUncompressedBytes: 10_000_000 });
    expect(contents.entries.find((entry) => entry.path === "run.sh")!.executable).toBe(true);
    expect(contents.entries.find((entry) => entry.path === "index.js")!.executable).toBe(false);
  });

  test("an empty tree makes an empty ZIP", async () => {
    const { tree } = setUp();
    expect(unzipSync(await new Response(tree.zip()).bytes())).toEqual({});
  });
});
