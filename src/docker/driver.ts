// The Docker driver: the only code that talks to an engine. One driver per machine. Every call
// fails fast with DOCKER_UNAVAILABLE (503, Retry-After) while the engine can't be reached, works
// again as soon as it answers, and fails with DOCKER_TIMEOUT (504) when the engine leaves it unanswered.
// Images and exec live in ./images.ts and ./exec.ts; callers use them through this class.
import Docker from "dockerode";
import { Readable } from "node:stream";
import { ApiError } from "../http/errors";
import { nanoCpus, toCreateOptions, LABEL_MANAGED, type ContainerSpec } from "./container-spec";
import { dockerOptions, isConnectionError, type DockerConnection } from "./connection";
import { statsFromSample, type ContainerStats } from "./stats";
import { FrameDemuxer, LineSplitter, demuxToLines, type Frame, type LogLine } from "./stream";
import { BuildFailed, DockerConflict, DockerNotFound, labelFilter, SLOW_CALL_TIMEOUT_MS, type Engine } from "./engine";
import * as images from "./images";
import { runExec, streamExec, type ExecOptions, type ExecStream, type RunOptions } from "./exec";

export { BuildFailed, DockerConflict, DockerNotFound } from "./engine";
export { ExecStopped } from "./exec";

/** After a failed connection, calls fail at once for this long instead of waiting on the engine again. */
const UNAVAILABLE_GRACE_MS = 2_000;
const RETRY_AFTER_SECONDS = "5";
/** Plain engine calls (inspect, list, create, start...) answer in well under this. */
const CALL_TIMEOUT_MS = 30_000;

export interface ContainerSummary {
  id: string;
  name: string;
  state: string;
  /** Up, and not between two runs of its restart policy. */
  running: boolean;
  exitCode: number | null;
  startedAt: string | null;
  labels: Record<string, string>;
  image: string;
  /** Published host port of each container port, e.g. { 3000: 49153 }. */
  ports: Record<number, number>;
  /** Address on each network the container is attached to and has one on (a stopped container has none). */
  networks: Record<string, string>;
  memoryLimitBytes: number;
  restartPolicy: string;
}

/**
 * A container's address on each network it has one on. A stopped (or created) container lists its
 * networks with an empty IPAddress: that is no address, and must not reach a caller, to whom a
 * connect to "" is a connect to this machine's own loopback.
 */
export function networkAddressesOf(networks: Record<string, { IPAddress?: string }> | undefined): Record<string, string> {
  const addresses: Record<string, string> = {};
  for (const [name, network] of Object.entries(networks ?? {})) if (network.IPAddress) addresses[name] = network.IPAddress;
  return addresses;
}

export class DockerDriver {
  private readonly docker: Docker;
  /** The client and `call`, for the parts in ./images.ts and ./exec.ts. */
  private readonly engine: Engine;
  private unavailableUntil = 0;
  private readonly networkCreations = new Map<string, Promise<void>>();
  private engineCpus: Promise<number> | null = null;

  private readonly callTimeoutMs: number;

  constructor(
    readonly machineId: string,
    connection: DockerConnection,
    options: { callTimeoutMs?: number } = {},
  ) {
    this.docker = new Docker(dockerOptions(connection));
    this.callTimeoutMs = options.callTimeoutMs ?? CALL_TIMEOUT_MS;
    this.engine = { docker: this.docker, call: (what, run, timeoutMs) => this.call(what, run, timeoutMs) };
  }

