// The build step of an image app: the image its reference names, pulled by the engine (with the
// workspace's credentials for that registry, if any), bounded in time (PLATFORM_IMAGE_PULL_TIMEOUT_SECONDS)
// and size (PLATFORM_IMAGE_MAX_MB: while downloading, and unpacked after), checked, and pinned: the build's image is the platform's own
// name for the exact image pulled (`platform-app-<app>:<build>`, on its ID), and the build records
// the digest. Which registries may be pulled from is the Dockerfile builds' policy
// (../dockerfile-images.ts). The names the pull added are taken off again, by the last pull in
// flight that uses them, so that once retention or a delete drops the platform's name, nothing
// keeps the image on the engine, and no name is left that a Dockerfile build could take for
// access. The build row lists them meanwhile: a restart's recovery takes off what a stopped pull left.
import { and, eq, isNotNull, isNull } from "drizzle-orm";
import { apps, builds, volumes } from "../../db/schema";
import { BuildFailed, DockerNotFound, type DockerDriver } from "../../docker/driver";
import type { ImageConfig } from "../../docker/images";
import { ApiError } from "../../http/errors";
import { Registries, registryMessage } from "../../registries/service";
import { imageReferenceRefusal, lookupHost, parseImageReference, registryAddressRefusal, registryPullRefusal } from "../dockerfile-images";
import type { AppRow, AppsContext } from "../deployer";
import { platformLabelsOf } from "./container";
import { DEFAULT_EXPOSE_PORT } from "../model";

/** The platform's own images (PLATFORM_IMAGE_*), by the engine's names: they keep them, as builds and databases start from them. */
function platformImageNames(config: Pick<AppsContext["config"], "images">): Set<string> {
  return new Set(Object.values(config.images).map((reference) => {
    const parsed = parseImageReference(reference);
    return typeof parsed === "string" ? reference : parsed.engineName;
  }));
}

/** Progress lines of a pull reach the build log at most this often (the engine sends one per chunk and layer). */
const PROGRESS_INTERVAL_MS = 2_000;
const MB = 1024 * 1024;

/**
 * Pulls in flight per machine and repository, and the names they added: the names are taken off
 * when the last of them ends, so that one pull never takes off a name another is about to look at.
 */
const pullsOfRepository = new Map<string, { pulls: number; names: Set<string> }>();

function startPull(machineId: string, repository: string) {
  const key = `${machineId}\n${repository}`;
  const pulls = pullsOfRepository.get(key) ?? { pulls: 0, names: new Set<string>() };
  pulls.pulls++;
  pullsOfRepository.set(key, pulls);
  return {
    names: pulls.names,
    /** The names to take off now: all of them when this was the last pull in flight. */
    end(): string[] {
      if (--pulls.pulls > 0) return [];
      pullsOfRepository.delete(key);
      return [...pulls.names];
    },
  };
}

interface PullStep {
  ctx: AppsContext;
  app: AppRow;
  buildId: string;
  /** The name the build's image gets: `platform-app-<app>:<build>`. */
  tag: string;
  log: (line: string) => void;
  signal: AbortSignal;
}

