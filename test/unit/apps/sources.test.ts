// App storage on disk: trees leave their place at once and are deleted off the event loop, a
// restart's leftovers are found and removed, and the source walk skips what a build never needs.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AppStorage, contextEntries, sourceFiles } from "../../../src/apps/sources";
import { tempDir } from "../../helpers/temp";

function tree(root: string, files: Record<string, string>) {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

describe("AppStorage", () => {
  test("removeApp: the app's folder is gone before the promise settles, its files once it has", async () => {
    const dataDir = tempDir();
    const storage = new AppStorage(dataDir);
    tree(storage.sourceDir("app_1"), { "index.js": "x", "deep/a/b/c.js": "y" });
    const removal = storage.removeApp("app_1");
    expect(existsSync(storage.appDir("app_1"))).toBe(false);
    await removal;
    expect(readdirSync(join(dataDir, "trash"))).toEqual([]);
    await storage.removeApp("app_never_made"); // nothing to remove is no error
  });

  test("replaceSource swaps the tree at once and deletes the old one in the background", async () => {
    const dataDir = tempDir();
    const storage = new AppStorage(dataDir);
    tree(storage.sourceDir("app_1"), { "old.js": "old" });
    const upload = join(storage.uploadsDir(), "staging-1");
    tree(upload, { "new.js": "new" });
    storage.replaceSource("app_1", upload);
    expect(readdirSync(storage.sourceDir("app_1"))).toEqual(["new.js"]);
    for (let attempt = 0; attempt < 100 && readdirSync(join(dataDir, "trash")).length > 0; attempt++) await Bun.sleep(10);
    expect(readdirSync(join(dataDir, "trash"))).toEqual([]);
  });

  test("removeLeftoverUploads removes uploads, pending trees, old sources and trash a restart left", async () => {
    const dataDir = tempDir();
    tree(dataDir, {
      "uploads/staging-1/a/b/c.js": "",
      "uploads/1.zip": "",
      "apps/app_1/source/index.js": "kept",
      "apps/app_1/builds/bld_1.log": "kept",
      "apps/app_1/pending/bld_2/index.js": "",
      "apps/app_1/source.old-1234/index.js": "",
      "trash/0000/a/b/c.js": "",
    });
    await new AppStorage(dataDir).removeLeftoverUploads();
    expect(readdirSync(dataDir).sort()).toEqual(["apps", "trash"]);
    expect(readdirSync(join(dataDir, "apps/app_1")).sort()).toEqual(["builds", "source"]);
    expect(readdirSync(join(dataDir, "trash"))).toEqual([]);
  });
});

describe("the source walk", () => {
  test("lists regular files only, skips dependency folders and does not follow symlinks", async () => {
    const root = tempDir();
    tree(root, { "package.json": "{}", "src/index.js": "x", "node_modules/dep/index.js": "", ".git/HEAD": "", "bin/run": "#!/bin/sh" });
    symlinkSync("/etc", join(root, "etc-link"));
    symlinkSync("/etc/hostname", join(root, "hostname-link"));
    const files = await sourceFiles(root);
    expect([...files.paths].sort()).toEqual(["bin/run", "package.json", "src/index.js"]);
    expect(files.read("package.json")).toBe("{}");
    expect(files.read("etc-link/passwd")).toBeUndefined();

    const entries = [];
    for await (const entry of contextEntries(root, { ".platform/Dockerfile": "FROM x" })) entries.push(entry.path);
    expect(entries.sort()).toEqual([".platform/Dockerfile", "bin/run", "package.json", "src/index.js"]);
  });
});
