// Reads `.env` text pasted into the environment editor: KEY=VALUE lines, `export` prefixes,
// comments, single or double quotes (double quotes unescape \n, \" and \\).

export interface ParsedEnv {
  envVars: Record<string, string>;
  /** Lines that are neither blank, a comment nor KEY=VALUE: 1-based numbers with their text. */
  skipped: { line: number; text: string }[];
}

const LINE = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/;

function unquote(raw: string): string {
  const quote = raw[0];
  if (quote === '"' || quote === "'") {
    // Double quotes may hold escaped quotes: find the closing one that is not escaped.
    if (quote === '"') {
      let index = 1;
      while (index < raw.length && raw[index] !== '"') index += raw[index] === "\\" ? 2 : 1;
      const inner = raw.slice(1, index);
      return inner.replace(/\\(.)/g, (_, escaped: string) => (escaped === "n" ? "\n" : escaped === "r" ? "\r" : escaped === "t" ? "\t" : escaped));
    }
    const end = raw.indexOf(quote, 1);
    return end === -1 ? raw.slice(1) : raw.slice(1, end);
  }
  // Unquoted: a `#` after a space starts a comment.
  return raw.replace(/\s+#.*$/, "").trim();
}

export function parseDotEnv(text: string): ParsedEnv {
  const envVars: Record<string, string> = {};
  const skipped: ParsedEnv["skipped"] = [];
  text.split(/\r?\n/).forEach((line, index) => {
    const trimmed = line.trim();
    if (!trimmed || trimmed.startsWith("#")) return;
    const match = LINE.exec(line);
    if (!match) return skipped.push({ line: index + 1, text: trimmed.slice(0, 80) });
    envVars[match[1]!] = unquote(match[2]!.trim());
  });
  return { envVars, skipped };
}
