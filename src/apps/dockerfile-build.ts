// Dockerfile builds: which builder makes an app's image (the platform's runtime plan, or the
// source's own Dockerfile), and the Dockerfile build itself, by the engine's (classic) builder with
// the limits of the platform's own builds.
//
// The engine builds only a Dockerfile the platform wrote: its re-emission of the user's from its
// own parse (./dockerfile-rewrite.ts), sent as .platform/Dockerfile, where no user file can be.
// The engine's builder fetches `ADD <url>`, ONBUILD triggers' sources and base images from the
// host's network, past the workspace's egress rules; checking the user's text and then letting the
// engine parse it again made every difference between the two parsers a way past the check. Now
// what the engine reads is what the platform checked: one instruction a line, no directive or
// continuation left, ADD without URLs, no ONBUILD, and every image named by its ID after the
// platform made it present itself (./dockerfile-images.ts: registry host checked, pulled without
// credentials, inspected: no ONBUILD, no platform labels), so the engine resolves no name and
// contacts no registry during the build. The other design, a builder in a container on the
// workspace network (Debian ships buildah 1.28: `apt-cache policy buildah`), would put every fetch
// under the egress rules whatever the Dockerfile says, but each build would run buildah in a
// container with CAP_SYS_ADMIN (or privileged) next to the tenant's RUN steps, need an image of
// its own built and kept on every engine, and end with each image copied from buildah's store
// into the engine's (save and load). Chosen: the engine's builder stays, and the platform alone
// decides what it reads.
//
// What a Dockerfile receives:
// - the context: the app's source tree without node_modules, .git, .venv, __pycache__ and
//   .platform/ folders, and without what the root .dockerignore excludes;
// - build arguments (a Dockerfile declares `ARG NAME` to use one): the app's VITE_* and
//   NEXT_PUBLIC_* variables; NPM_CONFIG_REGISTRY and BUN_CONFIG_REGISTRY when the platform sets a
//   package registry (any credentials in it included: every tenant's build can read them);
//   PLATFORM_CA_FILE=.platform/ca.pem when the platform has an extra CA bundle: only then is that
//   file in the context, for the Dockerfile to COPY.
// RUN steps run with the build memory, CPUs and timeout, on the workspace's network (so the egress
// rules apply to them), as the Dockerfile's USER with the engine's default capabilities and no
// process limit: the engine's builder has no option for those. The image then runs like any app's
// (./deployer.ts): as PLATFORM_APP_USER whatever its USER, no capabilities, no new privileges, the
// app's limits, PORT set, started by its ENTRYPOINT and CMD.
import { lstat, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Runtime } from "../config";
import { BuildFailed, type DockerDriver } from "../docker/driver";
import type { ImageConfig, RegistryAuth } from "../docker/images";
import { tarStream } from "../docker/tar";
import { lookupHost, pinImage } from "./dockerfile-images";
import { refusal, rewriteDockerfile } from "./dockerfile-rewrite";
import { DetectionFailed, planWithCommand, type AppFiles, type BuildPlan } from "./detect";
import type { BuilderSetting } from "./model";
import { contextEntries } from "./sources";

const DOCKERFILE = "Dockerfile";
const DOCKERIGNORE = ".dockerignore";
const STEP_IMAGE_LINE = /^ ---> ([0-9a-f]{12})$/gm;
/** Where the extra CA bundle is put in a Dockerfile build's context (user files under .platform/ never are). */
export const CONTEXT_CA_FILE = ".platform/ca.pem";
const MAX_DOCKERIGNORE_BYTES = 256 * 1024;
/** Ten times the largest Dockerfiles seen in the wild; the platform reads one this size in ~30 ms. */
const MAX_DOCKERFILE_BYTES = 128 * 1024;
/** Distinct images a Dockerfile may name: each is looked up, and maybe pulled, before the build. */
const MAX_IMAGES = 32;
/** Where the Dockerfile the engine builds is put in the context: user files under .platform/ never are. */
const EMITTED_DOCKERFILE = ".platform/Dockerfile";
/** Labels under this prefix are the platform's: they tell its reconciler what a container is. */
const PLATFORM_LABEL_PREFIX = "platform.";

export type BuilderChoice =
  | { builder: "runtime"; plan: BuildPlan; logLines: string[] }
  | { builder: "dockerfile"; logLines: string[] };

/**
 * The builder of the app's next image, with the build log's first lines saying which and why.
 * Throws BuildFailed or DetectionFailed (with a message for the log) when neither can run.
 */
