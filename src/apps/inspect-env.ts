// Finds the environment variables an app needs without running anything: names declared in
// .env.example-style files (with their example values) and names the source code reads
// (process.env, import.meta.env, Bun.env, os.environ, os.getenv), each with the files and lines
// that mention it. Used by POST /api/apps/inspect-env.
//
// Decisions a client can rely on:
// - `required` is false when every reference in code has a fallback (`|| x`, `?? x`, a
//   destructuring default, an assignment, `os.environ.get("X", "x")`, `os.getenv("X", "x")`,
//   `os.getenv("X") or x`, `os.environ.setdefault`), and for builtins; otherwise true. A name only
//   listed in an example file is required: the example value is a hint for the person deploying,
//   not something the app falls back to. A Python default of `None` is no fallback.
// - Well-known runtime variables (BUILTIN_VARIABLES: PORT, NODE_ENV, PATH, Vite's MODE...) are
//   listed with `builtin: true` and `required: false`: the platform or the runtime sets them.
// - A real `.env` (any `.env*` file that is not an example) contributes names and lines only.
//   Its values are skipped by the parser and never stored or returned.
// - References in comments count: the scan is textual, not a parse of the language.
import { lstat, mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { extractZip, type ArchiveLimits } from "./archive";

export interface EnvReference {
  /** Path relative to the app's root, `/`-separated. */
  file: string;
  /** 1-based line number. */
  line: number;
}

export interface EnvVariable {
  name: string;
  required: boolean;
  /** Set by the platform or the runtime (see BUILTIN_VARIABLES); never required. */
  builtin: boolean;
  /** An example file gives it a non-empty value. */
  hasExampleValue: boolean;
  /** The first non-empty value from an example file (files in path order). Never from a real .env. */
  exampleValue?: string;
  /** Every mention, sorted by file then line. */
  references: EnvReference[];
}

export interface EnvInspection {
  /** Sorted by name. */
  variables: EnvVariable[];
}

export const BUILTIN_VARIABLES: ReadonlySet<string> = new Set([
  "NODE_ENV", "PORT", "HOME", "PATH", "PWD", "HOSTNAME", "USER", "SHELL", "TMPDIR", "LANG", "TZ",
  // Vite's import.meta.env constants.
  "MODE", "BASE_URL", "PROD", "DEV", "SSR",
]);

export const MAX_SCANNED_FILE_BYTES = 1024 * 1024;
const SKIPPED_DIRECTORIES = new Set(["node_modules", ".git", "dist", "build", ".next", "__pycache__", "venv", ".venv"]);
const JS_EXTENSIONS = new Set(["js", "mjs", "cjs", "ts", "tsx", "jsx", "vue", "svelte"]);
const EXAMPLE_FILE = /^\.env(?:\.[\w-]+)*\.(?:example|sample|template)$/;
const REAL_ENV_FILE = /^\.env(?:\..+)?$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

type FileKind = "js" | "python" | "example" | "dotenv";

interface Mention {
  name: string;
  line: number;
  /** Code references only: the code has a fallback when the variable is unset. */
  hasDefault?: boolean;
  /** Example files only. */
  value?: string;
}

function kindOf(path: string): FileKind | null {
  const segments = path.split("/");
  if (segments.slice(0, -1).some((segment) => SKIPPED_DIRECTORIES.has(segment))) return null;
  const name = segments[segments.length - 1]!;
  if (EXAMPLE_FILE.test(name)) return "example";
  if (REAL_ENV_FILE.test(name)) return "dotenv";
  const extension = name.includes(".") ? name.slice(name.lastIndexOf(".") + 1).toLowerCase() : "";
  if (JS_EXTENSIONS.has(extension)) return "js";
  if (extension === "py") return "python";
  return null;
}

/** Returns the 1-based line of a character offset. */
function lineLocator(text: string): (offset: number) => number {
  const starts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return (offset) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (starts[middle]! <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
}

/** `||`, `??` (and their assignments) or a plain assignment right after an access: the code copes without it. */
function fallbackFollows(text: string, offset: number): boolean {
  return /^\s*(?:\|\||\?\?|=(?!=))/.test(text.slice(offset, offset + 200));
}

// ---------------------------------------------------------------------------------------------
// JavaScript / TypeScript / Vue / Svelte

const ENV_OBJECT = String.raw`(?:process\s*\??\.\s*env|import\s*\.\s*meta\s*\.\s*env|Bun\s*\.\s*env)`;
// process.env.X, process.env?.X, process.env["X"], process.env?.['X'], process.env[`X`], and the same on import.meta.env and Bun.env.
const JS_ACCESS = new RegExp(
  String.raw`(?<![\w$])${ENV_OBJECT}\s*(?:\??\.\s*([A-Za-z_$][\w$]*)|(?:\?\.)?\s*\[\s*(["'\x60])([^"'\x60\\\n]*)\2\s*\])`,
  "g",
);
// const { A, B = "x", C: c } = process.env
const JS_DESTRUCTURING = new RegExp(String.raw`\b(?:const|let|var)\s*\{([^{}]*)\}\s*=\s*${ENV_OBJECT}(?![\w$]|\s*[.[])`, "g");

function scanJavaScript(text: string): Mention[] {
  const lineOf = lineLocator(text);
  const mentions: Mention[] = [];
  for (const match of text.matchAll(JS_ACCESS)) {
    const end = match.index + match[0].length;
    const name = match[1] ?? match[3]!;
    if (!ENV_NAME.test(name)) continue;
    // process.env.hasOwnProperty(...) is a method call, not a variable.
    if (match[1] !== undefined && /^\s*\(/.test(text.slice(end, end + 50))) continue;
    const nameOffset = match.index + match[0].lastIndexOf(name);
    mentions.push({ name, line: lineOf(nameOffset), hasDefault: fallbackFollows(text, end) });
  }
  for (const match of text.matchAll(JS_DESTRUCTURING)) {
    const body = match[1]!;
    const bodyOffset = match.index + match[0].indexOf("{") + 1;
    for (const part of splitTopLevel(body, ",")) {
      const binding = /^\s*(["']?)([A-Za-z_$][\w$]*)\1\s*(?::\s*[A-Za-z_$][\w$]*\s*)?(=)?/.exec(part.text);
      if (!binding || !ENV_NAME.test(binding[2]!)) continue;
      const nameOffset = bodyOffset + part.offset + part.text.indexOf(binding[2]!);
      mentions.push({ name: binding[2]!, line: lineOf(nameOffset), hasDefault: binding[3] === "=" });
    }
  }
  return mentions;
}

/** Splits on `separator` outside brackets and quotes, keeping each piece's offset. */
function splitTopLevel(text: string, separator: string): { text: string; offset: number }[] {
  const pieces: { text: string; offset: number }[] = [];
  let depth = 0;
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quote) {
      if (char === "\\") i++;
      else if (char === quote) quote = null;
    } else if (char === '"' || char === "'" || char === "`") quote = char;
    else if ("([{".includes(char)) depth++;
    else if (")]}".includes(char)) depth--;
    else if (char === separator && depth === 0) {
      pieces.push({ text: text.slice(start, i), offset: start });
      start = i + 1;
    }
  }
  pieces.push({ text: text.slice(start), offset: start });
  return pieces;
}

// ---------------------------------------------------------------------------------------------
// Python

const PY_SUBSCRIPT = /(?<![\w.])os\s*\.\s*environ\s*\[\s*(["'])([^"'\\\n]*)\1\s*\]/g;
const PY_CALL = /(?<![\w.])os\s*\.\s*(environ\s*\.\s*get|environ\s*\.\s*setdefault|getenv)\s*\(\s*(["'])([^"'\\\n]*)\2/g;

function scanPython(text: string): Mention[] {
  const lineOf = lineLocator(text);
  const mentions: Mention[] = [];
  for (const match of text.matchAll(PY_SUBSCRIPT)) {
    const name = match[2]!;
    if (!ENV_NAME.test(name)) continue;
    const nameOffset = match.index + match[0].lastIndexOf(name);
    const end = match.index + match[0].length;
    // os.environ["X"] raises KeyError when unset, unless this line assigns it.
    const assigns = /^\s*=(?!=)/.test(text.slice(end, end + 20));
    mentions.push({ name, line: lineOf(nameOffset), hasDefault: assigns });
  }
  for (const match of text.matchAll(PY_CALL)) {
    const name = match[3]!;
    if (!ENV_NAME.test(name)) continue;
    const nameOffset = match.index + match[0].lastIndexOf(name);
    const setsDefault = match[1]!.replace(/\s/g, "").endsWith("setdefault");
    const hasDefault = setsDefault || pythonCallHasFallback(text, match.index + match[0].length);
    mentions.push({ name, line: lineOf(nameOffset), hasDefault });
  }
  return mentions;
}

/** After the name's closing quote: a second argument other than None, or `) or x`. */
function pythonCallHasFallback(text: string, offset: number): boolean {
  const rest = text.slice(offset, offset + 500);
  let depth = 0;
  let quote: string | null = null;
  for (let i = 0; i < rest.length; i++) {
    const char = rest[i]!;
    if (quote) {
      if (char === "\\") i++;
      else if (char === quote) quote = null;
    } else if (char === '"' || char === "'") quote = char;
    else if ("([{".includes(char)) depth++;
    else if (")]}".includes(char) && depth > 0) depth--;
    else if (char === ")") {
      const args = rest.slice(0, i).trim();
      if (args.startsWith(",")) {
        const fallback = args.slice(1).trim().replace(/^default\s*=\s*/, "").replace(/,$/, "").trim();
        if (fallback !== "" && fallback !== "None") return true;
      }
      return /^\s*or\b/.test(rest.slice(i + 1));
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// .env-style files

/**
 * Parses KEY=value lines (`export KEY=`, comments, single, double and backtick quotes, quoted
 * values over several lines). With `withValues` false the values are skipped, not kept.
 */
function parseDotenv(text: string, withValues: boolean): Mention[] {
  const mentions: Mention[] = [];
  let position = 0;
  let line = 1;
  while (position < text.length) {
    const newline = text.indexOf("\n", position);
    const lineEnd = newline === -1 ? text.length : newline;
    const assignment = /^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*/.exec(text.slice(position, lineEnd));
    let next = lineEnd + 1;
    if (assignment) {
      const name = assignment[1]!;
      const valueStart = position + assignment[0].length;
      const quote = text[valueStart];
      let value = "";
      const closing = quote === '"' || quote === "'" || quote === "`" ? findClosingQuote(text, valueStart) : -1;
      if (closing !== -1) {
        if (withValues) value = text.slice(valueStart + 1, closing);
        if (withValues && quote === '"') value = value.replace(/\\([nrt"\\])/g, (_, c: string) => ({ n: "\n", r: "\r", t: "\t" })[c] ?? c);
        const after = text.indexOf("\n", closing);
        next = after === -1 ? text.length : after + 1;
      } else if (withValues) {
        value = text.slice(valueStart, lineEnd).replace(/\r$/, "");
        value = (value.startsWith("#") ? "" : value.replace(/[ \t]+#.*$/, "")).trim();
      }
      mentions.push(withValues ? { name, line, value } : { name, line });
    }
    for (let i = position; i < Math.min(next, text.length); i++) if (text[i] === "\n") line++;
    position = next;
  }
  return mentions;
}

function findClosingQuote(text: string, openAt: number): number {
  const quote = text[openAt];
  for (let i = openAt + 1; i < text.length; i++) {
    if (text[i] === "\\" && quote === '"') i++;
    else if (text[i] === quote) return i;
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Inspection

function scan(kind: FileKind, text: string): Mention[] {
  switch (kind) {
    case "js":
      return scanJavaScript(text);
    case "python":
      return scanPython(text);
    case "example":
      return parseDotenv(text, true);
    case "dotenv":
      return parseDotenv(text, false);
  }
}

/** Every regular file under `root`, into one list: a deep tree no longer copies its list up every level. */
async function listFiles(root: string, relative = "", found: string[] = []): Promise<string[]> {
  for (const entry of await readdir(join(root, relative), { withFileTypes: true })) {
    const path = relative ? `${relative}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRECTORIES.has(entry.name)) await listFiles(root, path, found);
    } else if (entry.isFile()) {
      found.push(path);
    }
  }
  return found;
}

/**
 * Inspects an app given as a map of relative path -> content, or as a directory on disk (symlinks
 * are not followed). Skips node_modules, .git, dist, build, .next, __pycache__, venv and .venv, and
 * files over MAX_SCANNED_FILE_BYTES.
 */
export async function inspectEnv(source: Map<string, string> | string): Promise<EnvInspection> {
  const perFile: { file: string; kind: FileKind; mentions: Mention[] }[] = [];
  if (typeof source === "string") {
    for (const file of await listFiles(source)) {
      const kind = kindOf(file);
      if (!kind) continue;
      const path = join(source, file);
      if ((await lstat(path)).size > MAX_SCANNED_FILE_BYTES) continue;
      perFile.push({ file, kind, mentions: scan(kind, await readFile(path, "utf8")) });
    }
  } else {
    for (const [rawPath, text] of source) {
      const file = rawPath.replace(/^(?:\.\/)+/, "");
      const kind = kindOf(file);
      if (!kind || Buffer.byteLength(text) > MAX_SCANNED_FILE_BYTES) continue;
      perFile.push({ file, kind, mentions: scan(kind, text) });
    }
  }
  perFile.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));

  const byName = new Map<string, { references: EnvReference[]; code: Mention[]; examples: string[] }>();
  for (const { file, kind, mentions } of perFile) {
    for (const mention of mentions) {
      let variable = byName.get(mention.name);
      if (!variable) byName.set(mention.name, (variable = { references: [], code: [], examples: [] }));
      variable.references.push({ file, line: mention.line });
      if (kind === "js" || kind === "python") variable.code.push(mention);
      if (kind === "example" && mention.value) variable.examples.push(mention.value);
    }
  }

  const variables: EnvVariable[] = [...byName.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, { references, code, examples }]) => {
      const builtin = BUILTIN_VARIABLES.has(name);
      const alwaysFallsBack = code.length > 0 && code.every((mention) => mention.hasDefault);
      const variable: EnvVariable = {
        name,
        required: !builtin && !alwaysFallsBack,
        builtin,
        hasExampleValue: examples.length > 0,
        references: uniqueReferences(references),
      };
      if (examples.length > 0) variable.exampleValue = examples[0];
      return variable;
    });
  return { variables };
}

function uniqueReferences(references: EnvReference[]): EnvReference[] {
  const unique = new Map(references.map((reference) => [`${reference.line}:${reference.file}`, reference]));
  return [...unique.values()].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line));
}

/**
 * Inspects an uploaded ZIP: extracts it with every safety check of archive.ts into a temp dir
 * (under `tempParent`, the OS temp dir by default) that is removed afterwards, whatever happens.
 */
export async function inspectEnvInZip(
  zipFile: string,
  limits: ArchiveLimits,
  tempParent: string = tmpdir(),
): Promise<EnvInspection> {
  const workDir = await mkdtemp(join(tempParent, "inspect-env-"));
  try {
    const appDir = join(workDir, "app");
    await extractZip(zipFile, appDir, limits);
    return await inspectEnv(appDir);
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}
