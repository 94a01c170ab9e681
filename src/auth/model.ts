// Schemas of /api/auth: what it answers, as named schemas of the OpenAPI document (src/http/responses.ts).
import { t } from "elysia";
import type { TSchema } from "@sinclair/typebox";

export const SESSION_RESOURCES: (TSchema & { title: string })[] = [];
