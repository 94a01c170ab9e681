// Builds the dashboard (static/ui, TypeScript and preact) into static/app.js, the one script
// index.html loads, and static/pages.css, the styles its modules import; prints what the page weighs. `bun run build` runs it before compiling the
// binary (which embeds static/); the test preload (test/setup.ts) runs it when static/ui changed.
import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const SOURCES = join(ROOT, "static/ui");
export const DASHBOARD_BUNDLE = join(ROOT, "static/app.js");
/** The styles the modules import (each area its own .css beside it), after static/app.css. */
const DASHBOARD_STYLES = join(ROOT, "static/pages.css");
/** What the shipped page may weigh, uncompressed (issue: under 300 KB). */
const MAX_PAGE_BYTES = 300 * 1024;

function newestSource(dir = SOURCES): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** The bundle is missing or older than a source. */
export function dashboardStale(): boolean {
  try {
    return statSync(DASHBOARD_BUNDLE).mtimeMs < newestSource();
  } catch {
    return true;
  }
}

export async function buildDashboard(): Promise<number> {
  const result = await Bun.build({
    entrypoints: [join(SOURCES, "main.tsx")],
    minify: true,
    target: "browser",
    format: "esm",
    sourcemap: "none",
  });
  if (!result.success) throw new AggregateError(result.logs, "the dashboard does not build");
  const script = result.outputs.find((output) => output.kind === "entry-point");
  const styles = result.outputs.filter((output) => output.path.endsWith(".css"));
  if (!script) throw new Error("the dashboard build made no script");
  await Bun.write(DASHBOARD_BUNDLE, script);
  await Bun.write(DASHBOARD_STYLES, (await Promise.all(styles.map((output) => output.text()))).join("\n"));
  const pageBytes = ["static/index.html", "static/app.css", "static/app.js", "static/pages.css"].reduce((sum, file) => sum + statSync(join(ROOT, file)).size, 0);
  if (pageBytes > MAX_PAGE_BYTES) throw new Error(`the dashboard weighs ${pageBytes} bytes, over ${MAX_PAGE_BYTES}`);
  return pageBytes;
}

if (import.meta.main) {
  const bytes = await buildDashboard();
  console.log(`built static/app.js: the dashboard page weighs ${(bytes / 1024).toFixed(1)} KB uncompressed (limit ${MAX_PAGE_BYTES / 1024} KB)`);
}
