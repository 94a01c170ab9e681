// Schemas of /api/platform: what it answers, as named schemas of the OpenAPI document (src/http/responses.ts).
import { t } from "elysia";
import type { TSchema } from "@sinclair/typebox";

export const PLATFORM_RESOURCES: (TSchema & { title: string })[] = [];
