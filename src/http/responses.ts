// What a route documents that it answers: `detail.responses` of the OpenAPI document, built from
// the same typebox (`t`) schemas as the routes' inputs. Documentation only: Elysia does not check
// answers against it at run time (the test suite does, in test/helpers/openapi-check.ts).
//
// Resources are named schemas (`resource("App", ...)`) listed under components.schemas and
// reached by `$ref`, so a generated client gets one `App` type however many routes return one.
// Error answers share one `Error` schema; each lists the codes it can carry as an enum, taken from
// the one map of codes (./errors.ts). src/docs adds the errors every route shares (authentication,
// validation, body limits) so that a route lists only its own.
import { t } from "elysia";
import type { TObject, TProperties, TSchema } from "@sinclair/typebox";
import { ERROR_STATUS, type ErrorCode } from "./errors";

const COMPONENT_PREFIX = "#/components/schemas/";

/** A named schema: `title` is its name under components.schemas. */
export type Resource<Properties extends TProperties = TProperties> = TObject<Properties> & { title: string };

export function resource<Properties extends TProperties>(name: string, properties: Properties, description: string): Resource<Properties> {
  return t.Object(properties, { title: name, description }) as Resource<Properties>;
}

/** A `$ref` to a named schema, typed as the schema itself. */
export function ref<Schema extends TSchema & { title: string }>(schema: Schema): Schema {
  return t.Unsafe({ $ref: COMPONENT_PREFIX + schema.title }) as unknown as Schema;
}

/** The components.schemas entries of some named schemas, by name. */
export function componentsOf(schemas: readonly (TSchema & { title: string })[]): Record<string, TSchema> {
  return Object.fromEntries(schemas.map((schema) => [schema.title, schema]));
}

/** One of some strings: `enum` in the document, their union in TypeScript. */
export function oneOf<const Values extends readonly string[]>(values: Values, description?: string) {
  return t.Unsafe<Values[number]>({ type: "string", enum: [...values], ...(description ? { description } : {}) });
}

/** An ISO 8601 time, as every timestamp of the API is. */
export const timestamp = (description?: string) => t.String({ format: "date-time", ...(description ? { description } : {}) });

/** `meta` of a list. */
export const LIST_META = resource("ListMeta", { total: t.Integer({ minimum: 0, description: "How many items the list has" }) }, "About a list.");

/**
 * A JSON answer: `{ success: true, ...payload, data: payload }`, the envelope of ./envelope.ts.
 * The payload keys are all required: a key with no value is `null`, never missing.
 */
export function envelope(payload: TProperties): TObject {
  return t.Object({ success: t.Literal(true), ...payload, data: t.Object(payload) });
}

export interface SuccessAnswer {
  description: string;
  content: Record<string, { schema: TSchema }>;
  headers?: Record<string, unknown>;
}

/** A JSON answer in the envelope. */
export function json(description: string, payload: TProperties = {}): SuccessAnswer {
  return { description, content: { "application/json": { schema: envelope(payload) } } };
}

/**
 * A JSON answer whose payload is one resource's fields: they stand beside `success`, and `data`
 * is the named schema itself, so a generated client types `data` as that resource.
 */
export function resourceJson(description: string, schema: Resource): SuccessAnswer {
  return { description, content: { "application/json": { schema: t.Object({ success: t.Literal(true), ...schema.properties, data: ref(schema) }) } } };
}

/** An answer that is not JSON: a stream or a file, documented by its media type. */
export function media(description: string, mediaType: string, schema: TSchema = t.String()): SuccessAnswer {
  return { description, content: { [mediaType]: { schema } } };
}

/** The body of an upload: multipart/form-data, read as a stream by ./multipart.ts, so documented here only. */
export function multipartBody(form: TObject): any {
  return { required: true, content: { "multipart/form-data": { schema: form } } };
}

const FORMS = ["application/json", "application/x-www-form-urlencoded", "multipart/form-data"] as const;

