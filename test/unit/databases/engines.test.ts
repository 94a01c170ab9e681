// The engines' pure functions: container specs, connection strings, and the commands run inside
// containers. MongoDB cannot run on these machines, so this is where its commands are checked;
// the rule for every engine: a password is never in argv, only in env, stdin or a short-lived file.
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../../src/config";
import { toCreateOptions } from "../../../src/docker/container-spec";
import { ENGINES, ENGINE_NAMES, connectionStringOf, resolveImage, type EngineCommand } from "../../../src/databases/engines";
import { CLIENT_TIMEOUTS, MONGO_TOOLS_CONFIG } from "../../../src/databases/engines/mongodb";
import { REDIS_CLI_TIMEOUT_SECONDS, REDIS_CONFIG_PATH } from "../../../src/databases/engines/redis";
import { containerSpecOf, problemOf, type DatabaseRow } from "../../../src/databases/runtime";
import { sha256Hex } from "../../../src/crypto/tokens";
import { credentials, databaseRowOf, PASSWORD } from "../../helpers/database-rows";

const rowOf = (engine: DatabaseRow["engine"], version = ENGINES[engine].defaultVersion) => databaseRowOf(engine, { version });

const config = loadConfig({});

function commandsOf(engine: keyof typeof ENGINES): EngineCommand[] {
  const definition = ENGINES[engine];
  const restore = definition.restore({ credentials, version: definition.defaultVersion, memoryMB: 512 });
  return [
    definition.readinessProbe(credentials),
    ...definition.passwordProbes(credentials),
    definition.rotatePassword(credentials, "the-NEW-password"),
    definition.dump(credentials),
    ...(restore.mode === "stream" ? [restore.command] : restore.afterStart),
    ...[definition.applyMemory(credentials, 1024)].filter((command): command is EngineCommand => command !== null),
  ];
}

describe("every engine", () => {
  for (const engine of ENGINE_NAMES) {
    test(`${engine}: no password in argv of any command, nor in the container's command line`, () => {
      for (const command of commandsOf(engine)) {
        expect(command.argv.join(" ")).not.toContain(PASSWORD);
        expect(command.argv.join(" ")).not.toContain("the-NEW-password");
      }
      const options = toCreateOptions(containerSpecOf({ definition: ENGINES[engine], row: rowOf(engine), credentials, config }));
      expect(JSON.stringify([options.Cmd, options.Entrypoint])).not.toContain(PASSWORD);
    });

    test(`${engine}: a hardened container with its volumes, labels, alias and a port on 127.0.0.1`, () => {
      const definition = ENGINES[engine];
      const options = toCreateOptions(containerSpecOf({ definition, row: rowOf(engine), credentials, config }));
      expect(options.Labels).toEqual({ "platform.managed": "true", "platform.workspace": "ws_Test", "platform.database": "db_TEST" });
      expect(options.HostConfig!.Memory).toBe(512 * 1024 * 1024);
      expect(options.HostConfig!.CapDrop).toEqual(["ALL"]);
      expect(options.HostConfig!.RestartPolicy).toEqual({ Name: "unless-stopped" });
      expect(options.HostConfig!.PortBindings).toEqual({ [`${definition.port}/tcp`]: [{ HostIp: "127.0.0.1", HostPort: "" }] });
      expect(options.NetworkingConfig).toEqual({ EndpointsConfig: { "platform-ws_test": { Aliases: ["orders"] } } });
      for (const mount of options.HostConfig!.Mounts!) expect(mount.Source!.startsWith("platform-db-db_TEST-data")).toBe(true);
    });
  }

  test("connection strings percent-encode the password, and lists mask it", () => {
    const definition = ENGINES.postgresql;
    expect(connectionStringOf(definition, credentials, "db.example.com", 5433)).toBe(
      `postgresql://app_user:${encodeURIComponent(PASSWORD)}@db.example.com:5433/app_db`,
    );
    expect(connectionStringOf(definition, credentials, "db.example.com", 5433, true)).toBe("postgresql://app_user:****@db.example.com:5433/app_db");
    expect(connectionStringOf(ENGINES.mysql, credentials, "::1", 3306, true)).toBe("mysql://app_user:****@[::1]:3306/app_db");
    expect(connectionStringOf(ENGINES.redis, credentials, "h", 1, true)).toBe("redis://app_user:****@h:1");
  });
});

