// The limits of an exec on the real engine: stderr is kept as a bounded tail, output past
// `maxOutputBytes` and a command that moves no byte for `idleTimeoutMs` are stopped, and a
// stopped command leaves no process behind in the container. exec() holds a bounded output.
import { afterAll, describe, expect, test } from "bun:test";
import { ExecStopped } from "../../../src/docker/driver";
import { LABEL_MANAGED } from "../../../src/docker/container-spec";
import { config, localDriver, uniqueName } from "../../helpers/docker";

const driver = localDriver();
const MiB = 1024 * 1024;
let containerId = "";

afterAll(async () => {
  if (containerId) await driver.removeContainer(containerId);
});

async function container(): Promise<string> {
  if (containerId) return containerId;
  containerId = await driver.createContainer({
    name: uniqueName("platform-test-exec"),
    image: config.images.node,
    command: ["sleep", "300"],
    labels: { [LABEL_MANAGED]: "true", "platform.workspace": "ws_test", "platform.app": "app_test" },
    memoryMB: 64,
  });
  await driver.startContainer(containerId);
  return containerId;
}

async function processes(): Promise<string> {
  return (await driver.exec(await container(), { command: ["ps", "-eo", "args"] })).stdout;
}

function residentBytes(): number {
  Bun.gc(true);
  return process.memoryUsage.rss();
}

describe("exec limits", () => {
  test("200 MB on stderr (no output limit): the call keeps its last 64 KiB and says how much was cut, in flat memory", async () => {
    const id = await container();
    const before = residentBytes();
    const exec = await driver.execStream(id, { command: ["sh", "-c", "head -c 200000000 /dev/zero | tr '\\0' e >&2; echo the reason >&2; exit 4"] });
    const [, result] = await Promise.all([exec.stdout.pipeTo(new WritableStream()), exec.done]);
    expect(result.exitCode).toBe(4);
    expect(result.stderr.endsWith("eeethe reason\n")).toBe(true);
    expect(result.stderr.length).toBeLessThan(65 * 1024);
    expect(result.stderr).toMatch(/^\[\d+ bytes cut\]e/);
    expect(residentBytes() - before).toBeLessThan(50 * MiB);
  });

  test("exec() holds at most 4 MiB of output by default: a command printing without end is stopped and killed", async () => {
    const id = await container();
    const failure = await driver.exec(id, { command: ["sh", "-c", "yes flood-without-end"] }).catch((error) => error);
    expect(failure).toBeInstanceOf(ExecStopped);
    expect(failure.message).toBe("sh wrote more than 4 MiB of output, more than it may, and was stopped");
    expect(await processes()).not.toContain("flood-without-end");
  });

  test("maxOutputBytes counts stderr too, and stdout that is discarded: stopped past it", async () => {
    const id = await container();
    const failure = await driver
      .exec(id, { command: ["sh", "-c", "yes stderr-flood >&2"], maxOutputBytes: MiB, discardStdout: true })
      .catch((error) => error);
    expect(failure).toBeInstanceOf(ExecStopped);
    expect(failure.message).toContain("more than 1 MiB of output");
    const discarded = await driver.exec(id, { command: ["head", "-c", String(3 * MiB), "/dev/zero"], maxOutputBytes: 4 * MiB, discardStdout: true });
    expect(discarded).toEqual({ exitCode: 0, stdout: "", stderr: "" });
    expect(await processes()).not.toContain("stderr-flood");
  });

  test("a command that moves no byte for idleTimeoutMs is stopped and its processes killed; one that keeps printing is not", async () => {
    const id = await container();
    const started = performance.now();
    const failure = await driver.exec(id, { command: ["sh", "-c", "echo started; sleep 4242 & sleep 4243"], idleTimeoutMs: 1_000 }).catch((error) => error);
    expect(failure).toBeInstanceOf(ExecStopped);
    expect(failure.message).toBe("sh made no progress (no input read, no output written) for 1 s and was stopped");
    expect(performance.now() - started).toBeLessThan(10_000);
    const left = await processes();
    expect(left).not.toContain("sleep 424");
    expect(left).toContain("sleep 300");

    const busy = await driver.exec(id, { command: ["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do echo $i; sleep 0.3; done"], idleTimeoutMs: 1_000 });
    expect(busy.stdout.split("\n").filter(Boolean)).toHaveLength(8);
  });

  test("a reader that cancels stdout (as the killer's give-up timer does) gets the end of the exec, not an 'Invalid state' error", async () => {
    const id = await container();
    const exec = await driver.execStream(id, { command: ["sh", "-c", "echo started; sleep 1; echo more"] });
    const reader = exec.stdout.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("started\n");
    await reader.cancel();
    expect(await exec.done).toMatchObject({ exitCode: expect.any(Number), stderr: "" });
  });

  test("stdin taken counts as progress; a command that stops reading it is stopped", async () => {
    const id = await container();
    let sent = 0;
    // 8 MB fed slowly to a command that reads it all: 2 s in all, never 1 s without a byte.
    const slow = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent >= 8) return controller.close();
        await Bun.sleep(250);
        sent += 1;
        controller.enqueue(new Uint8Array(MiB));
      },
    });
    const counted = await driver.exec(id, { command: ["wc", "-c"], stdin: slow, idleTimeoutMs: 1_000 });
    expect(counted.stdout.trim()).toBe(String(8 * MiB));

    const endless = new ReadableStream<Uint8Array>({ pull: (controller) => controller.enqueue(new Uint8Array(MiB)) });
    const failure = await driver.exec(id, { command: ["sh", "-c", "sleep 4244"], stdin: endless, idleTimeoutMs: 1_000 }).catch((error) => error);
    expect(failure).toBeInstanceOf(ExecStopped);
    expect(await processes()).not.toContain("sleep 4244");
  });
});