export function chooseBuilder(files: AppFiles, app: { builder: BuilderSetting; runtime: Runtime; startupCommand: string }): BuilderChoice {
  const hasDockerfile = files.paths.has(DOCKERFILE);
  if (app.builder === "dockerfile") {
    if (!hasDockerfile) throw new BuildFailed('the builder setting is "dockerfile" but the source has no Dockerfile at its root');
    const logLines = ['==> Builder: Dockerfile (builder setting "dockerfile")'];
    if (app.startupCommand !== "auto" && app.startupCommand.trim() !== "") logLines.push("    startupCommand is not used: the Dockerfile's ENTRYPOINT and CMD start the app");
    return { builder: "dockerfile", logLines };
  }
  let plan: BuildPlan;
  try {
    plan = planWithCommand(files, app.runtime, app.startupCommand);
  } catch (error) {
    if (!(error instanceof DetectionFailed)) throw error;
    if (!hasDockerfile) throw new DetectionFailed(`${error.message}, or add a Dockerfile`);
    return {
      builder: "dockerfile",
      logLines: [`==> Builder: Dockerfile (builder "auto": nothing detected for runtime ${app.runtime}; the source has a Dockerfile)`, `    detection: ${error.message}`],
    };
  }
  const logLines = [`==> Runtime ${app.runtime}, detected: ${plan.kind}`, ...plan.explanation.map((line) => `    ${line}`), `    start: ${plan.start.join(" ")}`];
  if (hasDockerfile) logLines.push('    the Dockerfile is not used: builder "auto" builds it only when nothing is detected; set builder to "dockerfile" to use it');
  return { builder: "runtime", plan, logLines };
}

