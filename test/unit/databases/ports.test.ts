// Host ports of databases: the PLATFORM_DB_PORT_RANGE setting, the choice inside it, and the
// check that a port can really be bound now.
import { describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:net";
import { loadConfig } from "../../../src/config";
import { bindCheck, chooseHostPort } from "../../../src/databases/ports";
import { ApiError } from "../../../src/http/errors";

const range = { first: 15_400, last: 15_404 };
const everyPortFree = async () => true;

function listening(port = 0): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

describe("PLATFORM_DB_PORT_RANGE", () => {
  test("defaults to 15400-15999, below the kernel's ephemeral ports", () => {
    expect(loadConfig({}).dbPortRange).toEqual({ first: 15_400, last: 15_999 });
  });

  test("reads first-last; one port is a range too", () => {
    expect(loadConfig({ PLATFORM_DB_PORT_RANGE: "20000-20099" }).dbPortRange).toEqual({ first: 20_000, last: 20_099 });
    expect(loadConfig({ PLATFORM_DB_PORT_RANGE: "20000-20000" }).dbPortRange).toEqual({ first: 20_000, last: 20_000 });
  });

  test("refuses anything else at start, naming the setting", () => {
    for (const bad of ["15400", "15999-15400", "0-10", "60000-70000", "a-b", "15400-15999-16000", "15400 - 15999", "-1-5"]) {
      expect(() => loadConfig({ PLATFORM_DB_PORT_RANGE: bad })).toThrow("PLATFORM_DB_PORT_RANGE");
    }
  });
});

describe("choosing a database's host port", () => {
  test("the first free port from where the search starts, going round the range", async () => {
    expect(await chooseHostPort(range, new Set(), everyPortFree, 15_400)).toBe(15_400);
    expect(await chooseHostPort(range, new Set(), everyPortFree, 15_403)).toBe(15_403);
    expect(await chooseHostPort(range, new Set([15_403, 15_404]), everyPortFree, 15_403)).toBe(15_400);
  });

  test("skips ports other databases hold, without even trying them", async () => {
    const tried: number[] = [];
    const port = await chooseHostPort(range, new Set([15_400, 15_401]), async (candidate) => (tried.push(candidate), true), 15_400);
    expect(port).toBe(15_402);
    expect(tried).toEqual([15_402]);
  });

  test("skips ports that cannot be bound right now", async () => {
    const inUse = new Set([15_400, 15_402]);
    expect(await chooseHostPort(range, new Set([15_401]), async (port) => !inUse.has(port), 15_400)).toBe(15_403);
  });

  test("a random start stays inside the range", async () => {
    for (let i = 0; i < 50; i++) {
      const port = await chooseHostPort(range, new Set(), everyPortFree);
      expect(port).toBeGreaterThanOrEqual(range.first);
      expect(port).toBeLessThanOrEqual(range.last);
    }
  });

  test("an exhausted range -> 409 PORT_RANGE_EXHAUSTED naming the setting", async () => {
    const refused = await chooseHostPort(range, new Set([15_400, 15_401, 15_402]), async (port) => port !== 15_403 && port !== 15_404).catch(
      (error: ApiError) => error,
    );
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ code: "PORT_RANGE_EXHAUSTED", status: 409, message: expect.stringContaining("PLATFORM_DB_PORT_RANGE (15400-15404)") });
  });
});

describe("the bind check", () => {
  test("a port something listens on is not free; once it is let go, it is", async () => {
    const holder = await listening();
    const port = (holder.address() as { port: number }).port;
    const canBind = bindCheck("127.0.0.1");
    expect(await canBind(port)).toBe(false);
    await new Promise((resolve) => holder.close(resolve));
    expect(await canBind(port)).toBe(true);
  });

  test("an address that is not on this host -> 409 OPERATION_FAILED naming it", async () => {
    const refused = await bindCheck("192.0.2.1")(15_400).catch((error: ApiError) => error);
    expect(refused).toMatchObject({ code: "OPERATION_FAILED", message: expect.stringContaining("192.0.2.1") });
  });
});
