// Docker helpers for tests: the real local engine, a driver on it, and the `docker` CLI as an
// independent witness of what the platform did.
import { DockerDriver } from "../../src/docker/driver";
import { loadConfig } from "../../src/config";

export const config = loadConfig();

export function localDriver(): DockerDriver {
  return new DockerDriver("local", { host: config.dockerHost });
}

/** What a docker CLI command printed; it fails with the command's stderr. */
export async function dockerCli(...args: string[]): Promise<string> {
  const child = Bun.spawn(["docker", ...args], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(`docker ${args.join(" ")} failed: ${stderr}`);
  return stdout;
}

/**
 * A docker command that prints JSON (the inspect commands), parsed. Kept apart from dockerCli: a
 * short ID such as "123456e78901" is a valid JSON number, so guessing the format loses IDs.
 */
export async function dockerJson(...args: string[]): Promise<any> {
  return JSON.parse(await dockerCli(...args));
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
}
