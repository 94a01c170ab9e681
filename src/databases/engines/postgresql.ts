// PostgreSQL on the official `postgres` image: POSTGRES_USER (a superuser), POSTGRES_PASSWORD and
// POSTGRES_DB set up an empty data dir on first start; clients authenticate with the password
// over TCP. Commands run psql/pg_dump inside the container with PGPASSWORD in their environment.
import { parseCountLines, type Credentials, type EngineCommand, type EngineDefinition, type Probe } from "./types";
import { asciiOf, majorVersion, sqlString, userInfo } from "./text";

const PORT = 5432;
const RESERVED_DATABASES = new Set(["template0", "template1"]);

/** libpq's connect_timeout: it bounds the connection and the authentication, so a hung server cannot hold a probe. */
function clientEnv(credentials: Credentials): Record<string, string> {
  return { PGPASSWORD: credentials.password, PGCONNECT_TIMEOUT: "5" };
}

/** psql over TCP (not the trusted local socket), so the password is really checked. */
function psql(credentials: Credentials, ...extra: string[]): string[] {
  return ["psql", "-X", "-h", "127.0.0.1", "-p", String(PORT), "-U", credentials.username, "-d", credentials.databaseName, ...extra];
}

/**
 * Exact row counts of every table outside the system schemas, `schema.table<TAB>count` per line:
 * query_to_xml runs one `count(*)` per table from within a single query.
 */
const INVENTORY_SQL = [
  "SELECT format('%s.%s', table_schema, table_name),",
  "(xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM %I.%I', table_schema, table_name), false, true, '')))[1]::text",
  "FROM information_schema.tables",
  "WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')",
  "ORDER BY table_schema, table_name",
].join(" ");

function probe(credentials: Credentials): Probe {
  return { argv: psql(credentials, "-tA", "-c", "SELECT 1"), env: clientEnv(credentials), expectOutput: "1" };
}

export const postgresql: EngineDefinition = {
  engine: "postgresql",
  title: "PostgreSQL",
  defaultVersion: "17",
  officialRepository: "postgres",
  port: PORT,
  capabilities: ["CHOWN", "SETUID", "SETGID", "DAC_OVERRIDE", "FOWNER"],

  // From 18 on the official image keeps its data under /var/lib/postgresql/<major>/docker and
  // declares VOLUME /var/lib/postgresql; before, VOLUME /var/lib/postgresql/data. Mount exactly
  // the declared path, or Docker adds an anonymous volume that would hold the data instead.
  volumes(version) {
    const major = majorVersion(version);
    const modern = major === null || major >= 18;
    return [{ suffix: "", containerPath: modern ? "/var/lib/postgresql" : "/var/lib/postgresql/data" }];
  },

  environment({ credentials }) {
    return {
      POSTGRES_USER: credentials.username,
      POSTGRES_PASSWORD: credentials.password,
      POSTGRES_DB: credentials.databaseName,
    };
  },

  command: () => undefined,
  configFiles: () => ({}),

  credentialProblems({ username, databaseName }) {
    const problems: string[] = [];
    if (username.startsWith("pg_")) problems.push("PostgreSQL role names cannot begin with 'pg_'");
    if (RESERVED_DATABASES.has(databaseName)) problems.push(`'${databaseName}' is a PostgreSQL template database`);
    return problems;
  },

  connectionString(credentials, host, port) {
    return `postgresql://${userInfo(credentials.username, credentials.password)}@${host}:${port}/${credentials.databaseName}`;
  },

  readinessProbe: probe,
  passwordProbes: (credentials) => [probe(credentials)],

  rotatePassword(credentials, newPassword): EngineCommand {
    // log_statement off for this session: the statement carries the new password.
    const sql = [
      "SET standard_conforming_strings = on;",
      "SET log_statement = 'none';",
      `ALTER ROLE "${credentials.username}" WITH PASSWORD ${sqlString(newPassword)};`,
      "",
    ].join("\n");
    return { argv: psql(credentials, "-q", "-v", "ON_ERROR_STOP=1"), env: clientEnv(credentials), stdin: sql };
  },

  applyMemory: () => null,

  inventory(credentials) {
    return { argv: psql(credentials, "-tA", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", INVENTORY_SQL), env: clientEnv(credentials) };
  },
  parseInventory: parseCountLines,

  dump(credentials) {
    return {
      argv: [
        "pg_dump", "-h", "127.0.0.1", "-p", String(PORT), "-U", credentials.username, "-d", credentials.databaseName,
        "--clean", "--if-exists", "--no-owner", "--no-privileges",
      ],
      env: clientEnv(credentials),
    };
  },

  dumpFormat: "sql",
  // pg_dump's plain format opens with its banner and closes with "dump complete".
  dumpProblem({ head, tail }) {
    if (asciiOf(head).startsWith("PGDMP")) return "it is a pg_dump custom-format archive, which psql cannot load: make a plain SQL dump (pg_dump -Fp)";
    if (!asciiOf(head).startsWith("--\n-- PostgreSQL database dump")) return "the output is not a pg_dump SQL dump";
    if (!asciiOf(tail).includes("-- PostgreSQL database dump complete")) return "the dump ended before pg_dump's completion line";
    return null;
  },

  // One transaction that only the last bytes commit: a load cut off anywhere (even by a kill of the
  // platform, which ends psql's input) rolls back, where `psql -1` would commit what it had read.
  restore({ credentials }) {
    return {
      mode: "stream",
      command: { argv: psql(credentials, "-q", "-v", "ON_ERROR_STOP=1"), env: clientEnv(credentials) },
      opening: "BEGIN;\n",
      closing: "\nCOMMIT;\n",
    };
  },
};
