// Dockerfile builds: which builder makes an app's image (the platform's runtime plan, or the
// source's own Dockerfile), and the Dockerfile build itself, by the engine's (classic) builder with
// the limits of the platform's own builds.
//
// What a Dockerfile receives:
// - the context: the app's source tree without node_modules, .git, .venv, __pycache__ and
//   .platform/ folders, and without what the root .dockerignore excludes;
// - build arguments (a Dockerfile declares `ARG NAME` to use one): the app's VITE_* and
//   NEXT_PUBLIC_* variables; NPM_CONFIG_REGISTRY and BUN_CONFIG_REGISTRY when the platform sets a
//   package registry; PLATFORM_CA_FILE=.platform/ca.pem when the platform has an extra CA bundle:
//   only then is that file in the context, for the Dockerfile to COPY.
// What it may name, checked before the build (reviewDockerfile, then the engine): FROM and
// COPY --from name earlier stages or images by name, never by image ID (the engine resolves any ID
// prefix, which would reach another tenant's image or a failed build's leftovers) nor through a
// variable, and never an image the platform made. ADD takes no remote source: the engine fetches
// those itself, from the host's network (its loopback, cloud metadata), past the egress rules.
// RUN steps run with the build memory, CPUs and timeout, on the workspace's network (so the egress
// rules apply to them), as the Dockerfile's USER with the engine's default capabilities and no
// process limit: the engine's builder has no option for those. The image then runs like any app's
// (./deployer.ts): as PLATFORM_APP_USER whatever its USER, no capabilities, no new privileges, the
// app's limits, PORT set, started by its ENTRYPOINT and CMD.
import { lstat, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Runtime } from "../config";
import { LABEL_MANAGED } from "../docker/container-spec";
import { BuildFailed, DockerNotFound, type DockerDriver } from "../docker/driver";
import type { ImageConfig } from "../docker/images";
import { tarStream } from "../docker/tar";
import { ApiError } from "../http/errors";
import { DetectionFailed, planWithCommand, type AppFiles, type BuildPlan } from "./detect";
import type { BuilderSetting } from "./model";
import { contextEntries } from "./sources";

const DOCKERFILE = "Dockerfile";
const DOCKERIGNORE = ".dockerignore";
const STEP_IMAGE_LINE = /^ ---> ([0-9a-f]{12})$/gm;
/** Where the extra CA bundle is put in a Dockerfile build's context (user files under .platform/ never are). */
export const CONTEXT_CA_FILE = ".platform/ca.pem";
const MAX_DOCKERIGNORE_BYTES = 256 * 1024;
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
 * exclusion back, the last matching line wins. The Dockerfile itself is always sent (the engine
 * needs it), as docker's own client does.
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
    if (path === DOCKERFILE) return false;
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

/** Builds the source's Dockerfile as the image `tag`; throws BuildFailed with the engine's message when a step fails. */
export async function buildDockerfile(build: DockerfileBuild): Promise<string> {
  const { driver, limits, log } = build;
  const namedImages = reviewDockerfile(await readFile(join(build.sourceDir, DOCKERFILE), "utf8"));
  await refusePlatformMadeImages(driver, namedImages);
  const ignoreText = await readDockerignore(build.sourceDir);
  const buildArgs = dockerfileBuildArgs(build.settings);
  log(
    `==> Building image ${build.tag} from the Dockerfile: ${limits.cpus} CPU, ${limits.memoryMB} MB, ` +
      `timeout ${limits.timeoutSeconds} s, RUN steps on the workspace network`,
  );
  if (Object.keys(buildArgs).length) log(`    build arguments: ${Object.keys(buildArgs).join(", ")}`);
  if (ignoreText !== undefined) log("    .dockerignore applied");
  const platformFiles = {
    ...(build.settings.caBundle !== undefined && { [CONTEXT_CA_FILE]: build.settings.caBundle }),
    // Sent as docker's client does: the engine then leaves the Dockerfile out of COPY when it is listed.
    ...(ignoreText !== undefined && { [DOCKERIGNORE]: ignoreText }),
  };
  const excluded = ignoreText === undefined ? undefined : dockerignoreFilter(ignoreText);
  // The image of each step, as the engine prints it (" ---> 4c4bf366748e"): a failed build leaves
  // those of the steps before the failure untagged and unlabelled, the source inside them.
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
        dockerfile: DOCKERFILE,
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
  } catch (error) {
    await driver.removeDanglingImages([...stepImages]).catch(() => 0);
    throw error;
  }
  const review = reviewImage(await driver.inspectImage(build.tag), { port: build.port, user: build.user, labels: build.labels });
  if (review.refused) {
    await driver.removeImage(build.tag).catch(() => {});
    throw new BuildFailed(review.refused);
  }
  for (const note of review.notes) log(`    ${note}`);
  return build.tag;
}

