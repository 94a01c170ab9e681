// Schemas of /api/volumes and of the `volumes` field apps take at deploy and in settings.
import { t } from "elysia";
import { ref, resource, timestamp } from "../http/responses";
import { MAX_MOUNT_PATH_LENGTH, MAX_VOLUMES_PER_APP, VOLUME_NAME_PATTERN } from "./validation";

const volumeName = t.String({ pattern: VOLUME_NAME_PATTERN, description: "Lowercase letters, digits and dashes; unique in the workspace" });
const mountPath = t.String({
  minLength: 1,
  maxLength: MAX_MOUNT_PATH_LENGTH,
  description: "Absolute path in the app's container; not `/`, `/proc`, `/sys`, `/dev` or under them, nor (ZIP and git apps) `/app` or above it",
});

/** An app's volume list as a request field: the whole list, replacing the one it had. */
export const volumeMountsInput = t.Array(t.Object({ name: t.String({ minLength: 1, maxLength: 63, description: volumeName.description }), mountPath }), {
  maxItems: 64,
  description:
    `The app's volumes, the whole list (at most ${MAX_VOLUMES_PER_APP}): a name new to the workspace makes a volume on first use, ` +
    "a detached one of that name is attached again (409 `VOLUME_ATTACHED` when another app has it), and a volume the app " +
    "had that is not listed is detached (kept, never deleted). A change restarts the app.",
});

export const RELEASE_STRATEGIES = {
  "start-first": "the new container starts while the old one serves; the proxy switches once it listens (no downtime)",
  "stop-first": "the old container stops before the new one starts, so two never write one volume at once; if the new one fails the old one starts again",
} as const;
export type ReleaseStrategy = keyof typeof RELEASE_STRATEGIES;
export const releaseStrategyInput = t.Union([t.Literal("start-first"), t.Literal("stop-first")], {
  description:
    Object.entries(RELEASE_STRATEGIES).map(([name, meaning]) => `\`${name}\`: ${meaning}`).join("; ") +
    ". Default: `stop-first` for an app with volumes (two processes writing one SQLite file corrupt it), else `start-first`; null: back to the default",
});

export const AppVolumeSchema = resource(
  "AppVolume",
  {
    id: t.String(),
    name: volumeName,
    mountPath: t.String(),
    sizeBytes: t.Nullable(t.Integer({ minimum: 0, description: "Bytes used, as last measured; null before the first measure" })),
  },
  "A volume mounted in an app.",
);

export const VolumeSchema = resource(
  "Volume",
  {
    id: t.String(),
    name: volumeName,
    appId: t.Nullable(t.String({ description: "The app it is mounted in; null when detached" })),
    appName: t.Nullable(t.String()),
    detached: t.Boolean({ description: "No app mounts it (its app was deleted with the volume kept, or the app dropped it)" }),
    mountPath: t.String({ description: "Where it is mounted; kept when detached, as the default of the next attach" }),
    machineId: t.String({ description: "The machine whose engine holds it: apps that mount it run there" }),
    sizeBytes: t.Nullable(t.Integer({ minimum: 0, description: "Bytes used, measured by the engine in the background; null before the first measure" })),
    sizeMeasuredAt: t.Nullable(timestamp("When sizeBytes was measured")),
    workspaceId: t.String(),
    createdAt: timestamp(),
    updatedAt: timestamp(),
  },
  "A named engine volume holding an app's data: it outlives redeploys, restarts and its app unless deleted on purpose.",
);

/** Refusals of an app's volume list, at deploy and in settings. */
/** A deploy's answer: the detached volumes its list attached again. */
export const reattachedField = t.Array(t.String(), {
  description: "Names of detached volumes (kept from a deleted or detached app) the deploy's `volumes` attached again, with the data they hold; empty when none",
});

/** BUSY: a restore of one of the volumes runs. */
export const VOLUME_ERRORS = ["INVALID_VOLUME_NAME", "INVALID_MOUNT_PATH", "MOUNT_PATHS_OVERLAP", "TOO_MANY_VOLUMES", "VOLUME_ATTACHED", "VOLUME_ON_OTHER_MACHINE", "BUSY"] as const;

export const volumeIdParams = t.Object({ volumeId: t.String({ minLength: 1, maxLength: 64 }) });
export const attachBody = t.Object({
  appId: t.String({ minLength: 1, maxLength: 64, description: "An app of the same workspace, on the volume's machine" }),
  mountPath: t.Optional(mountPath),
});

export const VOLUME_RESOURCES = [AppVolumeSchema, VolumeSchema];
export const appVolumesField = t.Array(ref(AppVolumeSchema), { description: "Volumes mounted in its containers" });
