// Generates the Dockerfile of an app build from its plan. Two stages: the build stage gets the
// build-time settings (extra CA bundle, package registry) and installs and builds; the final
// stage copies only /app, so those settings never reach the app's image.
import type { Runtime } from "../config";
import type { BuildPlan } from "./detect";
import staticServerSource from "./static-server.mjs" with { type: "text" };
import { STATIC_SERVER_PATH } from "./detect";

export const BUILD_CA_PATH = ".platform/build-ca.pem";
/** Public-by-design variables bundlers inline into client code, passed to the build stage only. */
export const BUILD_TIME_ENV_PREFIXES = ["VITE_", "NEXT_PUBLIC_"];

export interface BuildSettings {
  baseImage: string;
  runtime: Runtime;
  port: number;
  /** Content of an extra CA bundle for the build container (PLATFORM_BUILD_CA_FILE). */
  caBundle?: string;
  /** npm/bun registry for the build container (PLATFORM_BUILD_NPM_REGISTRY). */
  npmRegistry?: string;
  /** Names of app variables given to the build as build arguments. */
  buildArgNames?: string[];
  /** Put on both stages: the build stage stays behind as an image of its own, and must be found by label. */
  labels?: Record<string, string>;
}

const CA_IN_BUILD = "/usr/local/share/platform-build-ca.pem";

/** Installs and builds reach registries; a plan with neither needs no CA or registry (fewer steps, faster builds). */
const needsRegistry = (plan: BuildPlan) => plan.installCommands.length + plan.buildCommands.length > 0;

export function generateDockerfile(plan: BuildPlan, settings: BuildSettings): string {
  const lines = [`FROM ${settings.baseImage} AS build`, "WORKDIR /app"];
  const withCa = settings.caBundle !== undefined && needsRegistry(plan);
  if (withCa) {
    lines.push(
      `COPY ${BUILD_CA_PATH} ${CA_IN_BUILD}`,
      `ENV NODE_EXTRA_CA_CERTS=${CA_IN_BUILD} SSL_CERT_FILE=${CA_IN_BUILD} PIP_CERT=${CA_IN_BUILD} REQUESTS_CA_BUNDLE=${CA_IN_BUILD}`,
    );
  }
  if (settings.npmRegistry && needsRegistry(plan)) {
    lines.push(`ENV NPM_CONFIG_REGISTRY=${JSON.stringify(settings.npmRegistry)} BUN_CONFIG_REGISTRY=${JSON.stringify(settings.npmRegistry)}`);
  }
  for (const name of settings.buildArgNames ?? []) lines.push(`ARG ${name}`);
  if (settings.runtime === "python" && plan.installCommands.length > 0) {
    // A virtualenv inside /app keeps installed packages in what the final stage copies.
    lines.push("RUN python -m venv /app/.venv", "ENV PATH=/app/.venv/bin:$PATH");
  }
  lines.push("COPY . .");
  if (withCa) lines.push(`RUN rm -f ${BUILD_CA_PATH}`);
  for (const command of [...plan.installCommands, ...plan.buildCommands]) lines.push(`RUN ${command}`);
  // One LABEL line per stage, last: the build's own ids would otherwise defeat the layer cache of
  // every step after them (and the engine's `labels` option adds a step per label).
  const labels = Object.entries(settings.labels ?? {}).map(([name, value]) => `${name}=${JSON.stringify(value)}`);
  const labelLine = labels.length ? [`LABEL ${labels.join(" ")}`] : [];
  lines.push(
    ...labelLine,
    `FROM ${settings.baseImage}`,
    "WORKDIR /app",
    "COPY --from=build /app /app",
    `ENV PORT=${settings.port}${runtimeEnv(plan, settings.runtime)}`,
    `EXPOSE ${settings.port}`,
    `CMD ${JSON.stringify(plan.start)}`,
    ...labelLine,
  );
  return `${lines.join("\n")}\n`;
}

function runtimeEnv(plan: BuildPlan, runtime: Runtime): string {
  if (runtime !== "python") return " NODE_ENV=production";
  return plan.installCommands.length > 0 ? " PATH=/app/.venv/bin:$PATH PYTHONUNBUFFERED=1" : " PYTHONUNBUFFERED=1";
}

/** Files the platform adds to the build context beside the app's own. */
export function platformContextFiles(plan: BuildPlan, settings: BuildSettings): Record<string, string> {
  const files: Record<string, string> = {};
  if (plan.staticRoot !== undefined) files[STATIC_SERVER_PATH] = staticServerSource;
  if (settings.caBundle !== undefined && needsRegistry(plan)) files[BUILD_CA_PATH] = settings.caBundle;
  return files;
}
