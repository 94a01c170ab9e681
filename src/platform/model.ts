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

export const PLATFORM_RESOURCES: (TSchema & { title: string })[] = [UploadLimitsSchema, PlatformConfigSchema];
