// Points the platform's image settings at the locally built stand-in images
// (scripts/test-env.sh) and gives builds this machine's CA bundle and npm registry, unless the
// caller chose others. Used by the test preload and by the benchmarks.
import { existsSync } from "node:fs";

const STAND_INS: Record<string, string> = {
  PLATFORM_IMAGE_NODE: "platform-test/node:latest",
  PLATFORM_IMAGE_BUN: "platform-test/bun:latest",
  PLATFORM_IMAGE_PYTHON: "platform-test/python:latest",
  PLATFORM_IMAGE_POSTGRESQL: "platform-test/postgresql:latest",
  PLATFORM_IMAGE_MYSQL: "platform-test/mysql:latest",
  PLATFORM_IMAGE_REDIS: "platform-test/redis:latest",
};

export function useStandInImages(env: Record<string, string | undefined> = process.env) {
  for (const [name, image] of Object.entries(STAND_INS)) env[name] ??= image;
  // Builds inside containers reach the npm registry through this machine's TLS-intercepting CA,
  // exactly the corporate-proxy case PLATFORM_BUILD_CA_FILE and PLATFORM_BUILD_NPM_REGISTRY exist for.
  const hostCaBundle = "/etc/ssl/certs/ca-certificates.crt";
  if (existsSync(hostCaBundle)) env.PLATFORM_BUILD_CA_FILE ??= hostCaBundle;
  if (!env.PLATFORM_BUILD_NPM_REGISTRY) {
    const registry = Bun.spawnSync(["npm", "config", "get", "registry"], { stderr: "ignore" }).stdout.toString().trim();
    if (registry.startsWith("http")) env.PLATFORM_BUILD_NPM_REGISTRY = registry;
  }
}