/** Pulls and pins the app's image; answers the build's image name. Refusals and failures throw BuildFailed with a reason for the log. */
export async function pullAppImage({ ctx, app, buildId, tag, log, signal }: PullStep): Promise<string> {
  // A rollback whose image was removed pulls the digest it had; any other build, the app's reference.
  const reference = ctx.db.select({ imageDigest: builds.imageDigest }).from(builds).where(eq(builds.id, buildId)).get()?.imageDigest ?? app.image ?? "";
  const { config } = ctx;
  const refused = imageReferenceRefusal(reference, config.buildRegistries);
  const parsed = parseImageReference(reference);
  if (refused || typeof parsed === "string") throw new BuildFailed(`the image reference ${reference} ${refused ?? parsed}`);
  const registryRefusal = registryPullRefusal(parsed.registry, config.buildRegistries) ?? (await registryAddressRefusal(parsed.registry, lookupHost, config.buildRegistries));
  if (registryRefusal) throw new BuildFailed(`the image ${reference} ${registryRefusal}`);
  const driver = ctx.machines.get(app.machineId);
  const auth = new Registries({ db: ctx.db, secrets: ctx.secrets, registries: config.buildRegistries }).authFor(app.workspaceId, parsed.registry);
  const repository = parsed.engineName.replace(/[@:][^/]*$/, "");
  const inFlight = startPull(app.machineId, repository);
  const held: string[] = [];
  const hold = (name: string) => {
    inFlight.names.add(name);
    held.push(name);
    ctx.db.update(builds).set({ pendingImageNames: JSON.stringify(held) }).where(eq(builds.id, buildId)).run();
  };
  log(`==> Pulling ${reference}${auth ? ` with the workspace's credentials for ${parsed.registry} (user ${auth.username})` : ""}, at most ${config.imagePullTimeoutSeconds} s`);
  const startedAt = Date.now();
  let digest: string | undefined;
  let pinned = parsed.engineName;
  let image: ImageConfig | undefined;
  let tagged = false;
  hold(parsed.engineName);
  try {
    // A pull of the same image that ended as this one began may take the names off between this
    // pull and the look at its result: pulling again brings them back.
    for (let attempt = 1; !image; attempt++) {
      digest = await pull(driver, reference, { auth, log, signal, timeoutSeconds: config.imagePullTimeoutSeconds, registry: parsed.registry, maxBytes: config.imageMaxMB * MB });
      pinned = digest ? `${repository}@${digest}` : parsed.engineName;
      if (digest && !held.includes(pinned)) hold(pinned);
      image = await driver.inspectImage(pinned).catch((error) => {
        if (error instanceof DockerNotFound && attempt < 2) return undefined;
        throw error instanceof DockerNotFound ? new BuildFailed(`the image ${reference} was pulled but is no longer on the engine; deploy again`) : error;
      });
    }
    const claimed = platformLabelsOf(image.labels);
    if (claimed.length) throw new BuildFailed(`the image ${reference} carries labels of the platform's own (${claimed.slice(0, 5).join(", ")}): refused, an image may not pass for the platform's`);
    if (image.sizeBytes > config.imageMaxMB * MB) {
      throw new BuildFailed(`the image ${reference} is ${Math.ceil(image.sizeBytes / MB)} MB unpacked, over the limit of ${config.imageMaxMB} MB (PLATFORM_IMAGE_MAX_MB): removed`);
    }
    const [tagRepo, tagName] = tag.split(":") as [string, string];
    // Listed before it exists: a restart from here on finds it in the row, whatever the engine did.
    ctx.db.update(builds).set({ pendingImageNames: JSON.stringify([...held, tag]) }).where(eq(builds.id, buildId)).run();
    await driver.tagImage(image.id, tagRepo, tagName);
    tagged = true;
  } finally {
    const kept = platformImageNames(config);
    for (const name of inFlight.end()) if (!kept.has(name)) await driver.untagImage(name).catch(() => false);
    if (!tagged) await driver.untagImage(tag).catch(() => false);
    // The tag stays listed until the build ends: the builder records it as the build's image only then.
    ctx.db.update(builds).set({ pendingImageNames: tagged ? JSON.stringify([tag]) : null }).where(eq(builds.id, buildId)).run();
  }
  ctx.db.update(builds).set({ imageDigest: digest ? pinned : null }).where(eq(builds.id, buildId)).run();
  for (const hint of imageHints(ctx, app, image)) log(`    ${hint}`);
  log(`==> Pulled ${digest ? pinned : reference} (${Math.ceil(image.sizeBytes / MB)} MB, image ${image.id.slice(7, 19)}) in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  return tag;
}

/**
 * What the image's EXPOSE and VOLUME lines mean for the app, for the log. An app deployed without
 * `exposePort` (its row holds none) takes the image's one EXPOSEd TCP port, else DEFAULT_EXPOSE_PORT.
 */
function imageHints(ctx: AppsContext, app: AppRow, image: ImageConfig): string[] {
  const hints: string[] = [];
  const exposed = image.exposedPorts.filter((port) => port.endsWith("/tcp")).map((port) => Number.parseInt(port, 10));
  let port = app.exposePort;
  if (port === null) {
    port = exposed.length === 1 ? exposed[0]! : DEFAULT_EXPOSE_PORT;
    ctx.db.update(apps).set({ exposePort: port }).where(and(eq(apps.id, app.id), isNull(apps.exposePort))).run();
    hints.push(`exposePort ${port}: ${exposed.length === 1 ? "the port the image EXPOSEs" : `the default (the image EXPOSEs ${exposed.length ? exposed.join(", ") : "no port"})`}`);
  } else if (exposed.length && !exposed.includes(port)) {
    hints.push(`the image EXPOSEs ${exposed.join(", ")}, but the app is reached on port ${port} (exposePort; PORT=${port} is set)`);
  }
  const mounted = ctx.db.select({ mountPath: volumes.mountPath }).from(volumes).where(eq(volumes.appId, app.id)).all().map((volume) => volume.mountPath);
  const unmounted = image.volumes.filter((path) => !mounted.some((mountPath) => path === mountPath || path.startsWith(`${mountPath}/`)));
  if (unmounted.length) {
    hints.push(`warning: the image declares VOLUME ${unmounted.join(", ")}: what the app writes there is lost at every redeploy; keep it with a volume at that path (volumes: [{"name": "data", "mountPath": "${unmounted[0]}"}])`);
  }
  return hints;
}

interface PullOptions {
  auth: ReturnType<Registries["authFor"]>;
  log: (line: string) => void;
  signal: AbortSignal;
  timeoutSeconds: number;
  registry: string;
  /** PLATFORM_IMAGE_MAX_MB, in bytes: the layers' download sizes may not pass it either. */
  maxBytes: number;
}

/** The engine's pull, with its progress paced into the log and its failures said plainly; answers the digest. */
async function pull(driver: DockerDriver, reference: string, options: PullOptions): Promise<string | undefined> {
  const timeout = AbortSignal.timeout(options.timeoutSeconds * 1000);
  const signal = AbortSignal.any([options.signal, timeout]);
  let lastLoggedAt = 0;
  let latest: string | undefined;
  const onProgress = (line: string) => {
    latest = line;
    const now = Date.now();
    if (now - lastLoggedAt < PROGRESS_INTERVAL_MS && !/^(Digest|Status):/.test(line)) return;
    lastLoggedAt = now;
    options.log(`    ${line}`);
    latest = undefined;
  };
  try {
    const digest = await driver.pullImage(reference, { auth: options.auth, onProgress, signal, maxDownloadBytes: options.maxBytes });
    if (latest) options.log(`    ${latest}`);
    return digest;
  } catch (error) {
    if (options.signal.aborted) throw options.signal.reason;
    if (timeout.aborted) throw new BuildFailed(`the pull of ${reference} did not finish within ${options.timeoutSeconds} s (PLATFORM_IMAGE_PULL_TIMEOUT_SECONDS)`);
    if (error instanceof ApiError) throw error;
    if (error instanceof BuildFailed) throw new BuildFailed(`the image ${reference} is too large: ${error.message}, over the limit of ${options.maxBytes / MB} MB (PLATFORM_IMAGE_MAX_MB); the pull was stopped`);
    throw new BuildFailed(pullFailure(error as Error, reference, options));
  }
}

/** What went wrong, in the user's terms, with the engine's own words (never the password). */
function pullFailure(error: Error, reference: string, { auth, registry }: PullOptions): string {
  if (error instanceof DockerNotFound) return `the image ${reference} was not found: ${registry} has no such repository or tag`;
  const said = registryMessage(error, auth?.password ?? "");
  if (/manifest unknown|not found/i.test(said)) return `the image ${reference} was not found: ${registry} has no such repository or tag (${said})`;
  if (/unauthorized|authentication required|no basic auth credentials|denied/i.test(said)) {
    return auth
      ? `${registry} refused the workspace's credentials (user ${auth.username}) for ${reference}: ${said}`
      : `${registry} asks for credentials to pull ${reference}: add them with POST /api/registries (${said})`;
  }
  if (/dial tcp|connection refused|no such host|i\/o timeout|EOF|TLS handshake|server misbehaving|network is unreachable/i.test(said)) {
    return `the registry ${registry} could not be reached: ${said}`;
  }
  return `the pull of ${reference} failed: ${said}`;
}

/** The names an image build's pull left when the platform stopped during it (the build row lists them): taken off, never forced. */
export async function removePendingImageNames(ctx: Pick<AppsContext, "db" | "machines" | "config">, app: AppRow, buildId: string): Promise<void> {
  const pending = ctx.db.select({ names: builds.pendingImageNames }).from(builds).where(eq(builds.id, buildId)).get()?.names;
  if (!pending) return;
  const driver = ctx.machines.get(app.machineId);
  const kept = platformImageNames(ctx.config);
  for (const name of JSON.parse(pending) as string[]) if (!kept.has(name)) await driver.untagImage(name).catch(() => false);
  ctx.db.update(builds).set({ pendingImageNames: null }).where(eq(builds.id, buildId)).run();
}

/** An image app's names for its pulled images (its builds' images carry no platform label to find them by): removed with the app. */
export async function removePulledImageNames(ctx: Pick<AppsContext, "db" | "machines">, app: AppRow): Promise<void> {
  if (app.runtime !== "image") return;
  const held = ctx.db.selectDistinct({ image: builds.image }).from(builds)
    .where(and(eq(builds.appId, app.id), isNotNull(builds.image), isNull(builds.imageRemovedAt))).all();
  const driver = ctx.machines.get(app.machineId);
  for (const { image } of held) await driver.removeImage(image!);
}
