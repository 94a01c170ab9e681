// Images on a machine's engine: present or pulled, built from a tar context, inspected, committed
// from a container, listed and removed by label. Called through DockerDriver, the one entry point.
import { Readable } from "node:stream";
import { ApiError } from "../http/errors";
import { LABEL_MANAGED } from "./container-spec";
import { BuildFailed, DockerNotFound, labelFilter, SLOW_CALL_TIMEOUT_MS, type Engine } from "./engine";

export interface BuildOptions {
  /** A tar of the build context, e.g. from ./tar.ts. */
  context: Uint8Array | ReadableStream<Uint8Array>;
  /** Path of the Dockerfile inside the context (default `Dockerfile`). */
  dockerfile?: string;
  tag: string;
  /** Labels added by the engine, one build step each (a Dockerfile may carry its own LABEL instead). */
  labels?: Record<string, string>;
  buildArgs?: Record<string, string>;
  /** Memory (and equal swap) of the build's containers: user code runs in them (install scripts, builds). */
  memoryMB?: number;
  /** CPUs of the build's containers (a CFS quota; fractions allowed). */
  cpus?: number;
  /** Network of the build's RUN steps, by name; omitted: the engine's default bridge. */
  network?: string;
  /** Each line of the engine's output, as the platform's own lines. */
  onLog?: (line: string) => void;
  /**
   * Instead of onLog, for output of user code (RUN steps): whole lines, several per call, read from
   * the engine no faster than `outputBytesPerSecond` (a flood then waits, not the platform's CPU).
   */
  onOutput?: (text: string) => void;
  outputBytesPerSecond?: number;
  /** Aborting drops the connection, which makes the engine stop the build; rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** What an image is and what it asks of the containers (and builds) made from it. */
export interface ImageConfig {
  /** Its full ID, `sha256:…`. */
  id: string;
  /** The names the engine holds for it: `repository:tag` and `repository@digest`, as the engine spells them (`busybox:latest`). */
  names: string[];
  /** ONBUILD instructions: they run in any build that starts from it. */
  onBuild: string[];
  labels: Record<string, string>;
  /** USER of the image; "" when none (root). */
  user: string;
  /** Container ports of its EXPOSE lines, e.g. ["8080/tcp"]. */
  exposedPorts: string[];
  /** Paths of its VOLUME lines. */
  volumes: string[];
  /** Bytes of its file system, unpacked. */
  sizeBytes: number;
}

export interface ImageSummary {
  id: string;
  tags: string[];
  labels: Record<string, string>;
}

export async function exists(engine: Engine, image: string): Promise<boolean> {
  try {
    await engine.call(`inspect image ${image}`, () => engine.docker.getImage(image).inspect());
    return true;
  } catch (error) {
    if (error instanceof DockerNotFound) return false;
    throw error;
  }
}

/** Uses the image when present, pulls it otherwise; IMAGE_UNAVAILABLE names it when neither works. */
export async function ensure(engine: Engine, image: string, onProgress: (line: string) => void = () => {}): Promise<void> {
  if (await exists(engine, image)) return;
  onProgress(`Pulling ${image}`);
  try {
    await pull(engine, image, { onProgress });
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw new ApiError("IMAGE_UNAVAILABLE", `Image ${image} is not present and could not be pulled: ${(error as Error).message}`);
  }
}

/** A registry login the engine sends with a pull or checks (its /auth): never logged, never stored by the engine. */
export interface RegistryAuth {
  username: string;
  password: string;
  serveraddress: string;
}

export interface PullOptions {
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
  /** Sent to the registry with this pull only; omitted: no credentials. */
  auth?: RegistryAuth;
  /**
   * The most bytes the layers may take to download (their sizes as the engine announces them,
   * summed per layer): past it the pull is stopped, before the disk fills, and rejects with BuildFailed.
   */
  maxDownloadBytes?: number;
}

/**
 * Pulls the image; rejects with the engine's reason. Aborting drops the connection, which stops
 * the pull; it then rejects with the signal's reason. Answers the manifest digest the engine
 * reports having pulled (`sha256:…`), when it says.
 */
export async function pull(engine: Engine, image: string, options: PullOptions = {}): Promise<string | undefined> {
  const { onProgress = () => {}, signal } = options;
  let digest: string | undefined;
  await engine.call(`pull ${image}`, async () => {
    // The modem sends `authconfig` as the X-Registry-Auth header (never in the URL). The signal also
    // ends a pull the engine has not answered yet (a registry that hangs before the first byte).
    const request = engine.docker.pull(image, { ...(options.auth && { authconfig: options.auth }), ...(signal && { abortSignal: signal }) });
    const stream = (await request.catch((error: unknown) => {
      throw signal?.aborted ? signal.reason : error;
    })) as unknown as Readable;
    const abort = () => stream.destroy();
    if (signal?.aborted) abort();
    signal?.addEventListener("abort", abort, { once: true });
    const layerBytes = new Map<string, number>();
    let downloadBytes = 0;
    try {
      await new Promise<void>((resolve, reject) =>
        engine.docker.modem.followProgress(
          stream,
          (error, output) => {
            const failed = output?.find((event: { error?: string }) => event.error);
            if (error || failed) reject(error ?? new Error(failed.error));
            else resolve();
          },
          (event: { status?: string; progress?: string; id?: string; progressDetail?: { total?: number } }) => {
            digest = /^Digest: (sha256:[0-9a-f]{64})$/.exec(event.status ?? "")?.[1] ?? digest;
            if (event.status) onProgress([event.id, event.status, event.progress].filter(Boolean).join(" "));
            const total = event.progressDetail?.total;
            if (event.status !== "Downloading" || !event.id || !total || layerBytes.get(event.id) === total) return;
            downloadBytes += total - (layerBytes.get(event.id) ?? 0);
            layerBytes.set(event.id, total);
            if (options.maxDownloadBytes !== undefined && downloadBytes > options.maxDownloadBytes) {
              stream.destroy(new BuildFailed(`its layers take over ${Math.floor(options.maxDownloadBytes / (1024 * 1024))} MB to download`));
            }
          },
        ),
      );
    } catch (error) {
      throw signal?.aborted ? signal.reason : error;
    } finally {
      signal?.removeEventListener("abort", abort);
    }
  }, null);
  return digest;
}

/** Asks the engine to log in to a registry with `auth` (its /auth: a real login, nothing kept); rejects with the engine's reason. */
export async function checkLogin(engine: Engine, auth: RegistryAuth): Promise<void> {
  await engine.call(`log in to ${auth.serveraddress}`, () => engine.docker.checkAuth(auth));
}

/** A line of output this long without a line end is passed on as it is. */
const MAX_PARTIAL_LINE = 64 * 1024;
/** The classic builder wraps what a RUN step writes to stderr in these colour codes. */
const STDERR_COLOURS = /\x1b\[(?:91|0)m/g;

/** Builds an image from a tar context, streaming the build log; rejects with the build's own error. */
export async function build(engine: Engine, options: BuildOptions): Promise<string> {
  return engine.call(`build ${options.tag}`, async () => {
    const context =
      options.context instanceof Uint8Array
        ? Readable.from([Buffer.from(options.context)])
        : Readable.fromWeb(options.context as never);
    const stream = (await engine.docker.buildImage(context as never, {
      t: options.tag,
      dockerfile: options.dockerfile,
      ...(options.memoryMB && { memory: options.memoryMB * 1024 * 1024, memswap: options.memoryMB * 1024 * 1024 }),
      ...(options.cpus && { cpuperiod: 100_000, cpuquota: Math.round(options.cpus * 100_000) }),
      ...(options.network && { networkmode: options.network }),
      labels: options.labels,
      buildargs: options.buildArgs,
      rm: true,
      forcerm: true,
    })) as unknown as Readable;
    const abort = () => stream.destroy();
    if (options.signal?.aborted) abort();
    options.signal?.addEventListener("abort", abort, { once: true });
    const output = new OutputLines(options);
    let imageId = "";
    let failure: string | undefined;
    // The engine's messages: one JSON object a line.
    const handle = (message: string) => {
      const event = parseEvent(message);
      if (event?.error) failure ??= event.error;
      if (event?.aux?.ID) imageId = event.aux.ID;
      output.add(event?.stream ?? (event?.status ? `${event.status}\n` : ""));
    };
    try {
      const decoder = new TextDecoder();
      let partial = "";
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        const messages = (partial + decoder.decode(chunk, { stream: true })).split("\n");
        partial = messages.pop()!;
        for (const message of messages) handle(message);
        output.flush(false);
        await output.pace(chunk.length);
      }
      handle(partial);
      output.flush(true);
    } catch (error) {
      if (!options.signal?.aborted) throw error;
    } finally {
      options.signal?.removeEventListener("abort", abort);
    }
    if (options.signal?.aborted) throw options.signal.reason;
    if (failure) throw new BuildFailed(failure);
    return imageId || (await engine.docker.getImage(options.tag).inspect()).Id;
  }, null);
}

interface BuildEvent {
  stream?: string;
  status?: string;
  error?: string;
  aux?: { ID?: string };
}

function parseEvent(message: string): BuildEvent | undefined {
  if (!message.trim()) return undefined;
  try {
    return JSON.parse(message) as BuildEvent;
  } catch {
    return { stream: `${message}\n` };
  }
}

/** The engine's output on its way to onLog (line by line) or onOutput (whole lines, paced). */
class OutputLines {
  private pending = "";
  private windowStart = performance.now();
  private windowBytes = 0;

