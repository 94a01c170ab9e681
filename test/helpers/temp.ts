// Temporary folders for tests, removed after the last test (test/setup.ts registers that: bun
// test fires neither "exit" nor "beforeExit").
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

/** The folders made so far (the teardown reads the test servers' data dirs among them). */
export function madeTempDirs(): string[] {
  return [...made];
}

export function removeTempDirs() {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function tempDir(prefix = "platform-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
