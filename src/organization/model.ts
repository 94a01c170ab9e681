// Schemas of /api/organization: what it answers, as named schemas of the OpenAPI document (src/http/responses.ts).
import { t } from "elysia";
import type { TSchema } from "@sinclair/typebox";

export const ORGANIZATION_RESOURCES: (TSchema & { title: string })[] = [];