interface IgnoreRule {
  matcher: RegExp;
  /** A `!pattern`: matching files are kept after all. */
  keeps: boolean;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");

/** One pattern as a regular expression, as the engine's matcher reads it: `*` and `?` stay within a segment, `**` spans any. */
function patternExpression(pattern: string): RegExp {
  let source = "";
  let inClass = false;
  for (let index = 0; index < pattern.length; index++) {
    const char = pattern[index]!;
    if (inClass) {
      if (char === "]") inClass = false;
      source += char === "\\" && index + 1 < pattern.length ? escapeRegExp(pattern[++index]!) : char;
    } else if (char === "[") {
      inClass = true;
      source += "[";
      if (pattern[index + 1] === "!" || pattern[index + 1] === "^") {
        source += "^";
        index++;
      }
    } else if (char === "*" && pattern[index + 1] === "*") {
      index++;
      if (pattern[index + 1] === "/") index++;
      source += index + 1 >= pattern.length ? ".*" : "(.*/)?";
    } else if (char === "*") source += "[^/]*";
    else if (char === "?") source += "[^/]";
    else if (char === "\\" && index + 1 < pattern.length) source += escapeRegExp(pattern[++index]!);
    else source += escapeRegExp(char);
  }
  try {
    if (inClass) throw new SyntaxError("unclosed [");
    return new RegExp(`^${source}$`);
  } catch {
    throw new BuildFailed(`.dockerignore: the pattern ${JSON.stringify(pattern)} is malformed`);
  }
}

/** Removes `.` and `..` segments, doubled slashes and a leading slash, as the engine cleans patterns. */
function cleanPattern(pattern: string): string {
  const segments: string[] = [];
  for (const segment of pattern.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") segments.pop();
    else segments.push(segment);
  }
  return segments.join("/");
}

/**
 * The files a .dockerignore excludes, as a test on a context path (forward slashes, relative to the
 * root): a pattern excludes what it matches and everything under a folder it matches, `!` takes an
 * exclusion back, the last matching line wins. The user's Dockerfile is a file like any other: the
 * engine reads the platform's (./dockerfile-rewrite.ts).
 */
export function dockerignoreFilter(text: string): (path: string) => boolean {
  const rules: IgnoreRule[] = [];
  for (const rawLine of text.split(/\r?\n/)) {
    let line = rawLine.trim();
    if (line === "" || line.startsWith("#")) continue;
    const keeps = line.startsWith("!");
    if (keeps) line = line.slice(1).trim();
    const pattern = cleanPattern(line);
    if (pattern === "") continue;
    rules.push({ matcher: patternExpression(pattern), keeps });
  }
  return (path) => {
    const segments = path.split("/");
    const folders = segments.slice(0, -1).map((_, index) => segments.slice(0, index + 1).join("/"));
    let excluded = false;
    for (const rule of rules) {
      if (rule.matcher.test(path) || folders.some((folder) => rule.matcher.test(folder))) excluded = !rule.keeps;
    }
    return excluded;
  };
}

export interface DockerfileSettings {
  /** Content of the extra CA bundle (PLATFORM_BUILD_CA_FILE). */
  caBundle?: string;
  /** PLATFORM_BUILD_NPM_REGISTRY. */
  npmRegistry?: string;
  /** The app's public build-time variables (BUILD_TIME_ENV_PREFIXES). */
  buildTimeVars: Record<string, string>;
}

/** The build arguments a Dockerfile may declare (see the file's header). */
export function dockerfileBuildArgs(settings: DockerfileSettings): Record<string, string> {
  return {
    ...settings.buildTimeVars,
    ...(settings.npmRegistry && { NPM_CONFIG_REGISTRY: settings.npmRegistry, BUN_CONFIG_REGISTRY: settings.npmRegistry }),
    ...(settings.caBundle !== undefined && { PLATFORM_CA_FILE: CONTEXT_CA_FILE }),
  };
}

/**
 * What the build log says about a built image's own settings at run time, and `refused` when the
 * image can't be run: its labels would make the platform take its containers for something else.
 */
export function reviewImage(
  image: ImageConfig,
  runAs: { port: number; user: string | undefined; labels: Record<string, string> },
): { refused?: string; notes: string[] } {
  const foreign = Object.keys(image.labels).filter((name) => name.startsWith(PLATFORM_LABEL_PREFIX) && !(name in runAs.labels));
  if (foreign.length) return { refused: `the image has the label ${foreign.join(", ")}: labels starting with "${PLATFORM_LABEL_PREFIX}" are the platform's own`, notes: [] };
  const notes: string[] = [];
  if (runAs.user && image.user !== runAs.user) notes.push(`runs as ${runAs.user} (PLATFORM_APP_USER), not as the image's user ${image.user || "root"}`);
  if (image.exposedPorts.length && !image.exposedPorts.includes(`${runAs.port}/tcp`)) {
    notes.push(`the image exposes ${image.exposedPorts.join(", ")}, but the app is reached on port ${runAs.port} (exposePort; PORT=${runAs.port} is set)`);
  }
  if (image.volumes.length) notes.push(`VOLUME ${image.volumes.join(", ")}: each new container starts with an empty volume there; nothing in it outlives a redeploy`);
  return { notes };
}

export interface DockerfileBuild {
  driver: DockerDriver;
  sourceDir: string;
  tag: string;
  settings: DockerfileSettings;
  /** Image registries builds may pull from besides the public ones, whatever their address (PLATFORM_BUILD_REGISTRIES). */
  registries: readonly string[];
  /** The workspace's credentials for a registry, if any: sent with the pulls of the images the Dockerfile names. */
  registryAuth: (registry: string) => RegistryAuth | undefined;
  /** Put on the image (so cleanup finds it) and on its containers. */
  labels: Record<string, string>;
  limits: { memoryMB: number; cpus: number; timeoutSeconds: number; outputBytesPerSecond: number };
  /** Makes the workspace network unless it exists, and answers its name: RUN steps run on it. */
  network: () => Promise<string>;
  /** How its containers will run: port and user (PLATFORM_APP_USER). */
  port: number;
  user: string | undefined;
  log: (line: string) => void;
  /** The engine's output, user text among it. */
  output: (text: string) => void;
  signal: AbortSignal;
}

/** Builds the source's Dockerfile, as re-emitted by the platform, as the image `tag`; throws BuildFailed with the reason when a line is refused or a step fails. */
export async function buildDockerfile(build: DockerfileBuild): Promise<string> {
  const { driver, limits, log } = build;
  const dockerfileText = await emittedDockerfile(build);
  const ignoreText = await readContextFile(build.sourceDir, DOCKERIGNORE, MAX_DOCKERIGNORE_BYTES);
  const buildArgs = dockerfileBuildArgs(build.settings);
  log(
    `==> Building image ${build.tag} from the Dockerfile: ${limits.cpus} CPU, ${limits.memoryMB} MB, ` +
      `timeout ${limits.timeoutSeconds} s, RUN steps on the workspace network`,
  );
  if (Object.keys(buildArgs).length) log(`    build arguments: ${Object.keys(buildArgs).join(", ")}`);
  if (ignoreText !== undefined) log("    .dockerignore applied");
  const platformFiles = {
    [EMITTED_DOCKERFILE]: dockerfileText,
    ...(build.settings.caBundle !== undefined && { [CONTEXT_CA_FILE]: build.settings.caBundle }),
    // Sent as docker's client does: the engine then leaves the Dockerfile out of COPY when it is listed.
    ...(ignoreText !== undefined && { [DOCKERIGNORE]: ignoreText }),
  };
  const excluded = ignoreText === undefined ? undefined : dockerignoreFilter(ignoreText);
  // The image of each step, as the engine prints it (" ---> 4c4bf366748e"): a failed build leaves
  // those of the steps before the failure untagged and unlabelled, the source inside them; a
  // multi-stage build those of its earlier stages.
  const stepImages = new Set<string>();
  const output = (text: string) => {
    for (const match of text.matchAll(STEP_IMAGE_LINE)) stepImages.add(match[1]!);
    build.output(text);
  };
  const run = async () => {
    const network = await build.network();
    try {
      await driver.buildImage({
        context: tarStream(contextEntries(build.sourceDir, platformFiles, excluded)),
        dockerfile: EMITTED_DOCKERFILE,
        tag: build.tag,
        labels: build.labels,
        buildArgs,
        memoryMB: limits.memoryMB,
        cpus: limits.cpus,
        network,
        onOutput: output,
        outputBytesPerSecond: limits.outputBytesPerSecond,
        signal: build.signal,
      });
      return true;
    } catch (error) {
      if (error instanceof BuildFailed && error.message === `network ${network} not found`) return false;
      throw error;
    }
  };
  try {
    // The network goes when the workspace's last app or database does, even during a build: made again, once.
    if (!(await run())) {
      log("==> The workspace network was removed during the build; building again");
      if (!(await run())) throw new BuildFailed("the workspace network was removed during the build, twice");
    }
  } finally {
    await driver.removeDanglingImages([...stepImages]).catch(() => 0);
  }
  const review = reviewImage(await driver.inspectImage(build.tag), { port: build.port, user: build.user, labels: build.labels });
  if (review.refused) {
    await driver.removeImage(build.tag).catch(() => {});
    throw new BuildFailed(review.refused);
  }
  for (const note of review.notes) log(`    ${note}`);
  return build.tag;
}

/**
 * The Dockerfile the engine builds (./dockerfile-rewrite.ts), every image it names present on the
 * engine and pinned by ID (./dockerfile-images.ts). Refused lines are logged, quoted, and fail the build.
 */
async function emittedDockerfile(build: DockerfileBuild): Promise<string> {
  const text = await readContextFile(build.sourceDir, DOCKERFILE, MAX_DOCKERFILE_BYTES);
  if (text === undefined) throw new BuildFailed("the source has no Dockerfile at its root");
  const rewrite = rewriteDockerfile(text, build.registries);
  const refusals = [...rewrite.refusals];
  const pinned = new Map<string, string>();
  if (rewrite.images.size > MAX_IMAGES) refusals.push(`the Dockerfile names ${rewrite.images.size} images: at most ${MAX_IMAGES}`);
  if (!refusals.length) {
    for (const [reference, line] of rewrite.images) {
      if (build.signal.aborted) throw build.signal.reason;
      const pin = await pinImage(build.driver, reference, { lookup: lookupHost, registries: build.registries, authFor: build.registryAuth, log: build.log, signal: build.signal });
      if ("refused" in pin) refusals.push(refusal(line, pin.refused));
      else {
        pinned.set(reference, pin.id);
        build.log(`    ${reference}: image ${pin.id.replace(/^sha256:/, "").slice(0, 12)}, pinned by its ID`);
      }
    }
  }
  if (refusals.length > 1) {
    for (const reason of refusals) build.log(`    refused: ${reason}`);
    throw new BuildFailed(`${refusals.length} lines of the Dockerfile were refused (listed above)`);
  }
  if (refusals.length) throw new BuildFailed(refusals[0]!);
  for (const note of rewrite.notes) build.log(note);
  return rewrite.render((reference) => pinned.get(reference)!);
}

/** A file at the context's root, if any; one that is not a regular file of a sane size fails the build (a symlink is never followed). */
async function readContextFile(sourceDir: string, name: string, maxBytes: number): Promise<string | undefined> {
  const path = join(sourceDir, name);
  const stats = await lstat(path).catch(() => null);
  if (!stats) return undefined;
  if (!stats.isFile() || stats.size > maxBytes) throw new BuildFailed(`${name} must be a regular file of at most ${maxBytes / 1024} KB`);
  return readFile(path, "utf8");
}
