// Waiting for an engine to answer, against a stand-in Docker driver that plays a container's life.
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../../src/config";
import type { DockerDriver } from "../../../src/docker/driver";
import { ENGINES } from "../../../src/databases/engines";
import { waitUntilReady, type DatabaseRow, type DatabaseTarget } from "../../../src/databases/runtime";

const credentials = { username: "app_user", password: "a-long-password", databaseName: "app_db" };

/** A container that runs for one inspection, then restarts for good (an engine exiting at start). */
function crashingDriver() {
  const states = [{ running: true, state: "running", exitCode: 0 }];
  return {
    inspectContainer: async () => states.shift() ?? { running: false, state: "restarting", exitCode: 1 },
    exec: async () => {
      throw new Error("docker exec failed: Container c1 is restarting, wait until the container is running");
    },
    logs: async () => [{ text: "initdb: error: could not create directory" }],
  };
}

function targetOf(driver: object): DatabaseTarget {
  return {
    driver: driver as unknown as DockerDriver,
    definition: ENGINES.postgresql,
    row: { id: "db_1", version: "17" } as DatabaseRow,
    credentials,
    config: loadConfig({}),
  };
}

describe("waiting until the engine answers", () => {
  test("an exec refused because the container restarts ends as the engine's exit, with its last logs", async () => {
    const refused = await waitUntilReady(targetOf(crashingDriver()), "c1", 10_000).catch((error: Error) => error);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toBe("PostgreSQL exited with code 1 before answering: initdb: error: could not create directory");
  });
});
