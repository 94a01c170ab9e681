// Routes of /api/platform: the public configuration clients read before uploading.
import { Elysia } from "elysia";
import type { Static } from "@sinclair/typebox";
import type { ServerContext } from "../http/context";
import { ok } from "../http/envelope";
import { resourceJson, responses } from "../http/responses";
import { PLATFORM_VERSION } from "../version";
import { PlatformConfigSchema } from "./model";

export function platformConfig(ctx: ServerContext): Static<typeof PlatformConfigSchema> {
  return { version: PLATFORM_VERSION, domain: ctx.config.domain, uploadLimits: { ...ctx.config.uploads } };
}

export function platformRoutes(ctx: ServerContext) {
  return new Elysia({ prefix: "/api/platform", tags: ["Platform"] }).get("/config", () => ok(platformConfig(ctx)), {
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
  });
}
