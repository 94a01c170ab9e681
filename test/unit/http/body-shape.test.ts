// Bodies given their schema's shape before validation (src/http/body-shape.ts): a non-object is
// refused where an object is expected, and form text is read by each field's type, never guessed.
import { expect, test } from "bun:test";
import { t } from "elysia";
import { conformedBody } from "../../../src/http/body-shape";

const schema = t.Object({
  autoRestart: t.Optional(t.Boolean()),
  memoryMB: t.Optional(t.Integer()),
  cpus: t.Optional(t.Nullable(t.Number())),
  exposePort: t.Optional(t.Nullable(t.Integer())),
  subdomain: t.Optional(t.Nullable(t.String())),
  envVars: t.Optional(t.Record(t.String(), t.String())),
});
const FORM = "application/x-www-form-urlencoded";

test("a body that is not an object is refused, whatever its media type; no body at all is left to the route", () => {
  for (const body of [5, null, [], "text", true, new ArrayBuffer(2)]) {
    expect(() => conformedBody(schema, body, "application/json")).toThrow(expect.objectContaining({ code: "VALIDATION_FAILED" }));
  }
  expect(conformedBody(schema, undefined, "application/json")).toBeUndefined();
  expect(conformedBody(schema, Object.create(null), FORM)).toEqual({});
});

test("form text is read as the field's type", () => {
  const body = { autoRestart: "false", memoryMB: "128", cpus: "", exposePort: "", subdomain: "", envVars: '{"A":"b"}' };
  expect(conformedBody(schema, body, `${FORM}; charset=utf-8`)).toEqual({ autoRestart: false, memoryMB: 128, cpus: null, exposePort: null, subdomain: "", envVars: { A: "b" } });
  const multipart = { cpus: "1.5", autoRestart: "true" };
  expect(conformedBody(schema, multipart, "multipart/form-data; boundary=x")).toEqual({ cpus: 1.5, autoRestart: true });
});

test("text a type cannot read stays text, for validation to name; JSON bodies are never converted", () => {
  expect(conformedBody(schema, { autoRestart: "maybe", memoryMB: "lots", envVars: "abc" }, FORM)).toEqual({ autoRestart: "maybe", memoryMB: "lots", envVars: "abc" });
  expect(conformedBody(schema, { envVars: "{broken" }, FORM)).toEqual({ envVars: "{broken" });
  expect(conformedBody(schema, { autoRestart: "true", exposePort: "" }, "application/json")).toEqual({ autoRestart: "true", exposePort: "" });
});