  /**
   * Runs one engine call, turning "engine unreachable" into DOCKER_UNAVAILABLE, 404 into
   * DockerNotFound, and a call the engine leaves unanswered past its time into DOCKER_TIMEOUT (the
   * request is aborted through `signal`). `timeoutMs`: the driver's default, a longer one for slow
   * kinds of calls, or null for those that last as long as their work (builds, pulls, waits).
   */
  private async call<T>(what: string, run: (signal: AbortSignal) => Promise<T>, timeoutMs: number | null = this.callTimeoutMs): Promise<T> {
    if (Date.now() < this.unavailableUntil) throw this.unavailable();
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      if (timeoutMs === null) return;
      timer = setTimeout(() => {
        reject(new ApiError("DOCKER_TIMEOUT", `The Docker engine of machine '${this.machineId}' did not answer (${what}) within ${timeoutMs / 1000} s; try again`, {
          "Retry-After": RETRY_AFTER_SECONDS,
        }));
        controller.abort();
      }, timeoutMs);
    });
    try {
      return await Promise.race([run(controller.signal), timedOut]);
    } catch (error) {
      if (error instanceof BuildFailed || error instanceof ApiError || error instanceof DockerNotFound || error instanceof DockerConflict) throw error;
      if (isConnectionError(error)) {
        this.unavailableUntil = Date.now() + UNAVAILABLE_GRACE_MS;
        throw this.unavailable();
      }
      if ((error as { statusCode?: number }).statusCode === 404) throw new DockerNotFound(`${what}: not found`);
      const reason = (error as { json?: { message?: string } }).json?.message ?? (error as Error).message;
      if ((error as { statusCode?: number }).statusCode === 409) throw new DockerConflict(`docker ${what} failed: ${reason}`);
      throw new Error(`docker ${what} failed: ${reason}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private unavailable() {
    return new ApiError("DOCKER_UNAVAILABLE", `The Docker engine of machine '${this.machineId}' is unreachable; try again shortly`, {
      "Retry-After": RETRY_AFTER_SECONDS,
    });
  }

  async ping(): Promise<{ version: string; apiVersion: string }> {
    return this.call("ping", async () => {
      const version = await this.docker.version();
      return { version: version.Version, apiVersion: version.ApiVersion };
    });
  }

  // ---- images (./images.ts) -----------------------------------------------------------------

  hasImage(image: string): Promise<boolean> {
    return images.exists(this.engine, image);
  }

  /** Uses the image when present, pulls it otherwise; IMAGE_UNAVAILABLE names it when neither works. */
  ensureImage(image: string, onProgress?: (line: string) => void): Promise<void> {
    return images.ensure(this.engine, image, onProgress);
  }

  /** Pulls the image, with registry credentials when given; answers the digest pulled; rejects with the engine's reason (or the signal's, when aborted). */
  pullImage(image: string, options?: images.PullOptions): Promise<string | undefined> {
    return images.pull(this.engine, image, options);
  }

  /** A real login to a registry, made by the engine; rejects with its reason. */
  checkRegistryLogin(auth: images.RegistryAuth): Promise<void> {
    return images.checkLogin(this.engine, auth);
  }

  /** Builds an image from a tar context, streaming the build log; rejects with the build's own error. */
  buildImage(options: images.BuildOptions): Promise<string> {
    return images.build(this.engine, options);
  }

  /** An image's ID, names and ONBUILD, and what it asks of its containers: labels, USER, EXPOSE, VOLUME. */
  inspectImage(image: string): Promise<images.ImageConfig> {
    return images.inspect(this.engine, image);
  }

  /** Gives the image `id` the name `repo:tag` as well. */
  tagImage(id: string, repo: string, tag: string): Promise<void> {
    return images.tag(this.engine, id, repo, tag);
  }

  /** Takes a name off its image, never forced (the image goes only when nothing else names or runs it); false when no image had it. */
  untagImage(reference: string): Promise<boolean> {
    return images.untag(this.engine, reference);
  }

  /** Saves a container's file system (and its config, labels included) as the image `repo:tag`. */
  commitContainer(id: string, repo: string, tag: string): Promise<void> {
    return images.commitContainer(this.engine, id, repo, tag);
  }

  /** Removes an image only if it carries the platform's label (a pulled image: only the platform's own tag for it). */
  removeImage(image: string): Promise<boolean> {
    return images.remove(this.engine, image);
  }

  removeDanglingImages(shortIds: readonly string[]): Promise<number> {
    return images.removeDangling(this.engine, shortIds);
  }

  listImages(labels: Record<string, string>): Promise<images.ImageSummary[]> {
    return images.list(this.engine, labels);
  }


  // ---- containers ---------------------------------------------------------------------------

  async createContainer(spec: ContainerSpec): Promise<string> {
    const options = toCreateOptions(spec.cpus === undefined ? spec : { ...spec, cpus: await this.cpusWithinEngine(spec.cpus) });
    const container = await this.call(`create ${spec.name}`, () => this.docker.createContainer(options));
    return container.id;
  }

  async startContainer(id: string): Promise<void> {
    await this.call(`start ${id}`, async (signal) => {
      try {
        await this.docker.getContainer(id).start({ abortSignal: signal });
      } catch (error) {
        if ((error as { statusCode?: number }).statusCode !== 304) throw error; // already running
      }
    });
  }

  async stopContainer(id: string, timeoutSeconds = 10): Promise<void> {
    await this.call(`stop ${id}`, async (signal) => {
      try {
        await this.docker.getContainer(id).stop({ t: timeoutSeconds, abortSignal: signal });
      } catch (error) {
        if ((error as { statusCode?: number }).statusCode !== 304) throw error; // already stopped
      }
    }, timeoutSeconds * 1000 + this.callTimeoutMs);
  }

  /**
   * Removes a container (running or not); a missing one counts as removed. `withAnonymousVolumes`
   * also removes the volumes its image's VOLUME lines made (named volumes are never removed here):
   * an app's would otherwise pile up, one per release.
   */
  async removeContainer(id: string, { withAnonymousVolumes = false } = {}): Promise<void> {
    try {
      await this.call(`remove ${id}`, (signal) => this.docker.getContainer(id).remove({ force: true, v: withAnonymousVolumes, abortSignal: signal }), SLOW_CALL_TIMEOUT_MS);
    } catch (error) {
      if (!(error instanceof DockerNotFound)) throw error;
    }
  }

  async setRestartPolicy(id: string, policy: "no" | "unless-stopped"): Promise<void> {
    await this.call(`update ${id}`, () => this.docker.getContainer(id).update({ RestartPolicy: { Name: policy } }));
  }

  async updateContainerMemory(id: string, memoryMB: number): Promise<void> {
    const bytes = Math.round(memoryMB * 1024 * 1024);
    await this.call(`update ${id}`, () => this.docker.getContainer(id).update({ Memory: bytes, MemorySwap: bytes }));
  }

  async updateContainerCpus(id: string, cpus: number): Promise<void> {
    const limit = nanoCpus(await this.cpusWithinEngine(cpus));
    await this.call(`update ${id}`, () => this.docker.getContainer(id).update({ NanoCpus: limit }));
  }

  /** The engine refuses a CPU limit above its machine's CPUs; such a limit means "all of them" anyway. */
  private async cpusWithinEngine(cpus: number): Promise<number> {
    this.engineCpus ??= this.call("info", async () => (await this.docker.info()).NCPU as number);
    const available = await this.engineCpus.catch((error) => {
      this.engineCpus = null;
      throw error;
    });
    return available > 0 ? Math.min(cpus, available) : cpus;
  }

  async inspectContainer(id: string): Promise<ContainerSummary> {
    const info = await this.call(`inspect ${id}`, (signal) => this.docker.getContainer(id).inspect({ abortSignal: signal }));
    const ports: Record<number, number> = {};
    for (const [port, bindings] of Object.entries(info.NetworkSettings?.Ports ?? {})) {
      const hostPort = (bindings as { HostPort: string }[] | null)?.[0]?.HostPort;
      if (hostPort) ports[Number.parseInt(port, 10)] = Number(hostPort);
    }
    const networks = networkAddressesOf(info.NetworkSettings?.Networks);
    return {
      id: info.Id,
      name: info.Name.replace(/^\//, ""),
      state: info.State.Status,
      running: info.State.Running && !info.State.Restarting,
      exitCode: info.State.Running && !info.State.Restarting ? null : info.State.ExitCode,
      startedAt: info.State.StartedAt ?? null,
      labels: info.Config.Labels ?? {},
      image: info.Config.Image,
      ports,
      networks,
      memoryLimitBytes: info.HostConfig.Memory ?? 0,
      restartPolicy: info.HostConfig.RestartPolicy?.Name ?? "no",
    };
  }

  /** Containers (running or not) carrying all of the given labels. */
  async listContainers(labels: Record<string, string>): Promise<{ id: string; name: string; state: string; labels: Record<string, string> }[]> {
    const containers = await this.call("list containers", (signal) =>
      this.docker.listContainers({ all: true, filters: { label: labelFilter(labels) }, abortSignal: signal }),
    );
    return containers.map((container) => ({
      id: container.Id,
      name: (container.Names[0] ?? "").replace(/^\//, ""),
      state: container.State,
      labels: container.Labels ?? {},
    }));
  }

  async logs(id: string, options: { tail: number; timestamps: boolean }): Promise<LogLine[]> {
    const raw = await this.call(`logs ${id}`, () =>
      this.docker.getContainer(id).logs({ stdout: true, stderr: true, follow: false, tail: options.tail, timestamps: options.timestamps }),
    );
    return demuxToLines(new Uint8Array(raw as unknown as Buffer), options.timestamps);
  }

  /** Live log lines until the container stops or `signal` aborts. */
  async *followLogs(id: string, options: { tail: number; timestamps: boolean; signal?: AbortSignal }): AsyncGenerator<LogLine> {
    const stream = (await this.call(`logs ${id}`, () =>
      this.docker.getContainer(id).logs({ stdout: true, stderr: true, follow: true, tail: options.tail, timestamps: options.timestamps }),
    )) as unknown as Readable;
    const abort = () => stream.destroy();
    options.signal?.addEventListener("abort", abort, { once: true });
    const demuxer = new FrameDemuxer();
    const splitter = new LineSplitter(options.timestamps);
    try {
      for await (const chunk of stream) {
        for (const frame of demuxer.push(new Uint8Array(chunk as Buffer))) yield* splitter.push(frame);
      }
      yield* splitter.flush();
    } catch (error) {
      if (!options.signal?.aborted) throw error; // aborting destroys the stream: that is the normal end
    } finally {
      options.signal?.removeEventListener("abort", abort);
      stream.destroy();
    }
  }

  async stats(id: string): Promise<ContainerStats> {
    const sample = (await this.call(`stats ${id}`, () => this.docker.getContainer(id).stats({ stream: false }))) as Docker.ContainerStats;
    return statsFromSample(sample);
  }

  /**
   * Extracts a tar stream (e.g. from ./tar.ts; gzip is taken too) into a container, running or not;
   * missing parent folders are made. `timeoutMs`: how long the whole copy may take.
   */
  async extractToContainer(id: string, directory: string, tar: ReadableStream<Uint8Array>, timeoutMs = SLOW_CALL_TIMEOUT_MS): Promise<void> {
    await this.call(
      `copy into ${id}`,
      () => this.docker.getContainer(id).putArchive(Readable.fromWeb(tar as never) as unknown as NodeJS.ReadableStream, { path: directory }),
      timeoutMs,
    );
  }

  /**
   * A tar of `path` in a container, running or only created (the engine mounts a created
   * container's volumes for the copy), as the engine streams it. Cancelling the stream ends the copy.
   */
  async readFromContainer(id: string, path: string): Promise<ReadableStream<Uint8Array>> {
    const archive = (await this.call(`copy from ${id}`, () => this.docker.getContainer(id).getArchive({ path }))) as unknown as Readable;
    return Readable.toWeb(archive) as unknown as ReadableStream<Uint8Array>;
  }

  /**
   * The container's stdout and stderr frames from now on, until it exits (attach before starting
   * it to miss nothing). The engine waits while the reader does: a slow reader slows the writer.
   */
  async attachOutput(id: string): Promise<AsyncGenerator<Frame>> {
    const stream = (await this.call(`attach ${id}`, () =>
      this.docker.getContainer(id).attach({ stream: true, stdout: true, stderr: true, logs: false }),
    )) as unknown as Readable;
    return (async function* () {
      const demuxer = new FrameDemuxer();
      try {
        for await (const chunk of stream) yield* demuxer.push(new Uint8Array(chunk as Buffer));
      } finally {
        stream.destroy();
      }
    })();
  }

  /** Waits until the container has stopped; its exit code, and whether the memory limit killed it. */
  async waitForExit(id: string): Promise<{ exitCode: number; outOfMemory: boolean }> {
    const result = await this.call(`wait ${id}`, () => this.docker.getContainer(id).wait({ condition: "not-running" }), null);
    const info = await this.call(`inspect ${id}`, () => this.docker.getContainer(id).inspect());
    return { exitCode: (result as { StatusCode: number }).StatusCode, outOfMemory: Boolean(info.State.OOMKilled) };
  }

  /** Writes files (path relative to `directory` → content) into a container, running or not. */
  async copyToContainer(id: string, directory: string, files: Record<string, string | Uint8Array>): Promise<void> {
    const archive = await new Bun.Archive(files).bytes();
    await this.call(`copy into ${id}`, () => this.docker.getContainer(id).putArchive(Buffer.from(archive), { path: directory }), SLOW_CALL_TIMEOUT_MS);
  }

  // ---- exec (./exec.ts) ---------------------------------------------------------------------

  /** Runs argv in a running container with stdout streamed back; past one of its limits the command is killed. */
  execStream(id: string, options: ExecOptions): Promise<ExecStream> {
    return streamExec(this.engine, id, options);
  }

  /** Runs argv and collects its output (bounded); past one of its limits the command is killed. */
  exec(id: string, options: RunOptions): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    return runExec(this.engine, id, options);
  }

  // ---- networks and volumes -----------------------------------------------------------------

  /** Creates the network unless it exists. Calls for one name are serialized: the engine would make two of the same name. */
  ensureNetwork(name: string, labels: Record<string, string>, driverOptions: Record<string, string> = {}): Promise<void> {
    const previous = this.networkCreations.get(name) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(async () => {
      const existing = await this.call("list networks", () => this.docker.listNetworks({ filters: { name: [name] } }));
      if (existing.some((network) => network.Name === name)) return;
      await this.call(`create network ${name}`, () =>
        this.docker.createNetwork({ Name: name, Driver: "bridge", Labels: labels, Options: driverOptions, CheckDuplicate: true }),
      );
    });
    this.networkCreations.set(name, next);
    void next.finally(() => {
      if (this.networkCreations.get(name) === next) this.networkCreations.delete(name);
    }).catch(() => {});
    return next;
  }

  /** Replaces a container's aliases on a network (disconnect, then connect): Docker publishes its ports anew. */
  async setNetworkAliases(id: string, network: string, aliases: string[]): Promise<void> {
    await this.call(`aliases of ${id} on ${network}`, async () => {
      await this.docker.getNetwork(network).disconnect({ Container: id, Force: true });
      await this.docker.getNetwork(network).connect({ Container: id, EndpointConfig: { Aliases: aliases } });
    });
  }

  /** Removes a platform-labelled network nothing is attached to; answers whether it did. */
  async removeNetworkIfUnused(name: string): Promise<boolean> {
    try {
      const info = await this.call(`inspect network ${name}`, () => this.docker.getNetwork(name).inspect());
      if (!info.Labels?.[LABEL_MANAGED]) return false;
      // The network's own container list holds running ones only; stopped ones would lose their network.
      const attached = await this.call(`containers on ${name}`, () => this.docker.listContainers({ all: true, filters: { network: [name] } }));
      if (attached.length > 0) return false;
      await this.call(`remove network ${name}`, () => this.docker.getNetwork(name).remove());
      return true;
    } catch (error) {
      if (error instanceof DockerNotFound) return false;
      throw error;
    }
  }

  async createVolume(name: string, labels: Record<string, string>): Promise<void> {
    await this.call(`create volume ${name}`, () => this.docker.createVolume({ Name: name, Labels: labels }));
  }

  /** Whether the engine has a volume of that name. */
  async hasVolume(name: string): Promise<boolean> {
    try {
      await this.call(`inspect volume ${name}`, () => this.docker.getVolume(name).inspect());
      return true;
    } catch (error) {
      if (error instanceof DockerNotFound) return false;
      throw error;
    }
  }

  /** The containers, running or not, that mount the volume. */
  async containersUsingVolume(name: string): Promise<{ id: string; name: string; running: boolean; image: string; labels: Record<string, string> }[]> {
    const listed = await this.call(`containers using ${name}`, () => this.docker.listContainers({ all: true, filters: { volume: [name] } }));
    return listed.map((container) => ({
      id: container.Id,
      name: (container.Names[0] ?? "").replace(/^\//, ""),
      running: container.State === "running",
      image: container.Image,
      labels: container.Labels ?? {},
    }));
  }

  /** Removes a volume only if it carries the platform's label. */
  async removeVolume(name: string): Promise<boolean> {
    try {
      const info = await this.call(`inspect volume ${name}`, () => this.docker.getVolume(name).inspect());
      if (!info.Labels?.[LABEL_MANAGED]) return false;
      await this.call(`remove volume ${name}`, () => this.docker.getVolume(name).remove());
      return true;
    } catch (error) {
      if (error instanceof DockerNotFound) return false;
      throw error;
    }
  }

  /** Bytes used by each platform volume, as the engine measures them. */
  async volumeUsage(): Promise<Record<string, number>> {
    const usage = await this.call("system df", () => this.docker.df(), SLOW_CALL_TIMEOUT_MS);
    const sizes: Record<string, number> = {};
    for (const volume of (usage as { Volumes?: { Name: string; Labels?: Record<string, string>; UsageData?: { Size: number } }[] }).Volumes ?? []) {
      if (volume.Labels?.[LABEL_MANAGED]) sizes[volume.Name] = volume.UsageData?.Size ?? 0;
    }
    return sizes;
  }
}
