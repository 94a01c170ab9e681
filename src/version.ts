// The platform's version, taken from package.json at build time so the binary carries it.
import packageJson from "../package.json" with { type: "json" };

export const PLATFORM_VERSION: string = packageJson.version;
