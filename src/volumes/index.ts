// Routes of /api/volumes: the workspace's volumes with their size, app and machine; attaching a
// detached one to an app (through the app's settings, so the app restarts with it) and deleting one.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { json, ref, responses, LIST_META } from "../http/responses";
import { AppSchema } from "../apps/model";
import { attachBody, VolumeSchema, volumeIdParams } from "./model";

const SIZES =
  "`sizeBytes` is measured by the engine in the background and recorded with `sizeMeasuredAt`; a read starts a new " +
  "measure once the last one is older than PLATFORM_VOLUME_SIZE_REFRESH_SECONDS and waits for it at most 2 s.";

export function volumesRoutes(ctx: ServerContext) {
  const volumes = ctx.apps.volumes;
  return new Elysia({ prefix: "/api/volumes", tags: ["Volumes"] })
    .use(authPlugin(ctx))
    .get(
      "/",
      async ({ principal }) => {
        await volumes.sizes.refreshIfStale();
        const list = volumes.list(principal.workspaceId).map((row) => volumes.view(row));
        return ok({ volumes: list, meta: { total: list.length } });
      },
      {
        auth: true,
        detail: {
          operationId: "listVolumes",
          responses: responses({ 200: json("The workspace's volumes", { volumes: t.Array(ref(VolumeSchema)), meta: ref(LIST_META) }) }),
          summary: "List volumes",
          description: `The workspace's volumes, mounted and detached, each with its app, machine and size. ${SIZES}`,
        },
      },
    )
    .get(
      "/:volumeId",
      async ({ principal, params }) => {
        volumes.get(principal.workspaceId, params.volumeId);
        await volumes.sizes.refreshIfStale();
        return ok({ volume: volumes.view(volumes.get(principal.workspaceId, params.volumeId)) });
      },
      {
        auth: true,
        params: volumeIdParams,
        detail: {
          operationId: "getVolume",
          responses: responses({ 200: json("The volume", { volume: ref(VolumeSchema) }) }, "NOT_FOUND"),
          summary: "Get a volume",
          description: `One volume of the workspace. ${SIZES}`,
        },
      },
    )
    .post(
      "/:volumeId/attach",
      async ({ principal, params, body }) => {
        const { app, restarted } = await ctx.apps.attachVolume(principal.workspaceId, params.volumeId, body.appId, body.mountPath);
        return ok({ volume: volumes.view(volumes.get(principal.workspaceId, params.volumeId)), app, restarted });
      },
      {
        auth: true,
        params: volumeIdParams,
        body: attachBody,
        detail: {
          operationId: "attachVolume",
          responses: responses(
            { 200: json("Attached", { volume: ref(VolumeSchema), app: ref(AppSchema), restarted: t.Boolean({ description: "The app restarts with the volume mounted" }) }) },
            "NOT_FOUND",
            "VOLUME_ATTACHED",
            "VOLUME_ON_OTHER_MACHINE",
            "INVALID_MOUNT_PATH",
            "MOUNT_PATHS_OVERLAP",
            "TOO_MANY_VOLUMES",
            "QUOTA_EXCEEDED",
          ),
          summary: "Attach a detached volume to an app",
          description:
            "Mounts a detached volume in an app of the same workspace at `mountPath` (default: the path it had), as a " +
            "settings change adding it to the app's `volumes` would: the app restarts with it. 409 `VOLUME_ATTACHED` while " +
            "an app mounts it, 409 `VOLUME_ON_OTHER_MACHINE` when the app runs on another machine than the volume, 409 " +
            "`QUOTA_EXCEEDED` when the workspace's disk quota is used up.",
        },
      },
    )
    .delete(
      "/:volumeId",
      async ({ principal, params }) => {
        const volume = volumes.view(volumes.get(principal.workspaceId, params.volumeId));
        await volumes.delete(principal.workspaceId, params.volumeId);
        return ok({ deleted: true, volume });
      },
      {
        auth: true,
        params: volumeIdParams,
        detail: {
          operationId: "deleteVolume",
          responses: responses(
            { 200: json("Deleted", { deleted: t.Literal(true), volume: ref(VolumeSchema) }) },
            "NOT_FOUND", "VOLUME_ATTACHED", "VOLUME_IN_USE", "BACKUP_IN_PROGRESS", "RESTORE_IN_PROGRESS", "VERIFY_IN_PROGRESS", "BUSY", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT",
          ),
          summary: "Delete a detached volume",
          description:
            "Deletes the volume and its content for good, with its backups (their files and S3 copies) and schedule. 409 " +
            "`VOLUME_ATTACHED` while an app mounts it: detach it (the app's settings) or delete the app first; 409 " +
            "`BACKUP_IN_PROGRESS`, `RESTORE_IN_PROGRESS` or `VERIFY_IN_PROGRESS` while a backup of it is made, restored or verified. " +
            "A container of the app it was detached from may still be stopping: the delete waits up to 15 s for it, then 409 `VOLUME_IN_USE`.",
        },
      },
    );
}