/** The platform's own image names (src/apps/builder.ts), under any registry: another app's image, or a build's, is never a starting point. */
const PLATFORM_IMAGE_NAME = /platform-(?:app|build)-[a-z0-9_]/i;
/** What the engine takes for an image ID: a full or short hex ID (the shortest unique prefix will do), with or without `sha256:`. */
const IMAGE_ID = /^(?:sha256:.*|[0-9a-f]{1,64}(?::[\w.-]*)?)$/i;
/** The characters of an image reference; quotes and escapes would be resolved by the engine after this check. */
const PLAIN_REFERENCE = /^[A-Za-z0-9._:/@-]+$/;
/** What the engine's Dockerfile parser splits words on. */
const WORD_SEPARATOR = /[\t\v\f\r ]+/;
/** A parser directive (`# escape=...`): only in the comment lines that open the file. */
const PARSER_DIRECTIVE = /^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$/;
const USE_RUN_INSTEAD = "the engine would fetch it from the platform's own network; use RUN curl/wget, which runs on the workspace network";

const refuse = (line: string, reason: string) => new BuildFailed(`the Dockerfile's line "${line.replace(/\s+/g, " ").trim().slice(0, 120)}" ${reason}`);

/**
 * The Dockerfile's instructions as the engine's parser joins them: a line ending in the escape
 * character (`\`, or the one of a leading `# escape=` directive) goes on with the next, and comment
 * and blank lines within are skipped.
 */
function instructionLines(text: string): string[] {
  const lines = text.replace(/^\uFEFF/, "").split("\n").map((line) => line.replace(/\r+$/, ""));
  let escape = "\\";
  for (const line of lines) {
    const directive = PARSER_DIRECTIVE.exec(line.trimStart());
    if (!directive) break;
    if (directive[1]!.toLowerCase() === "escape") escape = directive[2]!;
  }
  const continued = new RegExp(`${escapeRegExp(escape)}[ \\t]*$`);
  const instructions: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    const first = lines[index]!.trimStart();
    if (first.startsWith("#")) continue;
    let open = continued.test(first);
    let instruction = first.replace(continued, "");
    while (open && ++index < lines.length) {
      const next = lines[index]!;
      if (next.trimStart() === "" || next.trimStart().startsWith("#")) continue;
      open = continued.test(next);
      instruction += next.replace(continued, "");
    }
    if (instruction.trim() !== "") instructions.push(instruction);
  }
  return instructions;
}

/** The leading `--name=value` words of an instruction's arguments, quotes and backslashes resolved as the engine's parser does, and what follows them. */
function leadingFlags(text: string): { flags: string[]; rest: string } {
  const flags: string[] = [];
  let position = 0;
  for (;;) {
    while (position < text.length && /\s/.test(text[position]!)) position++;
    if (!text.startsWith("--", position)) return { flags, rest: text.slice(position) };
    let word = "";
    let quote: string | undefined;
    for (; position < text.length && (quote || !/\s/.test(text[position]!)); position++) {
      const char = text[position]!;
      if (char === quote) quote = undefined;
      else if (!quote && (char === '"' || char === "'")) quote = char;
      else if (char === "\\") word += text[++position] ?? "";
      else word += char;
    }
    if (word === "--") return { flags, rest: text.slice(position) };
    flags.push(word);
  }
}

function parseInstruction(line: string): { keyword: string; flags: string[]; args: string } {
  const trimmed = line.trim();
  const separator = WORD_SEPARATOR.exec(trimmed);
  if (!separator) return { keyword: trimmed.toUpperCase(), flags: [], args: "" };
  const { flags, rest } = leadingFlags(trimmed.slice(separator.index + separator[0].length));
  return { keyword: trimmed.slice(0, separator.index).toUpperCase(), flags, args: rest.trim() };
}

