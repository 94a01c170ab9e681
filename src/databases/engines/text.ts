// Quoting helpers shared by the engine files. Usernames and database names already match
// ^[a-z_][a-z0-9_]*$ (src/databases/model.ts); only passwords need escaping, and they only ever
// travel on stdin or in env/files, never in argv.

/** `user:password` for a URL's userinfo, percent-encoded. */
export function userInfo(username: string, password: string): string {
  return `${encodeURIComponent(username)}:${encodeURIComponent(password)}`;
}

/** Standard SQL string literal (PostgreSQL with standard_conforming_strings on): quotes doubled. */
export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** MySQL/MariaDB string literal for the default sql_mode (backslash escapes on). */
export function mysqlString(value: string): string {
  return `'${value.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
}

/** A JSON string is a valid YAML double-quoted scalar. */
export function yamlString(value: string): string {
  return JSON.stringify(value);
}

export function majorVersion(version: string): number | null {
  const match = /^(\d+)/.exec(version);
  return match ? Number(match[1]) : null;
}

/** The bytes as latin1 text (dump headers and markers are ASCII). */
export function asciiOf(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
}
