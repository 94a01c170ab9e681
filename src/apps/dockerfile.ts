// What a build runs, and the Dockerfile of the app's image. Install and build steps run in a build
// container the platform makes itself (./builder.ts); its script and environment are made here.
// The image is then assembled by the engine's builder from a Dockerfile with no RUN step (no user
// code runs there) that copies only /app, so the build-time settings (CA bundle, registry, build
// arguments) never reach the app's image.
import type { Runtime } from "../config";
import type { BuildPlan } from "./detect";
import staticServerSource from "./static-server.mjs" with { type: "text" };
import { STATIC_SERVER_PATH } from "./detect";

/** Where the extra CA bundle is put in the build container: outside /app, so never in the image. */
export const BUILD_CA_PATH = "/usr/local/share/platform-build-ca.pem";
/** Public-by-design variables bundlers inline into client code, given to the build container only. */
export const BUILD_TIME_ENV_PREFIXES = ["VITE_", "NEXT_PUBLIC_"];

export interface BuildSettings {
  baseImage: string;
  runtime: Runtime;
  port: number;
  /** Content of an extra CA bundle for the build container (PLATFORM_BUILD_CA_FILE). */
  caBundle?: string;
  /** npm/bun registry for the build container (PLATFORM_BUILD_NPM_REGISTRY). */
  npmRegistry?: string;
  /** App variables given to the build container (BUILD_TIME_ENV_PREFIXES). */
  buildArgs?: Record<string, string>;
  /** Put on the image; the engine's `labels` option would add a build step per label. */
  labels?: Record<string, string>;
}

/** Plans without install or build steps need no build container: the image is made from the source directly. */
export const hasBuildSteps = (plan: BuildPlan) => plan.installCommands.length + plan.buildCommands.length > 0;

/** The build container's `sh -c` script: each step is echoed as it starts (`+ npm install`), the first failure ends it. */
export function buildScript(plan: BuildPlan, runtime: Runtime): string {
  const lines = ["set -ex"];
  if (runtime === "python" && plan.installCommands.length > 0) {
    // A virtualenv inside /app keeps installed packages in what the image copies.
    lines.push("python -m venv /app/.venv", 'export PATH="/app/.venv/bin:$PATH"');
  }
  lines.push(...plan.installCommands, ...plan.buildCommands);
  return `${lines.join("\n")}\n`;
}

/** Environment of the build container: CA bundle, registry and the public build-time variables. */
export function buildEnv(settings: BuildSettings): Record<string, string> {
  const env: Record<string, string> = {};
  if (settings.caBundle !== undefined) {
    for (const name of ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE"]) env[name] = BUILD_CA_PATH;
  }
  if (settings.npmRegistry) env.NPM_CONFIG_REGISTRY = env.BUN_CONFIG_REGISTRY = settings.npmRegistry;
  return { ...env, ...settings.buildArgs };
}

/**
 * The app image: `/app` from `builtImage` (the committed build container) or, when the plan has no
 * build steps, from the build context itself.
 */
export function generateDockerfile(plan: BuildPlan, settings: BuildSettings, builtImage: string | null): string {
  const labels = Object.entries(settings.labels ?? {}).map(([name, value]) => `${name}=${JSON.stringify(value)}`);
  const lines = [
    `FROM ${settings.baseImage}`,
    "WORKDIR /app",
    builtImage ? `COPY --from=${builtImage} /app /app` : "COPY . /app",
    `ENV PORT=${settings.port}${runtimeEnv(plan, settings.runtime)}`,
    `EXPOSE ${settings.port}`,
    `CMD ${JSON.stringify(plan.start)}`,
    // Last: the build's own ids would otherwise defeat the layer cache of every step after them.
    ...(labels.length ? [`LABEL ${labels.join(" ")}`] : []),
  ];
  return `${lines.join("\n")}\n`;
}

function runtimeEnv(plan: BuildPlan, runtime: Runtime): string {
  if (runtime !== "python") return " NODE_ENV=production";
  return plan.installCommands.length > 0 ? " PATH=/app/.venv/bin:$PATH PYTHONUNBUFFERED=1" : " PYTHONUNBUFFERED=1";
}

/** Files the platform adds to /app beside the app's own. */
export function platformFiles(plan: BuildPlan): Record<string, string> {
  return plan.staticRoot !== undefined ? { [STATIC_SERVER_PATH]: staticServerSource } : {};
}