  constructor(private readonly options: BuildOptions) {}

  add(text: string) {
    this.pending += text.replace(STDERR_COLOURS, "");
  }

  /** Passes on the whole lines gathered (all of it at the end, or when a line grows too long). */
  flush(all: boolean) {
    const lineEnd = all || this.pending.length > MAX_PARTIAL_LINE ? this.pending.length : this.pending.lastIndexOf("\n") + 1;
    if (lineEnd <= 0) return;
    const text = this.pending.slice(0, lineEnd);
    this.pending = this.pending.slice(lineEnd);
    if (this.options.onOutput) {
      this.options.onOutput(text);
      return;
    }
    for (const line of text.split("\n")) if (line.trim()) this.options.onLog?.(line.replace(/\r$/, ""));
  }

  /** Waits when the output came faster than outputBytesPerSecond: the engine's writes wait meanwhile. */
  async pace(bytes: number) {
    const limit = this.options.onOutput && this.options.outputBytesPerSecond;
    if (!limit) return;
    this.windowBytes += bytes;
    const elapsed = performance.now() - this.windowStart;
    const earliest = (this.windowBytes / limit) * 1000;
    if (earliest > elapsed) await Bun.sleep(earliest - elapsed);
    if (elapsed > 1000) {
      this.windowStart = performance.now();
      this.windowBytes = 0;
    }
  }
}

/** The image's ID and names, and the parts of its config that bear on how its containers (and builds from it) run. */
export async function inspect(engine: Engine, image: string): Promise<ImageConfig> {
  const info = await engine.call(`inspect image ${image}`, () => engine.docker.getImage(image).inspect());
  return {
    id: info.Id,
    names: [...(info.RepoTags ?? []), ...(info.RepoDigests ?? [])],
    onBuild: info.Config?.OnBuild ?? [],
    labels: info.Config?.Labels ?? {},
    user: info.Config?.User ?? "",
    exposedPorts: Object.keys(info.Config?.ExposedPorts ?? {}),
    volumes: Object.keys(info.Config?.Volumes ?? {}),
    sizeBytes: info.Size ?? 0,
  };
}

/** Gives the image `id` the name `repo:tag` as well. */
export async function tag(engine: Engine, id: string, repo: string, tagName: string): Promise<void> {
  await engine.call(`tag ${id}`, () => engine.docker.getImage(id).tag({ repo, tag: tagName }));
}

/**
 * Takes the name `reference` off its image, never forced: the image itself goes only when nothing
 * else names it and no container uses it. Answers false when no image had that name.
 */
export async function untag(engine: Engine, reference: string): Promise<boolean> {
  try {
    await engine.call(`untag image ${reference}`, () => engine.docker.getImage(reference).remove({ force: false }), SLOW_CALL_TIMEOUT_MS);
    return true;
  } catch (error) {
    if (error instanceof DockerNotFound) return false;
    throw error;
  }
}

/** Saves a container's file system (and its config, labels included) as the image `repo:tag`. */
export async function commitContainer(engine: Engine, id: string, repo: string, tag: string): Promise<void> {
  await engine.call(`commit ${id}`, () => engine.docker.getContainer(id).commit({ repo, tag, pause: false }), SLOW_CALL_TIMEOUT_MS);
}

/** The name the platform gives a pulled image for one app build (src/apps/images/pull.ts): a reference it may drop. */
export const PULLED_APP_TAG = /^platform-app-[a-z0-9_]+:[a-z0-9_]+$/;

/**
 * Removes an image only if it carries the platform's label. A pulled image carries none (its
 * labels are its publisher's): only the platform's own name for it (PULLED_APP_TAG) is removed,
 * never forced, so the image itself goes only when nothing else names or runs it.
 */
export async function remove(engine: Engine, image: string): Promise<boolean> {
  try {
    const info = await engine.call(`inspect image ${image}`, () => engine.docker.getImage(image).inspect());
    if (!info.Config?.Labels?.[LABEL_MANAGED]) {
      if (!PULLED_APP_TAG.test(image) || !info.RepoTags?.includes(image)) return false;
      return untag(engine, image);
    }
    await engine.call(`remove image ${image}`, () => engine.docker.getImage(image).remove({ force: true }), SLOW_CALL_TIMEOUT_MS);
    return true;
  } catch (error) {
    if (error instanceof DockerNotFound) return false;
    throw error;
  }
}

/**
 * Removes the untagged images with no child among `shortIds` (12-hex ids a build printed for its
 * steps): what a failed build leaves. Never forced, so an image a container uses stays.
 */
export async function removeDangling(engine: Engine, shortIds: readonly string[]): Promise<number> {
  if (!shortIds.length) return 0;
  const wanted = new Set(shortIds);
  const dangling = await engine.call("list dangling images", () => engine.docker.listImages({ filters: { dangling: ["true"] } }));
  let removed = 0;
  for (const image of dangling) {
    if (!wanted.has(image.Id.replace(/^sha256:/, "").slice(0, 12))) continue;
    await engine.call(`remove image ${image.Id}`, () => engine.docker.getImage(image.Id).remove(), SLOW_CALL_TIMEOUT_MS).then(() => removed++, () => {});
  }
  return removed;
}

export async function list(engine: Engine, labels: Record<string, string>): Promise<ImageSummary[]> {
  const images = await engine.call("list images", () => engine.docker.listImages({ filters: { label: labelFilter(labels) } }));
  return images.map((image) => ({ id: image.Id, tags: image.RepoTags ?? [], labels: image.Labels ?? {} }));
}