/** A request body any of JSON, URL-encoded form or multipart form may carry, read by the route itself: documented here only. */
export function formsBody(schema: TObject, description: string): any {
  return { required: true, description, content: Object.fromEntries(FORMS.map((type) => [type, { schema }])) };
}

/** An answer that may also come as another media type (a followed stream of the same thing, say). */
export function alsoAs(answer: SuccessAnswer, mediaType: string, schema: TSchema = t.String()): SuccessAnswer {
  return { ...answer, content: { ...answer.content, [mediaType]: { schema } } };
}

/** Why an error status is answered, in a word, for the document. */
const STATUS_MEANING: Record<number, string> = {
  400: "The request is invalid",
  401: "Not authenticated",
  403: "Not allowed",
  404: "Not found",
  409: "Conflicts with the current state",
  410: "Gone",
  411: "Content-Length required",
  413: "Too large",
  415: "Unsupported media type",
  416: "Range not satisfiable",
  422: "Cannot be processed",
  429: "Too many requests",
  431: "Request header fields too large",
  500: "Internal error",
  503: "Unavailable for now",
  504: "Timed out",
  507: "The platform's disk is full",
};

/** Statuses whose answers carry `Retry-After` (seconds). */
const RETRY_AFTER_STATUSES = new Set([429, 503]);

export const RETRY_AFTER_HEADER = {
  description: "Seconds to wait before trying again. Always sent with 503; with 429 whenever the wait is known.",
  schema: { type: "integer" as const, minimum: 0 },
};

/** The error answer of one status: the `Error` schema, with the codes it can carry. */
export function errorAnswer(status: number, codes: readonly ErrorCode[]) {
  const sorted = [...new Set(codes)].sort();
  return {
    description: `${STATUS_MEANING[status] ?? "Error"}: ${sorted.map((code) => `\`${code}\``).join(", ")}`,
    ...(RETRY_AFTER_STATUSES.has(status) ? { headers: { "Retry-After": { $ref: "#/components/headers/RetryAfter" } } } : {}),
    content: {
      "application/json": {
        schema: { allOf: [{ $ref: `${COMPONENT_PREFIX}Error` }, { type: "object", required: ["code"], properties: { code: { enum: sorted } } }] },
      },
    },
  };
}

/** The codes an error answer of the document lists (see errorAnswer). */
export function codesOf(answer: unknown): ErrorCode[] {
  const schema = (answer as any)?.content?.["application/json"]?.schema;
  return schema?.allOf?.[1]?.properties?.code?.enum ?? [];
}

/** Error answers for some codes, one per status. */
export function errorAnswers(codes: readonly ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  return Object.fromEntries([...byStatus].map(([status, statusCodes]) => [String(status), errorAnswer(status, statusCodes)]));
}

/**
 * `detail.responses` of a route: its success answers by status, and the error codes it can
 * answer besides those every route of its kind shares (src/docs/shared-errors.ts).
 */
// `any`: Elysia types `detail` with OpenAPI's own schema types, which typebox schemas do not claim to be.
export function responses(success: Record<number, SuccessAnswer>, ...codes: ErrorCode[]): Record<string, any> {
  return { ...Object.fromEntries(Object.entries(success)), ...errorAnswers(codes) };
}

/** Every error code, and the `Error` schema: both listed under components.schemas. */
export const ERROR_CODE = t.Unsafe<ErrorCode>({
  type: "string",
  enum: Object.keys(ERROR_STATUS).sort(),
  title: "ErrorCode",
  description: "A stable, machine-readable error code. Each has one HTTP status.",
}) as TSchema & { title: string };
export const ERROR = resource(
  "Error",
  { success: t.Literal(false), error: t.String({ description: "What went wrong, for a person" }), code: ref(ERROR_CODE) },
  "Every error answer: `success` false, a message, and a stable code.",
);
