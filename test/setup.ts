// Preloaded by `bun test` (bunfig.toml): points the platform's image settings at the locally
// built stand-in images (scripts/test-env.sh), unless the caller chose others.
import { afterAll } from "bun:test";
import { existsSync } from "node:fs";
import { removeTempDirs } from "./helpers/temp";

afterAll(removeTempDirs);

// Workspace networks the run made are removed at the end (the engine refuses while one is in
// use): each holds one of the engine's ~30 address pools, and workspaces of tests are many.
const networksBefore = new Set(platformNetworks());
afterAll(() => {
  const made = platformNetworks().filter((network) => !networksBefore.has(network));
  if (made.length) Bun.spawnSync(["docker", "network", "rm", ...made], { stdout: "ignore", stderr: "ignore" });
});

function platformNetworks(): string[] {
  const listed = Bun.spawnSync(["docker", "network", "ls", "-q", "--filter", "label=platform.managed=true"], { stderr: "ignore" });
  return listed.exitCode === 0 ? listed.stdout.toString().split("\n").filter(Boolean) : [];
}

const STAND_INS: Record<string, string> = {
  PLATFORM_IMAGE_NODE: "platform-test/node:latest",
  PLATFORM_IMAGE_BUN: "platform-test/bun:latest",
  PLATFORM_IMAGE_PYTHON: "platform-test/python:latest",
  PLATFORM_IMAGE_POSTGRESQL: "platform-test/postgresql:latest",
  PLATFORM_IMAGE_MYSQL: "platform-test/mysql:latest",
  PLATFORM_IMAGE_REDIS: "platform-test/redis:latest",
};
for (const [name, image] of Object.entries(STAND_INS)) process.env[name] ??= image;

// Builds inside containers reach the npm registry through this machine's TLS-intercepting CA,
// exactly the corporate-proxy case PLATFORM_BUILD_CA_FILE and PLATFORM_BUILD_NPM_REGISTRY exist for.
const hostCaBundle = "/etc/ssl/certs/ca-certificates.crt";
if (existsSync(hostCaBundle)) process.env.PLATFORM_BUILD_CA_FILE ??= hostCaBundle;
if (!process.env.PLATFORM_BUILD_NPM_REGISTRY) {
  const registry = Bun.spawnSync(["npm", "config", "get", "registry"], { stderr: "ignore" }).stdout.toString().trim();
  if (registry.startsWith("http")) process.env.PLATFORM_BUILD_NPM_REGISTRY = registry;
}
