// What the platform needs to know about one database engine, as pure data and pure functions:
// the container's image, environment, command, data path, port and capabilities; the connection
// string; and the commands run inside the container (readiness probe, password rotation, dump,
// restore). Commands are argv arrays: secrets travel in `env`, `stdin` or short-lived `files`,
// never in argv, so `ps` inside or outside the container never shows them.
import type { DumpSample } from "../../backups/storage";
import type { Engine } from "../../config";
import type { Capability } from "../../docker/container-spec";

export type { Engine };

export interface Credentials {
  username: string;
  password: string;
  databaseName: string;
}

export interface EngineCommand {
  argv: string[];
  env?: Record<string, string>;
  /** Text fed on stdin, e.g. SQL carrying a password. */
  stdin?: string;
  /** Files (absolute path -> content) written into the container just before the command and removed after it. */
  files?: Record<string, string>;
  /** When set, the command only succeeded if its trimmed stdout is exactly this (redis-cli exits 0 on errors). */
  expectOutput?: string;
  /** A dump written to this file in the container rather than to stdout; it is read from there, then removed. */
  outputFile?: string;
  /** argv of the engine's own checker, run on `outputFile` before it is read out: it must exit 0 (redis-check-rdb). */
  outputCheck?: string[];
}

/** A query that needs the credentials and answers `expectOutput` only when they are accepted. */
export interface Probe extends EngineCommand {
  expectOutput: string;
}

export interface VolumeMount {
  /** Appended to the database's volume name; "" is the main data volume. */
  suffix: string;
  containerPath: string;
}

/**
 * How a dump goes back in.
 * `stream`: the dump is fed to `command` on stdin while the engine runs, after `opening` and, only
 * once the whole dump went in, `closing` (a transaction the last bytes commit).
 * `data-file`: the engine is stopped, the dump written as `fileName` in `directory`, the engine
 * started once with `bootFiles` (so it loads that file), `afterStart` run, `settled` polled until
 * `isDone` says so, then the engine's own config files written back.
 */
export type RestorePlan =
  | { mode: "stream"; command: EngineCommand; opening?: string; closing?: string }
  | {
      mode: "data-file";
      directory: string;
      fileName: string;
      bootFiles: Record<string, string>;
      afterStart: EngineCommand[];
      settled: { command: EngineCommand; isDone(stdout: string): boolean };
    };

export type DumpFormat = "sql" | "rdb" | "archive";

export { DUMP_SAMPLE_BYTES, type DumpSample } from "../../backups/storage";

export interface ContainerSettings {
  credentials: Credentials;
  version: string;
  memoryMB: number;
}

export interface EngineDefinition {
  engine: Engine;
  /** Human name for messages: "PostgreSQL". */
  title: string;
  defaultVersion: string;
  /** Docker Hub repository of the official image ("postgres"): only then is the tag replaced by `version`. */
  officialRepository: string;
  port: number;
  capabilities: Capability[];
  /** Named volumes and where they are mounted; covers every VOLUME the official image declares, so none is anonymous. */
  volumes(version: string): VolumeMount[];
  environment(settings: ContainerSettings): Record<string, string>;
  /** argv of the container; undefined keeps the image's own CMD. */
  command(settings: ContainerSettings): string[] | undefined;
  /** Files (absolute path -> content) written into the container before every start. */
  configFiles(settings: ContainerSettings): Record<string, string>;
  /** Engine-specific rules the shared patterns don't cover (reserved names, length); a message per problem. */
  credentialProblems(credentials: Pick<Credentials, "username" | "databaseName">): string[];
  connectionString(credentials: Credentials, host: string, port: number): string;
  /** A real query over TCP with the credentials: the engine is ready only when it answers. */
  readinessProbe(credentials: Credentials): Probe;
  /** Probes of every account that holds the database password (old must fail and new must work after a rotation). */
  passwordProbes(credentials: Credentials): Probe[];
  /** Changes the password inside the engine, authenticated with the current one. */
  rotatePassword(credentials: Credentials, newPassword: string): EngineCommand;
  /** Applies a new memory size to the running engine, when it has its own limit (Redis maxmemory). */
  applyMemory(credentials: Credentials, memoryMB: number): EngineCommand | null;
  /** Writes the whole `databaseName` (or the whole instance for Redis) to stdout, uncompressed. */
  dump(credentials: Credentials): EngineCommand;
  /** What `dump` writes: plain SQL, a Redis RDB snapshot, a mongodump archive. */
  dumpFormat: DumpFormat;
  /**
   * Why a dump's output is not a whole dump of this engine, or null when it is: judged from its
   * size and its first and last bytes (the tools' own headers and end markers), so a dump cut
   * short or of something else is never taken for a backup.
   */
  dumpProblem(sample: DumpSample): string | null;
  restore(settings: ContainerSettings): RestorePlan;
  /**
   * Counts exactly what the database holds, for a verify of a backup restored into a throwaway
   * copy: rows per table, documents per collection, keys for Redis.
   */
  inventory(credentials: Credentials): EngineCommand;
  /** The `inventory` command's output as counts; throws when it is not what that command prints. */
  parseInventory(stdout: string): InventoryCount[];
}

export interface InventoryCount {
  /** A table (`schema.table` for PostgreSQL), a collection, or `keys` for Redis. */
  name: string;
  count: number;
}

/** `name<TAB>count` lines (what the SQL and MongoDB inventories print) as counts. */
export function parseCountLines(stdout: string): InventoryCount[] {
  return stdout
    .split("\n")
    .map((line) => line.replace(/\r$/, ""))
    .filter((line) => line !== "")
    .map((line) => {
      const tab = line.lastIndexOf("\t");
      const count = line.slice(tab + 1);
      if (tab <= 0 || !/^\d+$/.test(count)) throw new Error(`the count's output has a line that is not name<TAB>count: ${JSON.stringify(line.slice(0, 200))}`);
      return { name: line.slice(0, tab), count: Number(count) };
    });
}
