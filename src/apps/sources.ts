// Where an app's files live on the platform's side: its kept source tree (what builds are made
// from, and what later file edits change) and its build logs, under <data>/apps/<appId>/.
// Trees are never walked or deleted synchronously: an upload may hold 20,000 folders, and a
// synchronous rm of such a tree stalled every tenant's API and proxy for seconds.
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync } from "node:fs";
import { lstat, readdir, rm } from "node:fs/promises";
import { join, relative } from "node:path";
import type { AppFiles } from "./detect";
import type { TarEntry } from "../docker/tar";

/** Never part of a build context: dependencies are installed by the build itself. */
const CONTEXT_EXCLUDES = new Set(["node_modules", ".git", ".dockerignore", ".platform", "__pycache__", ".venv"]);
const MAX_READ_BYTES = 1024 * 1024;

export class AppStorage {
  /** Names in <data>/trash this process is deleting now. */
  private readonly beingDeleted = new Set<string>();

  constructor(private readonly dataDir: string) {}

  appDir(appId: string) {
    return join(this.dataDir, "apps", appId);
  }

  sourceDir(appId: string) {
    return join(this.appDir(appId), "source");
  }

  buildLogsDir(appId: string) {
    return join(this.appDir(appId), "builds");
  }

  buildLogFile(appId: string, buildId: string) {
    return join(this.buildLogsDir(appId), `${buildId}.log`);
  }

  /**
   * A fresh path in the uploads folder to extract an upload into. Nothing is made under apps/
   * until the upload is accepted (replaceSource), so a refused one leaves no folder behind.
   */
  stagingDir() {
    return join(this.uploadsDir(), `staging-${crypto.randomUUID()}`);
  }

  uploadsDir() {
    const dir = join(this.dataDir, "uploads");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  /** Moves an accepted upload beside the app's files until its build makes it the source tree. */
  keepForBuild(appId: string, buildId: string, extractedDir: string): string {
    const pending = join(this.appDir(appId), "pending", buildId);
    mkdirSync(join(this.appDir(appId), "pending"), { recursive: true, mode: 0o700 });
    mkdirSync(join(this.appDir(appId), "builds"), { recursive: true, mode: 0o700 });
    renameSync(extractedDir, pending);
    return pending;
  }

  /**
   * Makes an extracted upload the app's source tree. The old tree is moved away at once and
   * deleted in the background (see `discard`).
   */
  replaceSource(appId: string, extractedDir: string) {
    mkdirSync(join(this.appDir(appId), "builds"), { recursive: true, mode: 0o700 });
    const target = this.sourceDir(appId);
    void this.discard(target);
    renameSync(extractedDir, target);
  }

  /**
   * Uploads and extractions a restart cut short (nothing in them is referenced any more), and
   * trees whose deletion it cut short. They are moved away at once, as a synchronous delete did,
   * so a request arriving meanwhile never loses a fresh upload; the deleting runs off the thread.
   */
  async removeLeftoverUploads() {
    const trashDir = join(this.dataDir, "trash");
    const leftovers = existsSync(trashDir) ? readdirSync(trashDir).filter((name) => !this.beingDeleted.has(name)) : [];
    const removals = leftovers.map((name) => removeTree(join(trashDir, name)));
    removals.push(this.discard(join(this.dataDir, "uploads")));
    const appsDir = join(this.dataDir, "apps");
    for (const appId of existsSync(appsDir) ? readdirSync(appsDir) : []) {
      removals.push(this.discard(join(appsDir, appId, "pending")));
      for (const entry of readdirSync(join(appsDir, appId))) {
        // Old source trees that versions before the trash folder kept beside the new one.
        if (entry.startsWith("source.old-")) removals.push(this.discard(join(appsDir, appId, entry)));
      }
    }
    await Promise.all(removals);
  }

  /** The app's folder is gone when this is called; its files are deleted by the time it settles. */
  removeApp(appId: string): Promise<void> {
    return this.discard(this.appDir(appId));
  }

  /**
   * Removes a tree without holding up the server: it is renamed into <data>/trash at once
   * (synchronously: nothing reaches it by its old path afterwards; a failed rename throws), then
   * deleted with the promise-based rm, which works on the thread pool. A deletion a restart cuts
   * short is finished at the next start. The promise never rejects: a failure leaves trash behind.
   */
  discard(path: string): Promise<void> {
    if (!existsSync(path)) return Promise.resolve();
    const trashDir = join(this.dataDir, "trash");
    mkdirSync(trashDir, { recursive: true, mode: 0o700 });
    const name = crypto.randomUUID();
    try {
      renameSync(path, join(trashDir, name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return Promise.resolve();
      throw error;
    }
    this.beingDeleted.add(name);
    return removeTree(join(trashDir, name)).finally(() => this.beingDeleted.delete(name));
  }
}

async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
  } catch (error) {
    console.warn(`[apps] could not delete ${path} (it is retried at the next start): ${(error as Error).message}`);
  }
}

/** Every regular file of a tree, relative paths with forward slashes, skipping excluded folders. Symlinks are not followed. */
async function* walk(root: string, dir = root): AsyncGenerator<{ path: string; absolute: string }> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (CONTEXT_EXCLUDES.has(entry.name)) continue;
    const absolute = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(root, absolute);
    else if (entry.isFile()) yield { path: relative(root, absolute).split("\\").join("/"), absolute };
  }
}

/** The tree's file list for detection; `read` reads one small file (package.json...) when asked. */
export async function sourceFiles(sourceDir: string): Promise<AppFiles> {
  const paths = new Set<string>();
  for await (const file of walk(sourceDir)) paths.add(file.path);
  return {
    paths,
    read(path) {
      if (!paths.has(path)) return undefined;
      const absolute = join(sourceDir, path);
      if (lstatSync(absolute).size > MAX_READ_BYTES) return undefined;
      return readFileSync(absolute, "utf8");
    },
  };
}

/**
 * The build context: the source tree (minus excluded folders, and the files `excluded` answers true
 * for, e.g. by the app's .dockerignore) plus the platform's own files.
 */
export async function* contextEntries(
  sourceDir: string,
  platformFiles: Record<string, string>,
  excluded: (path: string) => boolean = () => false,
): AsyncGenerator<TarEntry> {
  for await (const file of walk(sourceDir)) {
    if (excluded(file.path)) continue;
    const { size, mode } = await lstat(file.absolute);
    yield { path: file.path, mode: mode & 0o111 ? 0o755 : 0o644, content: { file: file.absolute, size } };
  }
  for (const [path, text] of Object.entries(platformFiles)) {
    yield { path, mode: 0o644, content: new TextEncoder().encode(text) };
  }
}
