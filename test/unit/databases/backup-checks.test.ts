// What makes a dump's output a backup (each engine's header and end marker, judged from a sample
// of its first and last bytes), and the byte ranges a download answers.
import { describe, expect, test } from "bun:test";
import { ENGINES, type DumpSample } from "../../../src/databases/engines";
import { byteRange } from "../../../src/backups/storage";

const text = (value: string) => new TextEncoder().encode(value);
const sample = (head: Uint8Array, tail: Uint8Array = head, bytes = Math.max(head.byteLength, tail.byteLength)): DumpSample => ({ bytes, head, tail });

describe("a dump is whole only with its tool's header and end marker", () => {
  test("PostgreSQL: pg_dump's banner and its completion line", () => {
    const pg = ENGINES.postgresql;
    const whole = "--\n-- PostgreSQL database dump\n--\nCREATE TABLE t (id int);\n--\n-- PostgreSQL database dump complete\n--\n";
    expect(pg.dumpProblem(sample(text(whole)))).toBeNull();
    expect(pg.dumpProblem(sample(text(whole.slice(0, 60))))).toContain("completion line");
    expect(pg.dumpProblem(sample(text("pg_dump: error: connection failed\n")))).toContain("not a pg_dump");
    expect(pg.dumpProblem(sample(new Uint8Array(0)))).toContain("not a pg_dump");
  });

  test("MySQL and MariaDB: the banner (after mariadb-dump's sandbox line) and 'Dump completed'", () => {
    const mysql = ENGINES.mysql;
    const tail = text("-- Dump completed on 2026-11-23 12:00:00\n");
    expect(mysql.dumpProblem(sample(text("-- MySQL dump 10.13  Distrib 8.4\n"), tail))).toBeNull();
    expect(mysql.dumpProblem(sample(text("/*M!999999\\- enable the sandbox mode */ \n-- MariaDB dump 10.19\n"), tail))).toBeNull();
    expect(mysql.dumpProblem(sample(text("-- MariaDB dump 10.19\n"), text("INSERT INTO t VALUES (1")))).toContain("completion line");
    expect(mysql.dumpProblem(sample(text("mysqldump: Got error: 1045"), tail))).toContain("not a mysqldump");
  });

  test("Redis: the REDIS magic, and the EOF opcode with its 8-byte checksum last", () => {
    const redis = ENGINES.redis;
    const rdb = new Uint8Array([...text("REDIS0010"), 0xfa, 1, 2, 3, 0xff, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(redis.dumpProblem(sample(rdb))).toBeNull();
    // redis-cli 7.0 writing to stdout leaves the transfer's 40-byte EOF marker after the RDB.
    const withMarker = new Uint8Array([...rdb, ...text("6258e610fc66cc4860915f2507a6b96ed82a5316")]);
    expect(redis.dumpProblem(sample(withMarker))).toContain("EOF marker");
    expect(redis.dumpProblem(sample(rdb.subarray(0, 12)))).not.toBeNull();
    expect(redis.dumpProblem(sample(text("NOAUTH Authentication required.\n")))).toContain("not a Redis RDB");
  });

  test("MongoDB: the archive's magic number", () => {
    const mongodb = ENGINES.mongodb;
    expect(mongodb.dumpProblem(sample(new Uint8Array([0x6d, 0xe2, 0x99, 0x81, 0, 0, 0, 0])))).toBeNull();
    expect(mongodb.dumpProblem(sample(text("Failed: error connecting")))).toContain("not a mongodump archive");
  });

  test("each engine names the format of what its dump holds", () => {
    expect(Object.fromEntries(Object.values(ENGINES).map((definition) => [definition.engine, definition.dumpFormat]))).toEqual({
      postgresql: "sql",
      mysql: "sql",
      mongodb: "archive",
      redis: "rdb",
    });
  });
});

describe("byte ranges of a download", () => {
  test("one range, open-ended, or a suffix, within the file", () => {
    expect(byteRange("bytes=0-9", 100)).toEqual([0, 9]);
    expect(byteRange("bytes=90-", 100)).toEqual([90, 99]);
    expect(byteRange("bytes=-10", 100)).toEqual([90, 99]);
    expect(byteRange("bytes=-500", 100)).toEqual([0, 99]);
    expect(byteRange("bytes=95-200", 100)).toEqual([95, 99]);
  });

  test("past the end, backwards, empty, several ranges or another unit: not served", () => {
    for (const header of ["bytes=100-", "bytes=100-200", "bytes=9-3", "bytes=-0", "bytes=-", "bytes=0-1,5-6", "items=0-1", "bytes=a-b"]) {
      expect({ header, range: byteRange(header, 100) }).toEqual({ header, range: null });
    }
  });
});
