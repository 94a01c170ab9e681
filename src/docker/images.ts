// Images on a machine's engine: present or pulled, built from a tar context, committed from a
// container, listed and removed by label. Called through DockerDriver, the one entry point.
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
  onLog?: (line: string) => void;
  /** Aborting drops the connection, which makes the engine stop the build; rejects with the signal's reason. */
  signal?: AbortSignal;
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
    await engine.call(`pull ${image}`, async () => {
      const stream = await engine.docker.pull(image);
      await new Promise<void>((resolve, reject) =>
        engine.docker.modem.followProgress(
          stream,
          (error, output) => {
            const failed = output?.find((event: { error?: string }) => event.error);
            if (error || failed) reject(error ?? new Error(failed.error));
            else resolve();
          },
          (event: { status?: string; progress?: string; id?: string }) => {
            if (event.status) onProgress([event.id, event.status, event.progress].filter(Boolean).join(" "));
          },
        ),
      );
    }, null);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw new ApiError("IMAGE_UNAVAILABLE", `Image ${image} is not present and could not be pulled: ${(error as Error).message}`);
  }
}

/** Builds an image from a tar context, streaming the build log; rejects with the build's own error. */
export async function build(engine: Engine, options: BuildOptions): Promise<string> {
  return engine.call(`build ${options.tag}`, async () => {
    const context =
      options.context instanceof Uint8Array
        ? Readable.from([Buffer.from(options.context)])
        : Readable.fromWeb(options.context as never);
    const stream = await engine.docker.buildImage(context as never, {
      t: options.tag,
      dockerfile: options.dockerfile,
      ...(options.memoryMB && { memory: options.memoryMB * 1024 * 1024, memswap: options.memoryMB * 1024 * 1024 }),
      labels: options.labels,
      buildargs: options.buildArgs,
      rm: true,
      forcerm: true,
    });
    let imageId = "";
    await new Promise<void>((resolve, reject) => {
      const abort = () => {
        (stream as unknown as Readable).destroy();
        reject(options.signal!.reason);
      };
      if (options.signal?.aborted) return abort();
      options.signal?.addEventListener("abort", abort, { once: true });
      engine.docker.modem.followProgress(
        stream,
        (error, output) => {
          options.signal?.removeEventListener("abort", abort);
          const failed = output?.find((event: { error?: string }) => event.error);
          if (error) reject(error);
          else if (failed) reject(new BuildFailed(failed.error));
          else resolve();
        },
        (event: { stream?: string; status?: string; aux?: { ID?: string } }) => {
          if (event.aux?.ID) imageId = event.aux.ID;
          const text = event.stream ?? event.status;
          if (text) for (const line of text.split("\n")) if (line.trim()) options.onLog?.(line.replace(/\r$/, ""));
        },
      );
    });
    return imageId || (await engine.docker.getImage(options.tag).inspect()).Id;
  }, null);
}

/** Saves a container's file system (and its config, labels included) as the image `repo:tag`. */
export async function commitContainer(engine: Engine, id: string, repo: string, tag: string): Promise<void> {
  await engine.call(`commit ${id}`, () => engine.docker.getContainer(id).commit({ repo, tag, pause: false }), SLOW_CALL_TIMEOUT_MS);
}

/** Removes an image only if it carries the platform's label. */
export async function remove(engine: Engine, image: string): Promise<boolean> {
  try {
    const info = await engine.call(`inspect image ${image}`, () => engine.docker.getImage(image).inspect());
    if (!info.Config?.Labels?.[LABEL_MANAGED]) return false;
    await engine.call(`remove image ${image}`, () => engine.docker.getImage(image).remove({ force: true }), SLOW_CALL_TIMEOUT_MS);
    return true;
  } catch (error) {
    if (error instanceof DockerNotFound) return false;
    throw error;
  }
}

export async function list(engine: Engine, labels: Record<string, string>): Promise<ImageSummary[]> {
  const images = await engine.call("list images", () => engine.docker.listImages({ filters: { label: labelFilter(labels) } }));
  return images.map((image) => ({ id: image.Id, tags: image.RepoTags ?? [], labels: image.Labels ?? {} }));
}
