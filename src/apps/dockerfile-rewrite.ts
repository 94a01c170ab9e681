// The Dockerfile the engine builds: re-emitted from the platform's own parse of the user's, so the
// engine never reads the user's text and no difference between the two parsers can hide a line.
//
// The platform's parse: a leading `# escape=` directive (`\` or a backtick; Go's whitespace, not
// JavaScript's), comment and blank lines skipped, a line ending in the escape character continued
// on the next. What it emits: one instruction per line, no directive, no comment, no line that ends
// in a backslash; ADD and COPY in the JSON form, their words resolved here and plain (no quotes or
// escapes left for the engine to read); FROM and COPY --from naming an earlier stage, `scratch`, or
// an image by the ID the platform pinned (./dockerfile-images.ts). Other instructions keep their
// text: nothing in them makes the engine fetch anything, and their RUN steps run on the workspace
// network. Refused: ONBUILD (it runs in later builds), ADD of a URL, a git source or a variable (the
// engine fetches those from the host's network; COPY of a URL too), unknown instructions and
// flags, a line ending in two escape characters (engines differ on whether it continues).
import { imageReferenceRefusal } from "./dockerfile-images";

/** Go regexp's `\s`: ASCII only, unlike JavaScript's (U+00A0 is no space to the engine). */
const GO_SPACE = "[\\t\\n\\f\\r ]";
/** A parser directive, on a line without trailing spaces (a pattern ending in `\s*$` backtracks quadratically on long lines). */
const PARSER_DIRECTIVE = new RegExp(`^#${GO_SPACE}*([a-zA-Z][a-zA-Z0-9]*)${GO_SPACE}*=${GO_SPACE}*(.+)$`, "s");
const SKIPPED_LINE = /^[ \t]*(?:#.*)?$/s;
const INSTRUCTION = /^[ \t]*([A-Za-z]+)(?:[ \t]+(.*))?$/s;
/** What the engine's parser splits words on. */
const WORD_SEPARATOR = /[\t\v\f\r ]+/;
const SEPARATOR_CHARACTERS = new Set(["\t", "\v", "\f", "\r", " "]);
const CONTROL_CHARACTER = /[\x00-\x08\x0a-\x1f\x7f]/;
/** Stage names, as the engine takes them. */
const STAGE_NAME = /^[a-z][a-z0-9._-]*$/;
/** A flag value emitted as it is: nothing in it for the engine's word parser to resolve. */
const PLAIN_FLAG_VALUE = /^[A-Za-z0-9._:${}-]+$/;
/** Characters the engine's word parser would read as quotes or escapes in an emitted ADD/COPY word. */
const QUOTE_OR_ESCAPE = /["'\\]/;

/** Instructions emitted with their own text: the engine never fetches anything for them. */
const KEPT = new Set(["RUN", "CMD", "ENTRYPOINT", "SHELL", "HEALTHCHECK", "MAINTAINER", "ENV", "ARG", "LABEL", "WORKDIR", "USER", "EXPOSE", "VOLUME", "STOPSIGNAL"]);
/** Of those, the ones whose words the engine resolves quotes and escapes in (with the escape character of the file). */
const WORD_PARSED = new Set(["ENV", "ARG", "LABEL", "WORKDIR", "USER", "EXPOSE", "VOLUME", "STOPSIGNAL"]);
const COPY_FLAGS = new Set(["from", "chown", "chmod"]);
const ADD_FLAGS = new Set(["chown", "chmod"]);
const USE_RUN_INSTEAD = "the engine would fetch it from the platform's own network; use RUN curl/wget, which runs on the workspace network";

export interface DockerfileRewrite {
  /** Why lines were refused, each quoting its line; the build must not run when there are any. */
  refusals: string[];
  /** Lines for the build log: what was changed on the way. */
  notes: string[];
  /** The images FROM and COPY --from name (not stages, not scratch), each with the first line naming it. */
  images: Map<string, string>;
  /** The Dockerfile for the engine, each image named by what `pin` answers for its reference. */
  render(pin: (reference: string) => string): string;
}

type Pin = (reference: string) => string;

/** The message for a refused line, quoting it (shortened) as the user wrote it, continuations joined. */
export const refusal = (line: string, reason: string) => `the Dockerfile's line "${line.replace(/\s+/g, " ").trim().slice(0, 120)}" ${reason}`;

interface SourceInstruction {
  /** The instruction's text, continuation lines joined. */
  text: string;
  /** Set when the parse itself refuses it. */
  refused?: string;
}

/** `text` without the given characters at its end (a loop: `/[ \t]+$/` is quadratic on a long run of spaces followed by other text). */
function trimEnd(text: string, characters: string): string {
  let end = text.length;
  while (end > 0 && characters.includes(text[end - 1]!)) end--;
  return text.slice(0, end);
}

/** The leading parser directives' escape character and the instructions after them. */
function sourceInstructions(text: string): { escape: string; instructions: SourceInstruction[]; refusals: string[] } {
  const lines = text.replace(/^\uFEFF/, "").split("\n").map((line) => line.replace(/\r$/, ""));
  const refusals: string[] = [];
  let escape = "\\";
  let index = 0;
  for (; index < lines.length; index++) {
    const directive = PARSER_DIRECTIVE.exec(trimEnd(lines[index]!, "\t\n\f\r "));
    if (!directive) break;
    if (directive[1]!.toLowerCase() !== "escape") continue;
    if (directive[2] === "\\" || directive[2] === "`") escape = directive[2];
    else refusals.push(refusal(lines[index]!, "sets an escape character other than \\ or `"));
  }
  const instructions: SourceInstruction[] = [];
  for (; index < lines.length; index++) {
    if (SKIPPED_LINE.test(lines[index]!)) continue;
    let joined = "";
    let refused: string | undefined;
    for (let line = lines[index]!; ; line = lines[index]!) {
      const trimmed = trimEnd(line, " \t");
      if (trimmed.endsWith(escape + escape)) {
        joined += line;
        refused = `ends in two escape characters (${escape}${escape}): engines differ on whether that continues it; end it with one to go on, or with none`;
        break;
      }
      if (!trimmed.endsWith(escape)) {
        joined += line;
        break;
      }
      joined += trimmed.slice(0, -1);
      do index++;
      while (index < lines.length && SKIPPED_LINE.test(lines[index]!));
      if (index >= lines.length) break;
    }
    instructions.push({ text: joined, refused });
  }
  return { escape, instructions, refusals };
}

/**
 * One word as the engine's word parser resolves it: quotes removed, escaped characters taken as
 * they are; `plain` when it had neither. Undefined when a quote is left open.
 */
function resolveWord(word: string, escape: string): { text: string; plain: boolean } | undefined {
  let text = "";
  let plain = true;
  let quote: string | undefined;
  for (let index = 0; index < word.length; index++) {
    const char = word[index]!;
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else text += char;
    } else if (char === quote) quote = undefined;
    else if (char === escape && index + 1 < word.length) {
      plain = false;
      const next = word[++index]!;
      // Within double quotes only a quote, `$` and the escape itself are escaped.
      text += quote && next !== '"' && next !== "$" && next !== escape ? char + next : next;
    } else if (!quote && (char === '"' || char === "'")) {
      plain = false;
      quote = char;
    } else text += char;
  }
  return quote ? undefined : { text, plain };
}

/** The leading `--name=value` flags of an instruction's arguments (quotes and escapes resolved), and the text after them. */
function leadingFlags(text: string, escape: string): { flags: { name: string; value: string }[]; rest: string } | string {
  const flags: { name: string; value: string }[] = [];
  let position = 0;
  for (;;) {
    while (position < text.length && SEPARATOR_CHARACTERS.has(text[position]!)) position++;
    if (!text.startsWith("--", position)) return { flags, rest: text.slice(position) };
    const start = position;
    while (position < text.length && !SEPARATOR_CHARACTERS.has(text[position]!)) position++;
    const word = resolveWord(text.slice(start, position), escape);
    if (!word) return "leaves a quote open in a flag";
    const flag = /^--([A-Za-z][A-Za-z0-9-]*)=(.*)$/s.exec(word.text);
    if (!flag) return `has the flag ${word.text}, which is not --name=value`;
    flags.push({ name: flag[1]!.toLowerCase(), value: flag[2]! });
  }
}

/** ADD's and COPY's sources and destination: a JSON array of strings, or words; each resolved as the engine's word parser would. */
function sourcesAndDestination(args: string, escape: string): string[] | string {
  let words: string[] | undefined;
  if (args.startsWith("[")) {
    try {
      const list: unknown = JSON.parse(args);
      if (Array.isArray(list) && list.every((item) => typeof item === "string")) words = list;
    } catch {
      // not the JSON form: words
    }
  }
  words ??= args.split(WORD_SEPARATOR).filter(Boolean);
  const resolved: string[] = [];
  for (const word of words) {
    const { text, plain } = resolveWord(word, escape) ?? {};
    if (text === undefined) return "leaves a quote open";
    if (QUOTE_OR_ESCAPE.test(text) || CONTROL_CHARACTER.test(text)) return "has a path with a quote, a backslash or a control character in it: rename the file";
    if (text.includes("$") && !plain) return "has a variable in a quoted or escaped word: write it plainly";
    resolved.push(text);
  }
  return resolved.length < 2 ? "needs a source and a destination" : resolved;
}

/** Reads the user's Dockerfile and plans the one the engine builds. `registries`: PLATFORM_BUILD_REGISTRIES. */
export function rewriteDockerfile(text: string, registries: readonly string[] = []): DockerfileRewrite {
  const { escape, instructions, refusals } = sourceInstructions(text);
  const notes: string[] = [];
  const images = new Map<string, string>();
  const lines: ((pin: Pin) => string)[] = [];
  /** The index of each named stage so far. */
  const stageIndexes = new Map<string, number>();
  let stageCount = 0;

  /** What FROM or COPY --from names (the stages before `earlierStages` only), as the emitted line names it; or why it may not be named (a string). */
  const target = (reference: string, earlierStages: number, line: string, byIndex: boolean): ((pin: Pin) => string) | string => {
    const name = reference.toLowerCase();
    if (name === "scratch") return () => "scratch";
    const stage = stageIndexes.get(name);
    if (stage !== undefined && stage < earlierStages) return byIndex ? () => String(stage) : () => name;
    if (byIndex && /^\d+$/.test(name)) {
      if (Number(name) < earlierStages) return () => String(Number(name));
      return "names a stage that does not come before it";
    }
    if (!images.has(reference)) {
      const refused = imageReferenceRefusal(reference, registries);
      if (refused) return refused;
      images.set(reference, line);
    }
    return (pin) => pin(reference);
  };

  const plan = (line: string, keyword: string, args: string): ((pin: Pin) => string) | string => {
    if (keyword === "ONBUILD") return "is refused: ONBUILD instructions would run unchecked in later builds; write them in the stage that needs them";
    if (KEPT.has(keyword)) {
      if (keyword === "RUN" && args.startsWith("--")) return "has a flag: RUN takes none with the engine's classic builder";
      if (escape !== "\\" && WORD_PARSED.has(keyword) && /[\\`]/.test(args)) return "has a \\ or a backtick under `# escape=``: write it without them";
      return () => `${keyword} ${args}`;
    }
    if (keyword !== "FROM" && keyword !== "COPY" && keyword !== "ADD") return `is not a Dockerfile instruction the platform builds`;
    const parsed = leadingFlags(args, escape);
    if (typeof parsed === "string") return parsed;
    if (keyword === "FROM") {
      for (const flag of parsed.flags) {
        if (flag.name !== "platform") return `has the flag --${flag.name}, which FROM does not take`;
        notes.push(`    --platform=${flag.value} is not used: a base image is the one on the engine, pinned by its ID`);
      }
      const words = parsed.rest.split(WORD_SEPARATOR).filter(Boolean);
      if (!(words.length === 1 || (words.length === 3 && words[1]!.toLowerCase() === "as"))) return "is not FROM <image> [AS <name>]";
      const stageName = words[2]?.toLowerCase();
      if (stageName !== undefined && !STAGE_NAME.test(stageName)) return "names its stage with other characters than letters, digits, '.', '_' and '-' (starting with a letter)";
      if (stageName === "scratch") return "names its stage scratch, the empty image's name";
      if (stageName !== undefined && stageIndexes.has(stageName)) return "names a stage that an earlier stage is already named";
      const base = target(words[0]!, stageCount, line, false);
      if (stageName !== undefined) stageIndexes.set(stageName, stageCount);
      stageCount++;
      if (typeof base === "string") return base;
      return (pin) => `FROM ${base(pin)}${stageName ? ` AS ${stageName}` : ""}`;
    }
    const allowed = keyword === "COPY" ? COPY_FLAGS : ADD_FLAGS;
    const flags: ((pin: Pin) => string)[] = [];
    for (const { name, value } of parsed.flags) {
      if (!allowed.has(name)) return `has the flag --${name}, which ${keyword} does not take here`;
      if (name === "from") {
        const source = target(value, stageCount - 1, line, true);
        if (typeof source === "string") return source;
        flags.push((pin) => `--from=${source(pin)}`);
      } else if (!PLAIN_FLAG_VALUE.test(value)) return `has --${name}=${value}: write the value plainly`;
      else flags.push(() => `--${name}=${value}`);
    }
    const words = sourcesAndDestination(parsed.rest, escape);
    if (typeof words === "string") return words;
    for (const source of words.slice(0, -1)) {
      if (keyword === "ADD" && source.includes("$")) return `names its source through a variable, which could make it a URL: ${USE_RUN_INSTEAD}`;
      // COPY never fetches (the engine refuses a URL there): refused all the same, whatever an engine does.
      if (/:\/\/|git@/i.test(source)) return `fetches a remote source: ${USE_RUN_INSTEAD}`;
    }
    return (pin) => [keyword, ...flags.map((flag) => flag(pin)), JSON.stringify(words)].join(" ");
  };

  for (const instruction of instructions) {
    const line = instruction.text;
    const parts = INSTRUCTION.exec(line);
    let planned: ((pin: Pin) => string) | string;
    if (instruction.refused) planned = instruction.refused;
    else if (CONTROL_CHARACTER.test(line)) planned = "has a control character in it";
    else if (!parts) planned = "is not an instruction (a keyword, then its arguments)";
    else {
      const args = trimEnd(parts[2] ?? "", " \t");
      // The engine would continue such a line with the next: no emitted line may end so.
      planned = args.endsWith("\\") ? "ends in a backslash: nothing follows it to continue" : plan(line, parts[1]!.toUpperCase(), args);
    }
    if (typeof planned === "string") refusals.push(refusal(line, planned));
    else lines.push(planned);
  }
  if (!stageCount && !refusals.length) refusals.push("the Dockerfile has no FROM instruction");
  return { refusals, notes, images, render: (pin) => `${lines.map((line) => line(pin)).join("\n")}\n` };
}
