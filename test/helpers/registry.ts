// A real image registry on loopback for the image-deploy tests: Debian's docker-registry (Docker's
// distribution 2.8) run as a process with a config, htpasswd file (bcrypt) and storage in a temp
// dir, on 127.0.0.1:<free port> (the engine treats 127.0.0.0/8 registries as insecure: plain HTTP).
// Test images are tiny: busybox-static in a folder, `docker import`ed, tagged for the registry,
// pushed with a docker CLI config of their own (the host's ~/.docker is never touched), and their
// local names removed again. scripts/test-env.sh installs both packages.
import { spawn, spawnSync, type Subprocess } from "bun";
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { freePort } from "./ports";
import { tempDir } from "./temp";

const REGISTRY_BINARY = "/usr/bin/docker-registry";
const BUSYBOX = "/bin/busybox";

export interface TestRegistry {
  /** `127.0.0.1:PORT`, as image references name it. */
  host: string;
  /** Makes a tiny web image (busybox httpd serving `text` at / on $PORT) and pushes it as `host/<repository>:<tag>`; answers the pushed digest. */
  pushWebImage(repository: string, tag: string, options?: { text?: string; labels?: Record<string, string>; padBytes?: number; padRandom?: boolean; changes?: string[] }): Promise<string>;
  stop(): Promise<void>;
}

function run(command: string[], env: Record<string, string> = {}, stdin?: string): string {
  const result = spawnSync(command, { env: { ...process.env, ...env }, stdin: stdin === undefined ? "ignore" : Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`${command.join(" ")} failed: ${result.stderr.toString().trim()}`);
  return result.stdout.toString();
}

/** Starts a registry that asks for `user`'s password (bcrypt in htpasswd); with `user` omitted, open to all. */
export async function startRegistry(user?: { name: string; password: string }): Promise<TestRegistry> {
  const dir = tempDir("platform-registry-");
  const port = freePort();
  const host = `127.0.0.1:${port}`;
  const auth = user ? `auth:\n  htpasswd:\n    realm: platform-test\n    path: ${join(dir, "htpasswd")}\n` : "";
  if (user) writeFileSync(join(dir, "htpasswd"), `${user.name}:${await Bun.password.hash(user.password, { algorithm: "bcrypt", cost: 4 })}\n`);
  writeFileSync(
    join(dir, "config.yml"),
    `version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, "data")}\n  delete:\n    enabled: true\n` +
      `http:\n  addr: ${host}\n  secret: platform-test-${port}\n${auth}`,
  );
  const child: Subprocess = spawn([REGISTRY_BINARY, "serve", join(dir, "config.yml")], { stdout: "ignore", stderr: "pipe", stdin: "ignore" });
  for (const deadline = Date.now() + 10_000; ; ) {
    const answer = await fetch(`http://${host}/v2/`).catch(() => null);
    if (answer) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`docker-registry did not start on ${host}`);
    await Bun.sleep(50);
  }
  // A docker CLI config of its own: the login stays in the temp dir.
  const dockerConfig = { DOCKER_CONFIG: join(dir, "docker-config") };
  mkdirSync(dockerConfig.DOCKER_CONFIG);
  if (user) run(["docker", "login", "-u", user.name, "--password-stdin", host], dockerConfig, user.password);
  let images = 0;

  return {
    host,
    async pushWebImage(repository, tag, options = {}) {
      const root = join(dir, `image-${++images}`);
      mkdirSync(join(root, "bin"), { recursive: true });
      mkdirSync(join(root, "www"));
      cpSync(BUSYBOX, join(root, "bin", "busybox"));
      symlinkSync("busybox", join(root, "bin", "sh"));
      writeFileSync(join(root, "www", "index.html"), options.text ?? `${repository}:${tag}`);
      // Random padding does not compress: the layer takes as much to download as to unpack.
      if (options.padBytes) writeFileSync(join(root, "pad"), options.padRandom ? randomBytes(options.padBytes) : Buffer.alloc(options.padBytes, 1));
      const name = `${host}/${repository}:${tag}`;
      const changes = [
        `CMD ["/bin/sh", "-c", "exec /bin/busybox httpd -f -p \${PORT:-8080} -h /www"]`,
        ...Object.entries(options.labels ?? {}).map(([label, value]) => `LABEL ${label}=${value}`),
        ...(options.changes ?? []),
      ].flatMap((change) => ["--change", change]);
      const tar = spawnSync(["tar", "-C", root, "-c", "."], { stdout: "pipe" });
      const imported = spawnSync(["docker", "import", ...changes, "-", name], { stdin: tar.stdout, stdout: "pipe", stderr: "pipe" });
      if (imported.exitCode !== 0) throw new Error(`docker import failed: ${imported.stderr.toString()}`);
      try {
        const pushed = run(["docker", "push", name], dockerConfig);
        const digest = /digest: (sha256:[0-9a-f]{64})/.exec(pushed)?.[1];
        if (!digest) throw new Error(`no digest in docker push's output: ${pushed}`);
        return digest;
      } finally {
        spawnSync(["docker", "rmi", name], { stdout: "ignore", stderr: "ignore" });
      }
    },
    async stop() {
      child.kill();
      await child.exited;
    },
  };
}

/** Removes every image the engine holds from `host` (the pulls a test made), by name. */
export function removeImagesFrom(host: string) {
  const listed = spawnSync(["docker", "images", "--digests", "--format", "{{.Repository}}:{{.Tag}} {{.Repository}}@{{.Digest}}"], { stdout: "pipe" }).stdout.toString();
  const names = listed.split(/\s+/).filter((name) => name.startsWith(`${host}/`) && !name.endsWith(":<none>") && !name.endsWith("@<none>"));
  if (names.length) spawnSync(["docker", "rmi", ...names], { stdout: "ignore", stderr: "ignore" });
}
