// Temporary folders for tests, removed after the last test (test/setup.ts registers that: bun
// test fires neither "exit" nor "beforeExit").
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { open, type FileHandle } from "node:fs/promises";
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

/** Runs `work` on a fresh tmpfs limited by `options` (e.g. "size=8k,nr_inodes=3": a disk that fills up), unmounted after. Needs root. */
export async function onSmallTmpfs<T>(options: string, work: (mountPoint: string) => Promise<T> | T): Promise<T> {
  const mountPoint = tempDir("platform-tmpfs-");
  const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", options, "tmpfs", mountPoint], { stderr: "pipe" });
  if (mounted.exitCode !== 0) throw new Error(`mount failed: ${mounted.stderr.toString()}`);
  try {
    return await work(mountPoint);
  } finally {
    Bun.spawnSync(["umount", mountPoint]);
  }
}

/** Makes every FileHandle write (and writev) take no byte and raise no error, until the returned restore is called. */
export async function writesTakingNoByte(): Promise<() => void> {
  const handle = await open(join(tempDir(), "probe"), "w");
  const prototype = Object.getPrototypeOf(handle) as FileHandle;
  await handle.close();
  const { write, writev } = prototype;
  // Each answer after a timer tick, as the system's would be: a caller asking forever does not starve the test's timeout.
  const noByte = async () => {
    await Bun.sleep(1);
    return { bytesWritten: 0 };
  };
  prototype.write = noByte as never;
  prototype.writev = noByte as never;
  return () => Object.assign(prototype, { write, writev });
}
