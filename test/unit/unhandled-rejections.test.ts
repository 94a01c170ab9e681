// The net of src/unhandled-rejections.ts, in a process of its own as `platform serve` installs it:
// a background promise that rejects with nobody waiting is logged with its stack, and the process
// keeps running (Bun's default ends it, and with it the API and the proxy).
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers/temp";

const MODULE = join(import.meta.dir, "../../src/unhandled-rejections.ts");

test("a rejected background promise is logged with its stack, and the process keeps running", async () => {
  const script = join(tempDir(), "background-failure.ts");
  writeFileSync(
    script,
    `import { keepServingOnUnhandledRejection } from ${JSON.stringify(MODULE)};
    keepServingOnUnhandledRejection();
    async function saveInBackground() { throw new Error("database or disk is full"); }
    void saveInBackground();
    setTimeout(() => console.log("still serving"), 100);`,
  );
  const child = Bun.spawn([process.execPath, script], { stdout: "pipe", stderr: "pipe" });
  const timeout = setTimeout(() => child.kill(), 10_000);
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  clearTimeout(timeout);
  expect(exitCode).toBe(0);
  expect(stdout).toBe("still serving\n");
  const lines = stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain("UNHANDLED REJECTION");
  expect(lines[0]).toContain("database or disk is full");
  expect(lines[0]).toContain("saveInBackground");
});