/** ADD's sources, read both as a JSON array and as words: whichever way the engine reads them. */
function addSources(args: string): string[] {
  const words = args.split(WORD_SEPARATOR).filter(Boolean);
  const sources = words.slice(0, Math.max(1, words.length - 1));
  try {
    const list: unknown = JSON.parse(args);
    if (Array.isArray(list)) sources.push(...list.slice(0, Math.max(1, list.length - 1)).map(String));
  } catch {
    // not the JSON form
  }
  return sources;
}

/**
 * Refuses (BuildFailed, quoting the line) a Dockerfile that names an image by ID, through a
 * variable or quoting, or by a platform image's name in FROM or COPY/ADD --from (earlier stages,
 * by name or index, and `scratch` are fine), or that ADDs a remote source. Answers the images it
 * names, each with its line, for the engine to look up.
 */
export function reviewDockerfile(text: string): Map<string, string> {
  const images = new Map<string, string>();
  const stages: string[] = [];
  /** `byIndex`: COPY --from also takes a stage's number; FROM takes a number for an image ID. */
  const reviewReference = (reference: string, earlierStages: string[], line: string, byIndex = false) => {
    const name = reference.toLowerCase();
    if (name === "scratch" || earlierStages.includes(name)) return;
    if (byIndex && /^\d+$/.test(name) && Number(name) < earlierStages.length) return;
    if (reference.includes("$")) throw refuse(line, "names an image through a variable: write the image's name itself");
    if (!PLAIN_REFERENCE.test(reference)) throw refuse(line, "names an image with quotes or escapes: write the image's name plainly");
    if (IMAGE_ID.test(reference)) throw refuse(line, "names an image by its ID: name a base image by repository and tag, or an earlier stage by its name");
    if (PLATFORM_IMAGE_NAME.test(reference)) throw refuse(line, "names an image of the platform's apps: start from a base image instead");
    images.set(reference, line);
  };
  const review = (instruction: ReturnType<typeof parseInstruction>, line: string) => {
    if (instruction.keyword === "ONBUILD") return review(parseInstruction(instruction.args), line);
    if (instruction.keyword === "FROM") {
      const [reference, as, stageName] = instruction.args.split(WORD_SEPARATOR);
      if (reference) reviewReference(reference, stages, line);
      stages.push(as?.toLowerCase() === "as" && stageName ? stageName.toLowerCase() : "");
    }
    if (instruction.keyword !== "COPY" && instruction.keyword !== "ADD") return;
    for (const flag of instruction.flags) {
      const equals = flag.indexOf("=");
      if (equals > 0 && flag.slice(2, equals).toLowerCase() === "from" && equals + 1 < flag.length) reviewReference(flag.slice(equals + 1), stages.slice(0, -1), line, true);
    }
    if (instruction.keyword !== "ADD") return;
    for (const source of addSources(instruction.args)) {
      if (source.includes("$")) throw refuse(line, `names its source through a variable, which could make it a URL: ${USE_RUN_INSTEAD}`);
      if (/:\/\/|git@/i.test(source.replace(/["'\\`]/g, ""))) throw refuse(line, `fetches a remote source: ${USE_RUN_INSTEAD}`);
    }
  };
  for (const line of instructionLines(text)) review(parseInstruction(line), line);
  return images;
}

/** Refuses an image named by the Dockerfile that the platform made (an app's, a build's), whatever its name; one the engine lacks is left to the build. */
async function refusePlatformMadeImages(driver: DockerDriver, images: Map<string, string>): Promise<void> {
  for (const [reference, line] of images) {
    let labels: Record<string, string>;
    try {
      ({ labels } = await driver.inspectImage(reference));
    } catch (error) {
      if (error instanceof DockerNotFound) continue;
      if (error instanceof ApiError) throw error;
      throw new BuildFailed(`the image ${reference} named in the Dockerfile could not be looked up: ${(error as Error).message}`);
    }
    if (labels[LABEL_MANAGED]) throw refuse(line, "names an image the platform made: start from a base image instead");
  }
}

/** The root .dockerignore, if any; one that is not a regular file of a sane size fails the build (a symlink is never followed). */
async function readDockerignore(sourceDir: string): Promise<string | undefined> {
  const path = join(sourceDir, DOCKERIGNORE);
  const stats = await lstat(path).catch(() => null);
  if (!stats) return undefined;
  if (!stats.isFile() || stats.size > MAX_DOCKERIGNORE_BYTES) {
    throw new BuildFailed(`.dockerignore must be a regular file of at most ${MAX_DOCKERIGNORE_BYTES / 1024} KB`);
  }
  return readFile(path, "utf8");
}
