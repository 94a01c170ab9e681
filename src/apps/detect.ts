// Startup detection: from an app's files, decide how to install, build and start it. Pure: it
// reads only what it is given, so unit tests can hand it any tree. The plan is printed at the top
// of every build log.
import type { Runtime } from "../config";

export type AppKind = "vite" | "next" | "node" | "bun" | "static" | "fastapi" | "flask" | "django" | "python" | "custom";

export interface BuildPlan {
  kind: AppKind;
  /** Shell lines run in the build stage, in order (install, then build). */
  installCommands: string[];
  buildCommands: string[];
  /** argv of the container; `$PORT` is expanded by `sh -c` where a command needs it. */
  start: string[];
  /** Folder of static files served by the built-in static server, when the app is static. */
  staticRoot?: string;
  /** One line per decision, for the build log. */
  explanation: string[];
}

export interface AppFiles {
  /** Relative paths of every file of the source tree. */
  paths: Set<string>;
  /** Reads a small text file of the tree (package.json, requirements.txt...). */
  read(path: string): string | undefined;
}

export const STATIC_SERVER_PATH = ".platform/static-server.mjs";

interface PackageJson {
  scripts?: Record<string, string>;
  main?: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

function readPackageJson(files: AppFiles): PackageJson | undefined {
  const text = files.read("package.json");
  if (text === undefined) return undefined;
  try {
    const parsed = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}

const hasDependency = (pkg: PackageJson, name: string) => Boolean(pkg.dependencies?.[name] ?? pkg.devDependencies?.[name]);
const sh = (command: string) => ["sh", "-c", command];

function nodeInstall(files: AppFiles, runtime: Runtime): string {
  if (runtime === "bun") return "bun install";
  return files.paths.has("package-lock.json") ? "npm ci --no-audit --no-fund" : "npm install --no-audit --no-fund";
}

function staticServerStart(runtime: Runtime, root: string): string[] {
  if (runtime === "python") return sh(`exec python -m http.server "$PORT" --bind 0.0.0.0 --directory ${JSON.stringify(root)}`);
  return [runtime === "bun" ? "bun" : "node", STATIC_SERVER_PATH, root];
}

function detectPython(files: AppFiles): BuildPlan {
  const requirements = (files.read("requirements.txt") ?? "").toLowerCase();
  const hasRequirements = /^\s*[a-z0-9]/m.test(requirements);
  const install = hasRequirements ? ["pip install --no-cache-dir -r requirements.txt"] : [];
  const explanation = [hasRequirements ? "requirements.txt found: pip install -r requirements.txt" : "no requirements to install"];
  const entry = ["main.py", "app.py", "server.py"].find((name) => files.paths.has(name));
  const module = entry?.replace(/\.py$/, "") ?? "main";
  if (/^\s*fastapi\b/m.test(requirements)) {
    explanation.push(`FastAPI recognised: uvicorn ${module}:app`);
    return { kind: "fastapi", installCommands: install, buildCommands: [], start: sh(`exec uvicorn ${module}:app --host 0.0.0.0 --port "$PORT"`), explanation };
  }
  if (files.paths.has("manage.py") && /^\s*django\b/m.test(requirements)) {
    explanation.push("Django recognised: manage.py runserver");
    return { kind: "django", installCommands: install, buildCommands: [], start: sh('exec python manage.py runserver "0.0.0.0:$PORT"'), explanation };
  }
  if (/^\s*flask\b/m.test(requirements)) {
    explanation.push(`Flask recognised: flask --app ${module} run`);
    return { kind: "flask", installCommands: install, buildCommands: [], start: sh(`exec flask --app ${module} run --host 0.0.0.0 --port "$PORT"`), explanation };
  }
  if (entry) {
    explanation.push(`${entry} found: python ${entry}`);
    return { kind: "python", installCommands: install, buildCommands: [], start: ["python", entry], explanation };
  }
  if (files.paths.has("index.html")) return detectStatic("python", explanation);
  throw new DetectionFailed("No main.py, app.py or server.py found; set a startupCommand");
}

function detectStatic(runtime: Runtime, explanation: string[] = []): BuildPlan {
  explanation.push("index.html without package.json: static site served by the built-in static server");
  return { kind: "static", installCommands: [], buildCommands: [], start: staticServerStart(runtime, "."), staticRoot: ".", explanation };
}

export class DetectionFailed extends Error {}

export function detectPlan(files: AppFiles, runtime: Runtime): BuildPlan {
  if (runtime === "python") return detectPython(files);
  const pkg = readPackageJson(files);
  if (!pkg) {
    if (files.paths.has("index.html")) return detectStatic(runtime);
    if (runtime === "bun") {
      const entry = ["index.ts", "index.js", "server.ts", "src/index.ts"].find((name) => files.paths.has(name));
      if (entry) return { kind: "bun", installCommands: [], buildCommands: [], start: ["bun", entry], explanation: [`${entry} found: bun ${entry}`] };
    }
    const entry = ["index.js", "server.js", "app.js"].find((name) => files.paths.has(name));
    if (entry) return { kind: "node", installCommands: [], buildCommands: [], start: [runtime === "bun" ? "bun" : "node", entry], explanation: [`no package.json, ${entry} found`] };
    throw new DetectionFailed("No package.json, index.html or entry file (index.js, server.js, app.js) found; set a startupCommand");
  }
  const dependencyCount = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).length;
  const install = dependencyCount > 0 ? [nodeInstall(files, runtime)] : [];
  const run = runtime === "bun" ? "bun run" : "npm run";
  const explanation = [install.length ? `package.json found: ${install[0]}` : "package.json found, no dependencies to install"];
  if (hasDependency(pkg, "next")) {
    explanation.push(`Next.js recognised: ${run} build, then next start`);
    return { kind: "next", installCommands: install, buildCommands: [`${run} build`], start: sh('exec npx next start -H 0.0.0.0 -p "$PORT"'), explanation };
  }
  if (hasDependency(pkg, "vite") && pkg.scripts?.build) {
    explanation.push(`Vite recognised: ${run} build, then the built-in static server serves dist/`);
    return { kind: "vite", installCommands: install, buildCommands: [`${run} build`], start: staticServerStart(runtime, "dist"), staticRoot: "dist", explanation };
  }
  const build = pkg.scripts?.build ? [`${run} build`] : [];
  if (build.length) explanation.push(`build script found: ${build[0]}`);
  if (pkg.scripts?.start) {
    explanation.push(`start script found: ${run} start`);
    return { kind: runtime === "bun" ? "bun" : "node", installCommands: install, buildCommands: build, start: runtime === "bun" ? ["bun", "run", "start"] : ["npm", "start"], explanation };
  }
  const candidates = runtime === "bun" ? [pkg.main, "index.ts", "index.js", "server.ts", "server.js", "app.js"] : [pkg.main, "index.js", "server.js", "app.js"];
  const entry = candidates.find((name): name is string => Boolean(name) && files.paths.has(name!.replace(/^\.\//, "")));
  if (entry) {
    explanation.push(`${entry === pkg.main ? '"main"' : "entry file"} found: ${entry}`);
    return { kind: runtime === "bun" ? "bun" : "node", installCommands: install, buildCommands: build, start: [runtime === "bun" ? "bun" : "node", entry], explanation };
  }
  if (files.paths.has("index.html")) return { ...detectStatic(runtime, explanation), installCommands: install, buildCommands: build };
  throw new DetectionFailed('package.json has no "start" script or "main", and no index/server/app file was found; set a startupCommand');
}

/** Install and build steps alone, for an app whose start only a custom command knows. */
function setupSteps(files: AppFiles, runtime: Runtime): BuildPlan {
  const plan: BuildPlan = { kind: "custom", installCommands: [], buildCommands: [], start: [], explanation: [] };
  if (runtime === "python") {
    if (/^\s*[a-z0-9]/im.test(files.read("requirements.txt") ?? "")) plan.installCommands.push("pip install --no-cache-dir -r requirements.txt");
    return plan;
  }
  const pkg = readPackageJson(files);
  if (!pkg) return plan;
  if (Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).length > 0) plan.installCommands.push(nodeInstall(files, runtime));
  if (pkg.scripts?.build) plan.buildCommands.push(`${runtime === "bun" ? "bun run" : "npm run"} build`);
  plan.explanation.push(...[...plan.installCommands, ...plan.buildCommands].map((step) => `package.json found: ${step}`));
  return plan;
}

/** A custom startupCommand replaces the detected start; install and build steps stay. */
export function planWithCommand(files: AppFiles, runtime: Runtime, startupCommand: string): BuildPlan {
  if (startupCommand === "auto" || startupCommand.trim() === "") return detectPlan(files, runtime);
  let base: BuildPlan;
  try {
    base = detectPlan(files, runtime);
  } catch (error) {
    if (!(error instanceof DetectionFailed)) throw error;
    base = setupSteps(files, runtime);
  }
  return {
    ...base,
    kind: "custom",
    start: sh(startupCommand),
    explanation: [...base.explanation, `custom startupCommand replaces the detected start: ${startupCommand}`],
  };
}