describe("probes end by themselves when the engine hangs (the platform's own time limit cannot stop an exec)", () => {
  const probesOf = (engine: keyof typeof ENGINES) => [ENGINES[engine].readinessProbe(credentials), ...ENGINES[engine].passwordProbes(credentials)];

  test("PostgreSQL: psql gets libpq's connect_timeout from PGCONNECT_TIMEOUT", () => {
    for (const probe of probesOf("postgresql")) {
      expect(probe.argv[0]).toBe("psql");
      expect(Number(probe.env!.PGCONNECT_TIMEOUT)).toBeGreaterThan(0);
    }
  });

  test("MySQL: the client gets --connect-timeout", () => {
    for (const probe of probesOf("mysql")) {
      expect(probe.argv[0]).toBe("mysql");
      expect(probe.argv).toContain("--connect-timeout=5");
    }
  });

  test("MongoDB: the driver gets server selection, connect and socket timeouts in its URI", () => {
    expect(CLIENT_TIMEOUTS).toBe("serverSelectionTimeoutMS=5000&connectTimeoutMS=5000&socketTimeoutMS=10000");
    for (const command of [...probesOf("mongodb"), ENGINES.mongodb.rotatePassword(credentials, "the-NEW-password")]) {
      expect(command.argv.at(-1)).toContain(`authSource=admin&${CLIENT_TIMEOUTS}'`);
    }
  });

  test("Redis: redis-cli (no -t before 7.2) runs under `timeout`, except the dump of a whole snapshot", () => {
    const redis = ENGINES.redis;
    const restore = redis.restore({ credentials, version: "7", memoryMB: 512 });
    const short = [...probesOf("redis"), redis.rotatePassword(credentials, "x-new-password"), redis.applyMemory(credentials, 512)!];
    if (restore.mode === "data-file") short.push(...restore.afterStart);
    for (const command of short) {
      expect(command.argv.slice(0, 3)).toEqual(["timeout", String(REDIS_CLI_TIMEOUT_SECONDS), "redis-cli"]);
      expect(command.argv).not.toContain("-t");
    }
    expect(REDIS_CLI_TIMEOUT_SECONDS).toBeLessThan(60); // under runCommand's own limit
    expect(redis.dump(credentials).argv[0]).toBe("redis-cli");
    // The snapshot is checked by Redis' own checker before it is read out of the container.
    const dump = redis.dump(credentials);
    expect(dump.outputCheck).toEqual(["redis-check-rdb", dump.outputFile!]);
  });

  test("a command ended by `timeout` reads as a time-out, not a bare exit code", () => {
    expect(problemOf({ ok: false, exitCode: 124, stdout: "", stderr: "" })).toBe("no answer within the command's time limit");
    expect(problemOf({ ok: false, exitCode: 1, stdout: "", stderr: "FATAL: password authentication failed\n" })).toBe(
      "FATAL: password authentication failed",
    );
  });
});

describe("image choice", () => {
  test("an official image setting gets the version as its tag; any other image is used as set", () => {
    expect(resolveImage("postgres:17", ENGINES.postgresql, "16.4")).toBe("postgres:16.4");
    expect(resolveImage("docker.io/library/mysql:8.4", ENGINES.mysql, "8.0")).toBe("docker.io/library/mysql:8.0");
    expect(resolveImage("mongo", ENGINES.mongodb, "7")).toBe("mongo:7");
    expect(resolveImage("redis:7", ENGINES.redis, "7.2-alpine")).toBe("redis:7.2-alpine");
    expect(resolveImage("platform-test/redis:latest", ENGINES.redis, "7")).toBe("platform-test/redis:latest");
    expect(resolveImage("registry.local:5000/postgres:17", ENGINES.postgresql, "16")).toBe("registry.local:5000/postgres:17");
    expect(resolveImage("postgres@sha256:abc", ENGINES.postgresql, "16")).toBe("postgres@sha256:abc");
  });
});

