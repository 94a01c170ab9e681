// Where an app's files live on the platform's side: its kept source tree (what builds are made
// from, and what later file edits change) and its build logs, under <data>/apps/<appId>/.
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import type { AppFiles } from "./detect";
import type { TarEntry } from "../docker/tar";

/** Never part of a build context: dependencies are installed by the build itself. */
const CONTEXT_EXCLUDES = new Set(["node_modules", ".git", ".dockerignore", ".platform", "__pycache__", ".venv"]);
const MAX_READ_BYTES = 1024 * 1024;

export class AppStorage {
  constructor(private readonly dataDir: string) {}

  appDir(appId: string) {
    return join(this.dataDir, "apps", appId);
  }

  sourceDir(appId: string) {
    return join(this.appDir(appId), "source");
  }

  buildLogFile(appId: string, buildId: string) {
    return join(this.appDir(appId), "builds", `${buildId}.log`);
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

  /** Makes an extracted upload the app's source tree (the old tree is removed). */
  replaceSource(appId: string, extractedDir: string) {
    mkdirSync(join(this.appDir(appId), "builds"), { recursive: true, mode: 0o700 });
    const target = this.sourceDir(appId);
    const old = `${target}.old-${crypto.randomUUID()}`;
    if (existsSync(target)) renameSync(target, old);
    renameSync(extractedDir, target);
    rmSync(old, { recursive: true, force: true });
  }

  /** Uploads and extractions a restart cut short; nothing in them is referenced any more. */
  removeLeftoverUploads() {
    rmSync(join(this.dataDir, "uploads"), { recursive: true, force: true });
    const appsDir = join(this.dataDir, "apps");
    if (!existsSync(appsDir)) return;
    for (const appId of readdirSync(appsDir)) {
      rmSync(join(appsDir, appId, "pending"), { recursive: true, force: true });
      for (const entry of readdirSync(join(appsDir, appId))) {
        if (entry.startsWith("source.old-")) rmSync(join(appsDir, appId, entry), { recursive: true, force: true });
      }
    }
  }

  removeApp(appId: string) {
    rmSync(this.appDir(appId), { recursive: true, force: true });
  }
}

/** Every regular file of a tree, relative paths with forward slashes, skipping excluded folders. */
function* walk(root: string, dir = root): Generator<{ path: string; absolute: string; size: number; mode: number }> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (CONTEXT_EXCLUDES.has(entry.name)) continue;
    const absolute = join(dir, entry.name);
    const stat = lstatSync(absolute);
    if (stat.isDirectory()) yield* walk(root, absolute);
    else if (stat.isFile()) yield { path: relative(root, absolute).split("\\").join("/"), absolute, size: stat.size, mode: stat.mode };
  }
}

export function sourceFiles(sourceDir: string): AppFiles {
  const paths = new Set<string>();
  for (const file of walk(sourceDir)) paths.add(file.path);
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

/** The build context: the source tree (minus excluded folders) plus the platform's own files. */
export function* contextEntries(sourceDir: string, platformFiles: Record<string, string>): Generator<TarEntry> {
  for (const file of walk(sourceDir)) {
    yield { path: file.path, mode: file.mode & 0o111 ? 0o755 : 0o644, content: { file: file.absolute, size: file.size } };
  }
  for (const [path, text] of Object.entries(platformFiles)) {
    yield { path, mode: 0o644, content: new TextEncoder().encode(text) };
  }
}
