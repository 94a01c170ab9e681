// The driver against the real local engine, with the node stand-in image chosen through
// PLATFORM_IMAGE_NODE like the platform itself would.
import { afterAll, describe, expect, test } from "bun:test";
import { BuildFailed, DockerDriver, DockerNotFound, ExecStopped } from "../../../src/docker/driver";
import { ApiError } from "../../../src/http/errors";
import { tempDir } from "../../helpers/temp";
import { LABEL_MANAGED, type ContainerSpec } from "../../../src/docker/container-spec";
import { config, dockerCli, dockerJson, localDriver, uniqueName } from "../../helpers/docker";

const driver = localDriver();
const image = config.images.node;
const created: { containers: string[]; images: string[]; volumes: string[]; networks: string[] } = {
  containers: [],
  images: [],
  volumes: [],
  networks: [],
};

afterAll(async () => {
  for (const id of created.containers) await driver.removeContainer(id);
  for (const tag of created.images) await driver.removeImage(tag);
  for (const name of created.volumes) await driver.removeVolume(name);
  for (const name of created.networks) await dockerCli("network", "rm", name).catch(() => {});
});

function spec(overrides: Partial<ContainerSpec> = {}): ContainerSpec {
  return {
    name: uniqueName("platform-test"),
    image,
    command: ["sleep", "300"],
    labels: { [LABEL_MANAGED]: "true", "platform.workspace": "ws_test", "platform.app": "app_test" },
    memoryMB: 64,
    ...overrides,
  };
}

async function run(overrides: Partial<ContainerSpec> = {}): Promise<string> {
  const id = await driver.createContainer(spec(overrides));
  created.containers.push(id);
  await driver.startContainer(id);
  return id;
}