describe("MongoDB", () => {
  const mongodb = ENGINES.mongodb;
  const spec = containerSpecOf({ definition: mongodb, row: rowOf("mongodb"), credentials, config });

  test("container: mongo:8, root user from MONGO_INITDB_*, both image volumes named, port 27017", () => {
    expect(spec.image).toBe("mongo:8");
    expect(spec.env).toEqual({ MONGO_INITDB_ROOT_USERNAME: "app_user", MONGO_INITDB_ROOT_PASSWORD: PASSWORD, MONGO_INITDB_DATABASE: "app_db" });
    expect(spec.command).toBeUndefined();
    expect(spec.volumes).toEqual([
      { volumeName: "platform-db-db_TEST-data", containerPath: "/data/db" },
      { volumeName: "platform-db-db_TEST-data-configdb", containerPath: "/data/configdb" },
    ]);
    expect(spec.publish).toEqual({ containerPort: 27017, hostIp: "127.0.0.1" });
    expect(spec.capabilities).toEqual(["CHOWN", "SETUID", "SETGID", "DAC_OVERRIDE", "FOWNER"]);
  });

  test("connection string authenticates against admin", () => {
    expect(connectionStringOf(mongodb, credentials, "localhost", 32000)).toBe(
      `mongodb://app_user:${encodeURIComponent(PASSWORD)}@localhost:32000/app_db?authSource=admin`,
    );
  });

  test("readiness: mongosh runs a command that needs authentication, credentials from the environment", () => {
    const probe = mongodb.readinessProbe(credentials);
    expect(probe.argv.slice(0, 5)).toEqual(["mongosh", "--nodb", "--quiet", "--norc", "--eval"]);
    expect(probe.argv[5]).toContain("listCollections");
    expect(probe.argv[5]).toContain("authSource=admin");
    expect(probe.env).toEqual({ MONGO_USER: "app_user", MONGO_PASSWORD: PASSWORD, MONGO_DATABASE: "app_db" });
    expect(probe.expectOutput).toBe("1");
  });

  test("rotation: changeUserPassword authenticated with the old password, both from the environment", () => {
    const rotation = mongodb.rotatePassword(credentials, "the-NEW-password");
    expect(rotation.argv[0]).toBe("mongosh");
    expect(rotation.argv[5]).toContain("client.getDB('admin').changeUserPassword(env.MONGO_USER, env.MONGO_NEW_PASSWORD)");
    expect(rotation.env).toEqual({ MONGO_USER: "app_user", MONGO_PASSWORD: PASSWORD, MONGO_DATABASE: "app_db", MONGO_NEW_PASSWORD: "the-NEW-password" });
    expect(rotation.expectOutput).toBe("OK");
    expect(mongodb.passwordProbes({ ...credentials, password: "x" }).map((probe) => probe.env!.MONGO_PASSWORD)).toEqual(["x"]);
  });

  test("dump: mongodump of the database as an archive on stdout, the password in a --config YAML file", () => {
    const dump = mongodb.dump(credentials);
    expect(dump.argv).toEqual([
      "mongodump", "--host", "127.0.0.1", "--port", "27017", "--username", "app_user",
      "--authenticationDatabase", "admin", `--config=${MONGO_TOOLS_CONFIG}`, "--archive", "--db=app_db",
    ]);
    expect(dump.files).toEqual({ [MONGO_TOOLS_CONFIG]: `password: ${JSON.stringify(PASSWORD)}\n` });
    expect(dump.env).toBeUndefined();
  });

  test("restore: mongorestore of that database from stdin, replacing its collections", () => {
    const restore = mongodb.restore({ credentials, version: "8", memoryMB: 512 });
    expect(restore.mode).toBe("stream");
    if (restore.mode !== "stream") return;
    expect(restore.command.argv).toEqual([
      "mongorestore", "--host", "127.0.0.1", "--port", "27017", "--username", "app_user",
      "--authenticationDatabase", "admin", `--config=${MONGO_TOOLS_CONFIG}`, "--archive", "--nsInclude=app_db.*", "--drop",
    ]);
    expect(restore.command.files![MONGO_TOOLS_CONFIG]).toContain(JSON.stringify(PASSWORD));
  });

  test("system databases are refused as the database name", () => {
    expect(mongodb.credentialProblems({ username: "u", databaseName: "admin" })).toHaveLength(1);
    expect(mongodb.credentialProblems({ username: "u", databaseName: "orders" })).toEqual([]);
  });
});

describe("PostgreSQL", () => {
  const postgresql = ENGINES.postgresql;

  test("environment of the official image; the data volume on the path each major version declares", () => {
    expect(postgresql.environment({ credentials, version: "17", memoryMB: 512 })).toEqual({
      POSTGRES_USER: "app_user", POSTGRES_PASSWORD: PASSWORD, POSTGRES_DB: "app_db",
    });
    expect(postgresql.volumes("17")).toEqual([{ suffix: "", containerPath: "/var/lib/postgresql/data" }]);
    expect(postgresql.volumes("16.4-bookworm")).toEqual([{ suffix: "", containerPath: "/var/lib/postgresql/data" }]);
    expect(postgresql.volumes("18")).toEqual([{ suffix: "", containerPath: "/var/lib/postgresql" }]);
  });

  test("rotation: ALTER ROLE on stdin with the quote doubled, psql over TCP with PGPASSWORD", () => {
    const rotation = postgresql.rotatePassword(credentials, "new'pass");
    expect(rotation.argv).toEqual(["psql", "-X", "-h", "127.0.0.1", "-p", "5432", "-U", "app_user", "-d", "app_db", "-q", "-v", "ON_ERROR_STOP=1"]);
    expect(rotation.env!.PGPASSWORD).toBe(PASSWORD);
    expect(rotation.stdin).toContain(`ALTER ROLE "app_user" WITH PASSWORD 'new''pass';`);
    expect(rotation.stdin).toContain("SET standard_conforming_strings = on;");
  });

  test("dump with pg_dump; restore in one transaction that only the end of the dump commits", () => {
    expect(postgresql.dump(credentials).argv[0]).toBe("pg_dump");
    const restore = postgresql.restore({ credentials, version: "17", memoryMB: 512 });
    expect(restore.mode).toBe("stream");
    if (restore.mode !== "stream") return;
    expect(restore.command.argv).not.toContain("-1");
    expect(restore.opening).toBe("BEGIN;\n");
    expect(restore.closing).toContain("COMMIT;");
  });
});

