// Schemas of /api/platform: what it answers, as named schemas of the OpenAPI document (src/http/responses.ts).
import { t } from "elysia";
import type { TSchema } from "@sinclair/typebox";
import { ref, resource } from "../http/responses";

export const UploadLimitsSchema = resource(
  "UploadLimits",
  {
    maxUploadBytes: t.Integer({ minimum: 1, description: "The largest request body of an upload (413 `PAYLOAD_TOO_LARGE` above it)" }),
    maxArchiveEntries: t.Integer({ minimum: 1, description: "The most entries (files and folders) a ZIP may hold" }),
    maxUncompressedBytes: t.Integer({ minimum: 1, description: "The most bytes a ZIP's entries may inflate to" }),
  },
  "How large an upload may be (PLATFORM_MAX_UPLOAD_BYTES, PLATFORM_MAX_ARCHIVE_ENTRIES, PLATFORM_MAX_UNCOMPRESSED_BYTES).",
);

export const PlatformConfigSchema = resource(
  "PlatformConfig",
  {
    version: t.String({ description: "The platform's version" }),
    domain: t.String({ description: "The domain apps are served under, as `<subdomain>.<domain>` (PLATFORM_DOMAIN)" }),
    uploadLimits: ref(UploadLimitsSchema),
  },
  "The public configuration clients read before uploading.",
);

export const DiskSpaceSchema = resource(
  "DiskSpace",
  {
    totalBytes: t.Integer({ minimum: 0, description: "Size of the file system the data directory is on" }),
    freeBytes: t.Integer({ minimum: 0, description: "Bytes the platform may still write there" }),
    freePercent: t.Number({ minimum: 0, maximum: 100, description: "freeBytes of totalBytes, in percent (one decimal)" }),
    lowPercent: t.Integer({ minimum: 0, maximum: 100, description: "The threshold of the `disk.low` event (PLATFORM_DISK_LOW_PERCENT)" }),
    low: t.Boolean({ description: "freePercent is under lowPercent" }),
  },
  "The free space of the data directory's disk, measured when asked.",
);

export const PlatformEventSchema = resource(
  "PlatformEvent",
  {
    id: t.String(),
    type: t.Union([t.Literal("disk.low"), t.Literal("app.unhealthy"), t.Literal("app.crash-loop")], {
      description:
        "`disk.low`: the data directory's free space fell under PLATFORM_DISK_LOW_PERCENT; `app.unhealthy`: an app's health check failed " +
        "`unhealthyThreshold` times in a row; `app.crash-loop`: an app's container exited PLATFORM_CRASH_LOOP_EXITS times within PLATFORM_CRASH_LOOP_MINUTES",
    }),
    at: t.String({ format: "date-time" }),
    message: t.String(),
    data: t.Record(t.String(), t.Union([t.Number(), t.String(), t.Boolean()]), { description: "The measurements behind it (`freeBytes`, `totalBytes`, `freePercent` for `disk.low`; `appId`, `workspaceId` for the app events)" }),
  },
  "Something the platform raised with no user watching, newest first; also logged as an `[event]` line.",
);

export const PlatformStatusSchema = resource(
  "PlatformStatus",
  {
    disk: ref(DiskSpaceSchema),
    events: t.Array(ref(PlatformEventSchema), { description: "The latest platform-wide events and those of the key's workspace (at most 50 of each, since the platform started), newest first" }),
  },
  "The platform's own health: its data disk and the events it raised.",
);

export const PLATFORM_RESOURCES: (TSchema & { title: string })[] = [UploadLimitsSchema, PlatformConfigSchema, DiskSpaceSchema, PlatformEventSchema, PlatformStatusSchema];
