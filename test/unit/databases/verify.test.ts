// The pure parts of verifying a backup: each engine's inventory command (argv without secrets,
// the password only in env) and the parsing of its output into counts, and the throwaway
// container's spec (no port, no network, its own labels and volumes, never the database's).
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../../src/config";
import { toCreateOptions } from "../../../src/docker/container-spec";
import { ENGINES, ENGINE_NAMES } from "../../../src/databases/engines";
import { verifySpecOf } from "../../../src/databases/backup-verify";
import type { DatabaseRow } from "../../../src/databases/runtime";
import { credentials, databaseRowOf, PASSWORD } from "../../helpers/database-rows";

const rowOf = (engine: DatabaseRow["engine"]) => databaseRowOf(engine, { status: "running", cpus: 1.5, memoryMB: 768, hostPort: 15432 });

const config = loadConfig({});


describe("inventory commands", () => {
  for (const engine of ENGINE_NAMES) {
    test(`${engine}: the password is in env, never in argv`, () => {
      const command = ENGINES[engine].inventory(credentials);
      expect(command.argv.join(" ")).not.toContain(PASSWORD);
      expect(Object.values(command.env ?? {})).toContain(PASSWORD);
      expect(command.stdin).toBeUndefined();
    });
  }

  test("postgresql: one psql query over TCP, tab-separated, exact counts of every base table outside the system schemas", () => {
    const { argv } = ENGINES.postgresql.inventory(credentials);
    expect(argv.slice(0, 3)).toEqual(["psql", "-X", "-h"]);
    expect(argv).toContain("-tA");
    expect(argv[argv.indexOf("-F") + 1]).toBe("\t");
    const query = argv.at(-1)!;
    expect(query).toContain("count(*)");
    expect(query).toContain("'BASE TABLE'");
    expect(query).toContain("NOT IN ('pg_catalog', 'information_schema')");
  });

  test("mysql: COUNT(*) per table of the database, not information_schema's estimates", () => {
    const { argv } = ENGINES.mysql.inventory(credentials);
    expect(argv).toEqual(expect.arrayContaining(["-D", "app_db", "-N", "-B", "-e"]));
    const script = argv.at(-1)!;
    expect(script).toContain("COUNT(*)");
    expect(script).toContain("UNION ALL");
    expect(script).toContain("TABLE_SCHEMA = DATABASE()");
    expect(script).not.toContain("TABLE_ROWS");
  });

  test("redis: INFO keyspace, under a time limit", () => {
    const { argv } = ENGINES.redis.inventory(credentials);
    expect(argv[0]).toBe("timeout");
    expect(argv.slice(-2)).toEqual(["INFO", "keyspace"]);
  });

  test("mongodb: countDocuments per collection, the credentials read from env by the script", () => {
    const command = ENGINES.mongodb.inventory(credentials);
    expect(command.argv.slice(0, 4)).toEqual(["mongosh", "--nodb", "--quiet", "--norc"]);
    expect(command.argv.at(-1)).toContain("countDocuments({})");
    expect(command.env).toEqual({ MONGO_USER: "app_user", MONGO_PASSWORD: PASSWORD, MONGO_DATABASE: "app_db" });
  });
});

describe("parseInventory", () => {
  test("postgresql: schema.table and its rows per line", () => {
    expect(ENGINES.postgresql.parseInventory("public.items\t5\npublic.orders\t0\nsales.big\t12345678901\n")).toEqual([
      { name: "public.items", count: 5 },
      { name: "public.orders", count: 0 },
      { name: "sales.big", count: 12345678901 },
    ]);
  });

  test("mysql: a table name holding spaces; an empty database gives no counts", () => {
    expect(ENGINES.mysql.parseInventory("items\t3\nodd name\t1\n")).toEqual([
      { name: "items", count: 3 },
      { name: "odd name", count: 1 },
    ]);
    expect(ENGINES.mysql.parseInventory("")).toEqual([]);
  });

  test("mongodb: collections and their documents, Windows line ends too", () => {
    expect(ENGINES.mongodb.parseInventory("events\t10\r\nusers\t2\r\n")).toEqual([
      { name: "events", count: 10 },
      { name: "users", count: 2 },
    ]);
  });

  test("anything but name<TAB>count is refused, not read as a count", () => {
    for (const output of ["public.items 5\n", "public.items\tfive\n", "\t5\n", "ERROR:  permission denied for table items\n", "public.items\t-1\n"]) {
      expect(() => ENGINES.postgresql.parseInventory(output)).toThrow(/name<TAB>count/);
    }
  });

  test("redis: the keys of every numbered database, added up", () => {
    const info = "# Keyspace\r\ndb0:keys=5,expires=1,avg_ttl=1000\r\ndb1:keys=2,expires=0,avg_ttl=0\r\ndb15:keys=10,expires=0,avg_ttl=0\r\n";
    expect(ENGINES.redis.parseInventory(info)).toEqual([{ name: "keys", count: 17 }]);
    expect(ENGINES.redis.parseInventory("# Keyspace\r\n")).toEqual([{ name: "keys", count: 0 }]);
  });

  test("redis: an error answer (redis-cli exits 0 on them) is refused", () => {
    expect(() => ENGINES.redis.parseInventory("NOPERM User app_user has no permissions to run the 'info' command\n")).toThrow(/INFO keyspace answered/);
    expect(() => ENGINES.redis.parseInventory("")).toThrow(/INFO keyspace answered/);
  });
});

describe("the throwaway container", () => {
  for (const engine of ENGINE_NAMES) {
    test(`${engine}: the database's image and memory, with no port, no network, its own labels and volumes`, () => {
      const definition = ENGINES[engine];
      const spec = verifySpecOf({ definition, row: rowOf(engine), credentials, config }, "bk_TEST");
      const options = toCreateOptions(spec);
      expect(options.name).toBe("platform-verify-bk_TEST");
      expect(options.Labels).toEqual({ "platform.managed": "true", "platform.workspace": "ws_Test", "platform.verify": "bk_TEST" });
      expect(options.ExposedPorts).toBeUndefined();
      expect(options.HostConfig!.PortBindings).toBeUndefined();
      expect(options.HostConfig!.NetworkMode).toBe("none");
      expect(options.HostConfig!.RestartPolicy).toEqual({ Name: "no" });
      expect(options.HostConfig!.Memory).toBe(768 * 1024 * 1024);
      expect(options.HostConfig!.NanoCpus).toBe(1.5e9);
      expect(options.HostConfig!.CapDrop).toEqual(["ALL"]);
      const mounts = options.HostConfig!.Mounts!;
      expect(mounts.map((mount) => mount.Target)).toEqual(definition.volumes(definition.defaultVersion).map((volume) => volume.containerPath));
      for (const mount of mounts) expect(mount.Source!.startsWith("platform-verify-bk_TEST-data")).toBe(true);
      expect(JSON.stringify([options.Cmd, options.Entrypoint])).not.toContain(PASSWORD);
    });
  }
});
