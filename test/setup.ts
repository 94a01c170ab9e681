// Preloaded by `bun test` (bunfig.toml): points the platform's image settings at the locally
// built stand-in images (scripts/test-env.sh), unless the caller chose others.
const STAND_INS: Record<string, string> = {
  PLATFORM_IMAGE_NODE: "platform-test/node:latest",
  PLATFORM_IMAGE_BUN: "platform-test/bun:latest",
  PLATFORM_IMAGE_PYTHON: "platform-test/python:latest",
  PLATFORM_IMAGE_POSTGRESQL: "platform-test/postgresql:latest",
  PLATFORM_IMAGE_MYSQL: "platform-test/mysql:latest",
  PLATFORM_IMAGE_REDIS: "platform-test/redis:latest",
};
for (const [name, image] of Object.entries(STAND_INS)) process.env[name] ??= image;
