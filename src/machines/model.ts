// Schemas of /api/machines: what it answers, as named schemas of the OpenAPI document (src/http/responses.ts).
import { t } from "elysia";
import type { TSchema } from "@sinclair/typebox";

export const MACHINE_RESOURCES: (TSchema & { title: string })[] = [];