describe("docker driver on the real engine", () => {
  test("the engine answers and the stand-in image is present", async () => {
    expect((await driver.ping()).version).toBeTruthy();
    expect(await driver.hasImage(image)).toBe(true);
  });

  test("create, start, stop, remove with the hardening visible in docker inspect", async () => {
    const volume = uniqueName("platform-test-vol");
    await driver.createVolume(volume, { [LABEL_MANAGED]: "true" });
    created.volumes.push(volume);
    const id = await run({ memoryMB: 96, pidsLimit: 77, capabilities: ["CHOWN"], volumes: [{ volumeName: volume, containerPath: "/data" }] });
    const [inspected] = await dockerJson("inspect", id);
    expect(inspected.State.Running).toBe(true);
    expect(inspected.HostConfig.Memory).toBe(96 * 1024 * 1024);
    expect(inspected.HostConfig.MemorySwap).toBe(96 * 1024 * 1024);
    expect(inspected.HostConfig.PidsLimit).toBe(77);
    expect(inspected.HostConfig.SecurityOpt).toContain("no-new-privileges:true");
    expect(inspected.HostConfig.CapDrop).toEqual(["ALL"]);
    expect(inspected.HostConfig.CapAdd).toEqual(["CHOWN"]);
    expect(inspected.HostConfig.Privileged).toBe(false);
    expect(inspected.HostConfig.LogConfig).toEqual({ Type: "json-file", Config: { "max-file": "3", "max-size": "10m" } });
    expect(inspected.HostConfig.Binds).toBeNull();
    expect(inspected.Mounts.map((m: any) => m.Type)).toEqual(["volume"]);
    expect(inspected.Config.Labels["platform.app"]).toBe("app_test");
    const [volumeInfo] = await dockerJson("volume", "inspect", volume);
    expect(volumeInfo.Labels[LABEL_MANAGED]).toBe("true");

    await driver.stopContainer(id, 1);
    expect((await driver.inspectContainer(id)).running).toBe(false);
    await driver.stopContainer(id, 1); // stopping twice is not an error
    await driver.removeContainer(id);
    await expect(driver.inspectContainer(id)).rejects.toBeInstanceOf(DockerNotFound);
  });

  test("memory limit changes on a running container", async () => {
    const id = await run();
    await driver.updateContainerMemory(id, 128);
    const [inspected] = await dockerJson("inspect", id);
    expect(inspected.HostConfig.Memory).toBe(128 * 1024 * 1024);
    expect(inspected.HostConfig.MemorySwap).toBe(128 * 1024 * 1024);
    expect(inspected.State.Running).toBe(true);
  });

  test("logs come back as clean stdout and stderr lines, with timestamps when asked", async () => {
    const id = await run({ command: ["sh", "-c", "echo one; echo two >&2; echo three; sleep 300"] });
    let lines = await driver.logs(id, { tail: 100, timestamps: false });
    for (let i = 0; i < 50 && lines.length < 3; i++) {
      await Bun.sleep(100);
      lines = await driver.logs(id, { tail: 100, timestamps: false });
    }
    expect(lines.filter((l) => l.stream === "stdout").map((l) => l.text)).toEqual(["one", "three"]);
    expect(lines.filter((l) => l.stream === "stderr").map((l) => l.text)).toEqual(["two"]);
    const stamped = await driver.logs(id, { tail: 1, timestamps: true });
    expect(stamped).toHaveLength(1);
    expect(Date.parse(stamped[0]!.timestamp!)).toBeGreaterThan(Date.now() - 60_000);
    expect(stamped[0]!.text).not.toContain(stamped[0]!.timestamp!);
  });

  test("following logs streams lines as they are written", async () => {
    const id = await run({ command: ["sh", "-c", "for i in 1 2 3; do echo tick $i; sleep 0.2; done; sleep 300"] });
    const abort = new AbortController();
    const seen: string[] = [];
    for await (const line of driver.followLogs(id, { tail: 100, timestamps: false, signal: abort.signal })) {
      seen.push(line.text);
      if (seen.length === 3) abort.abort();
    }
    expect(seen.slice(0, 3)).toEqual(["tick 1", "tick 2", "tick 3"]);
  });

  test("stats report memory against the limit, pids and network counters", async () => {
    const id = await run({ memoryMB: 80 });
    const stats = await driver.stats(id);
    expect(stats.memoryLimitBytes).toBe(80 * 1024 * 1024);
    expect(stats.memoryUsedBytes).toBeGreaterThan(0);
    expect(stats.pids).toBeGreaterThanOrEqual(1);
    expect(stats.cpuPercent).toBeGreaterThanOrEqual(0);
    expect(typeof stats.networkRxBytes).toBe("number");
  });

  test("exec streams stdin in and stdout out, with exit code and stderr", async () => {
    const id = await run();
    const input = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 251);
    const counted = await driver.exec(id, { command: ["wc", "-c"], stdin: input });
    expect(counted.exitCode).toBe(0);
    expect(counted.stdout.trim()).toBe(String(input.length));
    const echoed = await driver.execStream(id, { command: ["cat"], stdin: input });
    const output = new Uint8Array(await new Response(echoed.stdout).arrayBuffer());
    expect((await echoed.done).exitCode).toBe(0);
    expect(output.length).toBe(input.length);
    expect(Bun.hash(output)).toBe(Bun.hash(input));
    const failing = await driver.exec(id, { command: ["sh", "-c", "echo bad >&2; exit 3"], env: { SECRET: "x" } });
    expect(failing).toEqual({ exitCode: 3, stdout: "", stderr: "bad\n" });
    const env = await driver.exec(id, { command: ["printenv", "GREETING"], env: { GREETING: "hello there" } });
    expect(env.stdout).toBe("hello there\n");
  });

  test("a command writing faster than its stdout is read is held back, not buffered: 200 MB with flat memory", async () => {
    const id = await run();
    const size = 200 * 1024 * 1024;
    const flood = await driver.execStream(id, { command: ["head", "-c", String(size), "/dev/zero"] });
    const reader = flood.stdout.getReader();
    Bun.gc(true);
    const before = process.memoryUsage.rss();
    // Nothing is read for a while: without backpressure the whole output would pile up here.
    await Bun.sleep(1500);
    const held = process.memoryUsage.rss() - before;
    let received = 0;
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) received += chunk.value.byteLength;
    expect((await flood.done).exitCode).toBe(0);
    expect(received).toBe(size);
    expect(held).toBeLessThan(50 * 1024 * 1024);
  });

  test("an exec past its timeout is ended: the call rejects and its processes are gone from the container", async () => {
    const id = await run();
    const started = performance.now();
    const failure = await driver.exec(id, { command: ["sh", "-c", "sleep 4242 & sleep 4243; echo never"], timeoutMs: 1_000 }).catch((error) => error);
    expect(failure).toBeInstanceOf(ExecStopped);
    expect(performance.now() - started).toBeLessThan(10_000);
    const processes = await driver.exec(id, { command: ["ps", "-eo", "args"] });
    expect(processes.stdout).not.toContain("sleep 424"); // the command and the child it started
    expect(processes.stdout).toContain("sleep 300"); // the container's own process is left alone
  });

  test("an engine that accepts the connection but never answers: the call fails with DOCKER_TIMEOUT at its time", async () => {
    const socket = `${tempDir("platform-silent-engine-")}/docker.sock`;
    const silent = Bun.listen({ unix: socket, socket: { data() {} } }); // reads requests, answers none
    try {
      const stuck = new DockerDriver("silent", { host: `unix://${socket}` }, { callTimeoutMs: 500 });
      const started = performance.now();
      const failure = await stuck.inspectContainer("anything").catch((error) => error);
      expect(failure).toBeInstanceOf(ApiError);
      expect(failure.code).toBe("DOCKER_TIMEOUT");
      expect(failure.status).toBe(504);
      expect(failure.headers["Retry-After"]).toBeDefined();
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      silent.stop(true);
    }
  });

  test("files copied into a container are there", async () => {
    const id = await run();
    await driver.copyToContainer(id, "/tmp", { "conf/app.conf": "port 6379\n" });
    expect((await driver.exec(id, { command: ["cat", "/tmp/conf/app.conf"] })).stdout).toBe("port 6379\n");
  });

  test("builds an image from a tar context with a streamed log and labels", async () => {
    const tag = `${uniqueName("platform-test-build")}:latest`;
    created.images.push(tag);
    const context = await new Bun.Archive({
      Dockerfile: `FROM ${image}\nCOPY hello.txt /hello.txt\nRUN echo built-step-ran\n`,
      "hello.txt": "from the context\n",
    }).bytes();
    const log: string[] = [];
    await driver.buildImage({ context, tag, labels: { [LABEL_MANAGED]: "true", "platform.build": "bld_1" }, onLog: (l) => log.push(l) });
    expect(log.join("\n")).toContain("built-step-ran");
    const [inspected] = await dockerJson("image", "inspect", tag);
    expect(inspected.Config.Labels["platform.build"]).toBe("bld_1");
    const id = await run({ image: tag });
    expect((await driver.exec(id, { command: ["cat", "/hello.txt"] })).stdout).toBe("from the context\n");

    const broken = await new Bun.Archive({ Dockerfile: `FROM ${image}\nRUN exit 7\n` }).bytes();
    const failedLog: string[] = [];
    const failure = driver.buildImage({ context: broken, tag: `${uniqueName("platform-test-bad")}:latest`, labels: { [LABEL_MANAGED]: "true" }, onLog: (l) => failedLog.push(l) });
    await expect(failure).rejects.toBeInstanceOf(BuildFailed);
  });

  test("a missing image that cannot be pulled fails with IMAGE_UNAVAILABLE naming it", async () => {
    const missing = "platform-test/does-not-exist:never";
    await expect(driver.ensureImage(missing)).rejects.toMatchObject({ code: "IMAGE_UNAVAILABLE", message: expect.stringContaining(missing) });
  });

  test("networks carry labels and aliases resolve between containers", async () => {
    const network = uniqueName("platform-test-net");
    await driver.ensureNetwork(network, { [LABEL_MANAGED]: "true" });
    await driver.ensureNetwork(network, { [LABEL_MANAGED]: "true" }); // idempotent
    created.networks.push(network);
    await run({ network: { name: network, aliases: ["db-alias"] } });
    const client = await run({ network: { name: network, aliases: [] } });
    const resolved = await driver.exec(client, { command: ["getent", "hosts", "db-alias"] });
    expect(resolved.exitCode).toBe(0);
    const [info] = await dockerJson("network", "inspect", network);
    expect(info.Labels[LABEL_MANAGED]).toBe("true");
  });

  test("concurrent ensureNetwork calls make one network, not two of the same name", async () => {
    const network = uniqueName("platform-test-race");
    created.networks.push(network);
    await Promise.all(Array.from({ length: 5 }, () => driver.ensureNetwork(network, { [LABEL_MANAGED]: "true" })));
    const listed = (await dockerCli("network", "ls", "-q", "--filter", `name=^${network}$`)).trim().split("\n");
    expect(listed).toHaveLength(1);
  });

  test("a network is released only when no container, running or stopped, is attached", async () => {
    const network = uniqueName("platform-test-release");
    created.networks.push(network);
    await driver.ensureNetwork(network, { [LABEL_MANAGED]: "true" });
    const id = await driver.createContainer(spec({ network: { name: network, aliases: [] } }));
    created.containers.push(id);
    expect(await driver.removeNetworkIfUnused(network)).toBe(false); // created, never started
    await driver.startContainer(id);
    expect(await driver.removeNetworkIfUnused(network)).toBe(false);
    expect((await driver.inspectContainer(id)).networks[network]).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    await driver.stopContainer(id, 1);
    // A stopped container has no address: an empty one would send a connect to this machine's loopback.
    expect((await driver.inspectContainer(id)).networks).toEqual({});
    expect(await driver.removeNetworkIfUnused(network)).toBe(false);
    await driver.startContainer(id); // still has its network
    await driver.removeContainer(id);
    expect(await driver.removeNetworkIfUnused(network)).toBe(true);
    expect((await dockerCli("network", "ls", "-q", "--filter", `name=^${network}$`)).trim()).toBe("");
  });

  test("only platform-labelled images and volumes are ever removed", async () => {
    const foreign = uniqueName("user-volume");
    await dockerCli("volume", "create", foreign);
    try {
      expect(await driver.removeVolume(foreign)).toBe(false);
      expect((await dockerJson("volume", "inspect", foreign))[0].Name).toBe(foreign);
    } finally {
      await dockerCli("volume", "rm", foreign);
    }
    expect(await driver.removeImage(image)).toBe(false);
    expect(await driver.hasImage(image)).toBe(true);
  });
});

test("the tests' docker CLI witness answers text: an ID that reads as a JSON number stays an ID", async () => {
  // `docker version --format` prints its template as it is: here a short ID made of digits around an "e".
  expect(await dockerCli("version", "--format", "123456e78901")).toBe("123456e78901\n");
  expect((await dockerJson("image", "inspect", image))[0].RepoTags).toContain(image);
});
