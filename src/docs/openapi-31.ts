// Turns the document @elysiajs/openapi generates into valid OpenAPI 3.1, without changing what the
// routes accept. Two things in it come from Elysia's runtime schemas, not from the API:
// - `t.Nullable(x)` is `anyOf [x, null]` with `nullable: true`, a 3.0 keyword 3.1 dropped. The
//   plugin already writes the null into the type; the keyword is removed.
// - `t.Integer` (and `t.Numeric`) coerce numeric strings, because query strings and form bodies
//   only carry text: `anyOf [{type: string, format: integer}, {type: integer}]`. A JSON client must
//   send a number, so the document says `integer` (the routes still accept "64" from a form).
// The plugin offers no hook for typebox schemas (its `mapJsonSchema` is for other validators), so
// the generated document is rewritten once per generation (./index.ts).

type Json = unknown;
type SchemaObject = Record<string, Json>;

const isObject = (value: Json): value is SchemaObject => typeof value === "object" && value !== null && !Array.isArray(value);
const isNull = (schema: Json) => isObject(schema) && schema.type === "null";

/** The string branch Elysia adds beside a number so that "42" decodes to 42. */
function isNumericString(schema: Json): boolean {
  return isObject(schema) && schema.type === "string" && (schema.format === "integer" || schema.format === "numeric");
}
function isNumber(schema: Json): schema is SchemaObject {
  return isObject(schema) && (schema.type === "integer" || schema.type === "number");
}

function allowsNull(schema: SchemaObject): boolean {
  if (schema.type === "null" || (Array.isArray(schema.type) && schema.type.includes("null"))) return true;
  return [schema.anyOf, schema.oneOf].some((union) => Array.isArray(union) && union.some(isNull));
}

function rewriteSchema(input: SchemaObject): SchemaObject {
  const schema: SchemaObject = { ...input };

  // `anyOf [numeric string, number]` -> the number (its bounds and description are on both).
  const union = schema.anyOf;
  if (Array.isArray(union) && union.length === 2 && union.some(isNumericString) && union.some(isNumber)) {
    delete schema.anyOf;
    Object.assign(schema, union.find(isNumber));
  }

  // `nullable: true` -> nothing, once null is part of the type or of the union.
  if (schema.nullable === true) {
    delete schema.nullable;
    if (!allowsNull(schema)) {
      if (typeof schema.type === "string") schema.type = [schema.type, "null"];
      else if (Array.isArray(schema.type)) schema.type = [...schema.type, "null"];
      else schema.anyOf = [...(Array.isArray(schema.anyOf) ? schema.anyOf : []), { type: "null" }];
    }
  }

  // `anyOf [{type: T, ...}, {type: null}]` -> `{type: [T, "null"], ...}`, as the plugin writes it
  // where no coercion union was in the way.
  const withNull = schema.anyOf;
  if (Array.isArray(withNull) && withNull.length === 2 && withNull.some(isNull)) {
    const other = withNull.find((branch) => !isNull(branch));
    if (isObject(other) && typeof other.type === "string" && !("anyOf" in other) && !("oneOf" in other)) {
      delete schema.anyOf;
      Object.assign(schema, other, { type: [other.type, "null"] });
    }
  }
  return schema;
}

/** Children first, so a union's branches are already rewritten when the union is looked at. */
function rewrite(value: Json): Json {
  if (Array.isArray(value)) return value.map(rewrite);
  if (!isObject(value)) return value;
  const children = Object.fromEntries(Object.entries(value).map(([key, child]) => [key, rewrite(child)]));
  return rewriteSchema(children);
}

/** The document, valid OpenAPI 3.1 (a rewritten copy; the plugin's own is left as it is). */
export function toOpenApi31<T extends object>(document: T): T {
  return rewrite(document) as T;
}
