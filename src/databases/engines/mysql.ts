// MySQL on the official `mysql` image: MYSQL_ROOT_PASSWORD, MYSQL_DATABASE, MYSQL_USER and
// MYSQL_PASSWORD set up an empty data dir on first start. The database's password is also root's
// (the instance is the user's own), so a rotation changes every account that holds it: the user
// and root, at '%' and 'localhost' where they exist. Clients get the password from MYSQL_PWD.
import { parseCountLines, type Credentials, type EngineCommand, type EngineDefinition, type Probe } from "./types";
import { asciiOf, mysqlString, userInfo } from "./text";

const PORT = 3306;
const ROOT = "root";
/** MySQL 8 limits account names to 32 characters. */
const MAX_USERNAME = 32;
const RESERVED_DATABASES = new Set(["mysql", "information_schema", "performance_schema", "sys"]);

/** --connect-timeout bounds the connection and the server's greeting, so a hung server cannot hold a probe. */
function client(user: string, password: string, ...extra: string[]): Pick<EngineCommand, "argv" | "env"> {
  return {
    argv: ["mysql", "-h", "127.0.0.1", "-P", String(PORT), "-u", user, "--connect-timeout=5", ...extra],
    env: { MYSQL_PWD: password },
  };
}

/**
 * Exact row counts (COUNT(*), not the estimates of information_schema) of every table of the
 * database, `table<TAB>count` per line: one UNION ALL statement built from the table list, then run.
 */
const INVENTORY_SQL = [
  "SET SESSION group_concat_max_len = 4294967295;",
  "SELECT CONCAT(GROUP_CONCAT(CONCAT('SELECT ', QUOTE(TABLE_NAME), ', COUNT(*) FROM `', REPLACE(TABLE_NAME, '`', '``'), '`') SEPARATOR ' UNION ALL '), ' ORDER BY 1')",
  "INTO @platform_counts FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE';",
  "SET @platform_counts = IFNULL(@platform_counts, 'SELECT NULL, NULL FROM DUAL WHERE FALSE');",
  "PREPARE platform_counts FROM @platform_counts;",
  "EXECUTE platform_counts;",
  "DEALLOCATE PREPARE platform_counts;",
].join("\n");

function probeAs(user: string, credentials: Credentials): Probe {
  return { ...client(user, credentials.password, "-D", credentials.databaseName, "-N", "-B", "-e", "SELECT 1"), expectOutput: "1" };
}

function accounts(credentials: Credentials): string[] {
  return credentials.username === ROOT ? [ROOT] : [credentials.username, ROOT];
}

export const mysql: EngineDefinition = {
  engine: "mysql",
  title: "MySQL",
  defaultVersion: "8.4",
  officialRepository: "mysql",
  port: PORT,
  capabilities: ["CHOWN", "SETUID", "SETGID", "DAC_OVERRIDE", "FOWNER"],

  volumes: () => [{ suffix: "", containerPath: "/var/lib/mysql" }],

  environment({ credentials }) {
    const env: Record<string, string> = {
      MYSQL_ROOT_PASSWORD: credentials.password,
      MYSQL_DATABASE: credentials.databaseName,
    };
    // The image refuses MYSQL_USER=root: root is already made from MYSQL_ROOT_PASSWORD.
    if (credentials.username !== ROOT) {
      env.MYSQL_USER = credentials.username;
      env.MYSQL_PASSWORD = credentials.password;
    }
    return env;
  },

  command: () => undefined,
  configFiles: () => ({}),

  credentialProblems({ username, databaseName }) {
    const problems: string[] = [];
    if (username.length > MAX_USERNAME) problems.push(`MySQL usernames have at most ${MAX_USERNAME} characters`);
    if (RESERVED_DATABASES.has(databaseName)) problems.push(`'${databaseName}' is a MySQL system database`);
    return problems;
  },

  connectionString(credentials, host, port) {
    return `mysql://${userInfo(credentials.username, credentials.password)}@${host}:${port}/${credentials.databaseName}`;
  },

  readinessProbe: (credentials) => probeAs(credentials.username, credentials),
  passwordProbes: (credentials) => accounts(credentials).map((user) => probeAs(user, credentials)),

  rotatePassword(credentials, newPassword) {
    const statements = ["SET SESSION sql_mode = REPLACE(@@sql_mode, 'NO_BACKSLASH_ESCAPES', '');"];
    for (const user of accounts(credentials)) {
      for (const host of ["%", "localhost"]) {
        statements.push(`ALTER USER IF EXISTS '${user}'@'${host}' IDENTIFIED BY ${mysqlString(newPassword)};`);
      }
    }
    return { ...client(ROOT, credentials.password), stdin: `${statements.join("\n")}\n` };
  },

  applyMemory: () => null,

  inventory(credentials) {
    return client(credentials.username, credentials.password, "-D", credentials.databaseName, "-N", "-B", "-e", INVENTORY_SQL);
  },
  parseInventory: parseCountLines,

  dump(credentials) {
    return {
      argv: [
        "mysqldump", "-h", "127.0.0.1", "-P", String(PORT), "-u", credentials.username,
        "--single-transaction", "--routines", "--triggers", "--no-tablespaces", credentials.databaseName,
      ],
      env: { MYSQL_PWD: credentials.password },
    };
  },

  dumpFormat: "sql",
  // mysqldump and mariadb-dump open with their banner (recent mariadb-dump puts a sandbox-mode
  // comment line before it) and close with "Dump completed".
  dumpProblem({ head, tail }) {
    if (!/^-- (MySQL|MariaDB) dump/m.test(asciiOf(head))) return "the output is not a mysqldump SQL dump";
    if (!asciiOf(tail).includes("-- Dump completed")) return "the dump ended before mysqldump's completion line";
    return null;
  },

  restore({ credentials }) {
    return { mode: "stream", command: client(credentials.username, credentials.password, credentials.databaseName) };
  },
};
