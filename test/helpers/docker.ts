// Docker helpers for tests: the real local engine, a driver on it, and the `docker` CLI as an
// independent witness of what the platform did.
import { DockerDriver } from "../../src/docker/driver";
import { loadConfig } from "../../src/config";

export const config = loadConfig();

export function localDriver(): DockerDriver {
  return new DockerDriver("local", { host: config.dockerHost });
}

/** `docker inspect` (or any docker CLI command) parsed as JSON. */
export async function dockerCli(...args: string[]): Promise<any> {
  const child = Bun.spawn(["docker", ...args], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(`docker ${args.join(" ")} failed: ${stderr}`);
  try {
    return JSON.parse(stdout);
  } catch {
    return stdout;
  }
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
}
