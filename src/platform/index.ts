// Routes of /api/platform: the public configuration clients read before uploading, and the
// platform's own status (its data disk's free space and the events it raised).
import { Elysia } from "elysia";
import type { Static } from "@sinclair/typebox";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { resourceJson, responses } from "../http/responses";
import { PLATFORM_VERSION } from "../version";
import { PlatformConfigSchema, PlatformStatusSchema } from "./model";

export function platformConfig(ctx: ServerContext): Static<typeof PlatformConfigSchema> {
  return { version: PLATFORM_VERSION, domain: ctx.config.domain, uploadLimits: { ...ctx.config.uploads } };
}

export function platformRoutes(ctx: ServerContext) {
  return new Elysia({ prefix: "/api/platform", tags: ["Platform"] })
    .get("/config", () => ok(platformConfig(ctx)), {
    detail: {
      operationId: "getPlatformConfig",
      responses: responses({ 200: resourceJson("The platform's public configuration", PlatformConfigSchema) }),
      summary: "Public platform configuration",
      description:
        "No authentication. `uploadLimits.maxUploadBytes` is the largest request body of an upload (413 " +
        "`PAYLOAD_TOO_LARGE` above it), `maxArchiveEntries` the most entries a ZIP may hold, `maxUncompressedBytes` " +
        "the most bytes its entries may inflate to. Also `version` and the apps' `domain`.",
      security: [],
    },
  })
    .use(authPlugin(ctx))
    .get("/status", ({ principal }) => ok({ disk: ctx.disk.check(), events: ctx.events.recent(principal.workspaceId) }), {
      auth: true,
      detail: {
        operationId: "getPlatformStatus",
        responses: responses({ 200: resourceJson("The platform's status", PlatformStatusSchema) }),
        summary: "Platform status: free disk space and events",
        description:
          "Answers `disk`, the free space of the data directory's disk measured now (`freeBytes`, `totalBytes`, " +
          "`freePercent`, and `low` under PLATFORM_DISK_LOW_PERCENT), and `events`, the latest platform events, newest " +
          "first: the platform-wide ones (`disk.low`) and those of the key's own workspace's apps (`app.unhealthy`, `app.crash-loop`), " +
          "never another workspace's. `disk.low` is raised when the free space falls under the threshold (checked every minute and after " +
          "every write refused for a full disk), once until it comes back above. A write that finds the disk full is " +
          "507 `INSUFFICIENT_STORAGE`, with nothing of it kept.",
      },
    });
}
