// Gives a parsed body the shape its route's schema expects before Elysia validates it, for what
// the validator cannot do alone:
// - A body that is not an object (`5`, `null`, `[]`, text) where the schema is an object is
//   refused. Elysia merges a non-object into the schema's defaults (`{}`), and skips the check of
//   an optional body, so such bodies were taken as "change nothing".
// - Forms only carry text. A field is read as the schema's type says: `true`/`false` as a boolean,
//   "" as null where the field is a nullable number or boolean, numbers, and JSON text where an
//   object or array is expected. Text the type cannot read stays text, and validation names it.
import type { TSchema } from "@sinclair/typebox";
import { ApiError } from "./errors";

type Schema = Record<string, unknown>;

/** The route's body schema, by `METHOD /path/:param` as Elysia names its routes. */
export type BodySchemas = Map<string, TSchema>;

export function bodySchemasOf(routes: readonly { method: string; path: string; hooks: { body?: unknown } }[]): BodySchemas {
  const schemas: BodySchemas = new Map();
  for (const route of routes) {
    const body = route.hooks.body;
    if (body && typeof body === "object") schemas.set(`${route.method} ${route.path}`, body as TSchema);
  }
  return schemas;
}

/**
 * The JSON types a schema admits, unions included. Elysia's numbers (`t.Integer`, `t.Numeric`)
 * are a union with a numeric string, which is text only in form: counted as a number.
 */
function typesOf(schema: Schema, types = new Set<string>()): Set<string> {
  const { type, anyOf, oneOf, format } = schema;
  if (type === "string" && (format === "integer" || format === "numeric")) types.add("number");
  else if (typeof type === "string") types.add(type === "integer" ? "number" : type);
  else if (Array.isArray(type)) for (const each of type) types.add(each === "integer" ? "number" : each);
  for (const union of [anyOf, oneOf]) if (Array.isArray(union)) for (const branch of union) typesOf(branch as Schema, types);
  return types;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && [Object.prototype, null].includes(Object.getPrototypeOf(value));

/** A form field's text, read as the field's schema says; unchanged when it says text, or when the text is no such value. */
function formValue(schema: Schema, text: string): unknown {
  const types = typesOf(schema);
  if (types.has("string")) return text;
  if (text === "" && types.has("null")) return null;
  if (types.has("boolean") && (text === "true" || text === "false")) return text === "true";
  if (types.has("number") && text.trim() !== "" && Number.isFinite(Number(text))) return Number(text);
  if ((types.has("object") || types.has("array")) && /^\s*[[{]/.test(text)) {
    try {
      return JSON.parse(text); // its depth was bounded before the body was parsed (./body-guard.ts)
    } catch {
      return text;
    }
  }
  return text;
}

const FORM_TYPES = ["application/x-www-form-urlencoded", "multipart/form-data"];

/** The body to validate against `schema`: refused when it is not an object where one is expected, a form's text fields read as their types. */
export function conformedBody(schema: TSchema, body: unknown, contentType: string | null): unknown {
  const shape = schema as unknown as Schema;
  if (body === undefined || !typesOf(shape).has("object")) return body;
  if (!isPlainObject(body)) throw new ApiError("VALIDATION_FAILED", "Invalid body: expected a JSON object (or a form) of the documented fields");
  const properties = shape.properties as Record<string, Schema> | undefined;
  const type = (contentType ?? "").toLowerCase();
  if (!properties || !FORM_TYPES.some((form) => type.startsWith(form))) return body;
  for (const [name, value] of Object.entries(body)) {
    if (typeof value === "string" && properties[name]) body[name] = formValue(properties[name], value);
  }
  return body;
}