describe("MySQL", () => {
  const mysql = ENGINES.mysql;

  test("the user gets MYSQL_USER/PASSWORD and root the same password; root alone when the username is root", () => {
    expect(mysql.environment({ credentials, version: "8.4", memoryMB: 512 })).toEqual({
      MYSQL_ROOT_PASSWORD: PASSWORD, MYSQL_DATABASE: "app_db", MYSQL_USER: "app_user", MYSQL_PASSWORD: PASSWORD,
    });
    expect(mysql.environment({ credentials: { ...credentials, username: "root" }, version: "8.4", memoryMB: 512 })).toEqual({
      MYSQL_ROOT_PASSWORD: PASSWORD, MYSQL_DATABASE: "app_db",
    });
  });

  test("rotation alters the user and root at '%' and 'localhost', with backslash and quote escaped", () => {
    const rotation = mysql.rotatePassword(credentials, "n\\e'w");
    expect(rotation.argv).toContain("root");
    expect(rotation.env).toEqual({ MYSQL_PWD: PASSWORD });
    for (const account of ["'app_user'@'%'", "'app_user'@'localhost'", "'root'@'%'", "'root'@'localhost'"]) {
      expect(rotation.stdin).toContain(`ALTER USER IF EXISTS ${account} IDENTIFIED BY 'n\\\\e''w';`);
    }
    expect(mysql.passwordProbes(credentials).map((probe) => probe.argv[probe.argv.indexOf("-u") + 1])).toEqual(["app_user", "root"]);
  });
});

describe("Redis", () => {
  const redis = ENGINES.redis;

  test("runs redis-server with a config file holding only the password's SHA-256", () => {
    expect(redis.command({ credentials, version: "7", memoryMB: 512 })).toEqual(["redis-server", REDIS_CONFIG_PATH]);
    const config = redis.configFiles({ credentials, version: "7", memoryMB: 512 })[REDIS_CONFIG_PATH]!;
    expect(config).not.toContain(PASSWORD);
    expect(config).toContain(`user app_user on #${sha256Hex(PASSWORD)} ~* &* +@all`);
    expect(config).toContain("user default off");
    expect(config).toContain("appendonly yes");
    expect(config).toContain("repl-diskless-sync-delay 0");
    expect(config).toContain("maxmemory 384mb");
  });

  test("rotation sends ACL SETUSER with the new hash on stdin; redis-cli gets the old password from REDISCLI_AUTH", () => {
    const rotation = redis.rotatePassword(credentials, "the-NEW-password");
    expect(rotation.stdin).toBe(`ACL SETUSER app_user resetpass #${sha256Hex("the-NEW-password")}\n`);
    expect(rotation.env).toEqual({ REDISCLI_AUTH: PASSWORD });
    expect(rotation.expectOutput).toBe("OK");
  });

  test("restore boots once from dump.rdb with AOF off, turns AOF on, and is done once the rewrite has finished", () => {
    const restore = redis.restore({ credentials, version: "7", memoryMB: 512 });
    expect(restore.mode).toBe("data-file");
    if (restore.mode !== "data-file") return;
    expect(`${restore.directory}/${restore.fileName}`).toBe("/data/dump.rdb");
    expect(restore.bootFiles[REDIS_CONFIG_PATH]).toContain("appendonly no");
    expect(restore.afterStart[0]!.argv.slice(-4)).toEqual(["CONFIG", "SET", "appendonly", "yes"]);
    const info = (inProgress: string, status: string) =>
      `# Persistence\r\naof_enabled:1\r\naof_rewrite_in_progress:${inProgress}\r\naof_rewrite_scheduled:0\r\naof_last_bgrewrite_status:${status}\r\n`;
    expect(restore.settled.isDone(info("1", "ok"))).toBe(false);
    expect(restore.settled.isDone(info("0", "err"))).toBe(false);
    expect(restore.settled.isDone(info("0", "ok"))).toBe(true);
  });

});
