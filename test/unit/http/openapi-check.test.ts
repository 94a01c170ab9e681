// The test-suite hook that holds every answer to the OpenAPI document (test/helpers/openapi-check.ts):
// it must fail on what a client generated from the document would trip over.
import { expect, test } from "bun:test";
import { ResponseChecker } from "../../helpers/openapi-check";

const app = {
  type: "object",
  required: ["id", "status", "url"],
  properties: { id: { type: "string" }, status: { type: "string", enum: ["running", "stopped"] }, url: { type: ["string", "null"] } },
};
const document = {
  openapi: "3.1.0",
  paths: {
    "/api/apps/{appId}": {
      get: {
        responses: {
          "200": { description: "ok", content: { "application/json": { schema: { type: "object", required: ["success", "app"], properties: { success: { const: true }, app: { $ref: "#/components/schemas/App" } } } } } },
          "404": { description: "no", content: { "application/json": { schema: { allOf: [{ $ref: "#/components/schemas/Error" }, { type: "object", properties: { code: { enum: ["NOT_FOUND"] } } }] } } } },
        },
      },
    },
    "/api/apps/deploy": { get: { responses: { "200": { description: "a literal path", content: { "text/plain": { schema: { type: "string" } } } } } } },
  },
  components: {
    schemas: {
      App: app,
      Error: { type: "object", required: ["success", "error", "code"], properties: { success: { const: false }, error: { type: "string" }, code: { type: "string" } } },
    },
  },
};
const checker = new ResponseChecker(document);
const JSON_TYPE = "application/json; charset=utf-8";
const goodApp = { id: "app_1", status: "running", url: null };

test("an answer as documented passes", () => {
  expect(checker.problems("GET", "/api/apps/app_1?x=1", 200, JSON_TYPE, { success: true, app: goodApp })).toEqual([]);
  expect(checker.problems("GET", "/api/apps/app_1", 404, JSON_TYPE, { success: false, error: "App not found", code: "NOT_FOUND" })).toEqual([]);
});

test("a missing required field fails, naming the field", () => {
  const { url, ...withoutUrl } = goodApp;
  const problems = checker.problems("GET", "/api/apps/app_1", 200, JSON_TYPE, { success: true, app: withoutUrl });
  expect(problems).toEqual([expect.stringContaining("must have required property 'url'")]);
  expect(problems[0]).toContain("GET /api/apps/{appId} answered 200");
});

test("a value outside its type or enum fails", () => {
  expect(checker.problems("GET", "/api/apps/a", 200, JSON_TYPE, { success: true, app: { ...goodApp, status: "sleeping" } })).not.toEqual([]);
  expect(checker.problems("GET", "/api/apps/a", 200, JSON_TYPE, { success: true, app: { ...goodApp, url: 42 } })).not.toEqual([]);
});

test("a field the document does not name fails: documented object schemas are read as closed", () => {
  const problems = checker.problems("GET", "/api/apps/a", 200, JSON_TYPE, { success: true, app: { ...goodApp, secret: "x" } });
  expect(problems).toEqual([expect.stringContaining("must NOT have additional properties")]);
});

test("an error code the operation does not list fails, and so does an undocumented status", () => {
  expect(checker.problems("GET", "/api/apps/a", 404, JSON_TYPE, { success: false, error: "gone", code: "WORKSPACE_NOT_FOUND" })).not.toEqual([]);
  expect(checker.problems("GET", "/api/apps/a", 409, JSON_TYPE, { success: false, error: "busy", code: "BUSY" })).toEqual([
    expect.stringContaining("a status its documentation does not list"),
  ]);
});

test("a media type the operation does not document fails; a literal segment wins over a parameter", () => {
  expect(checker.problems("GET", "/api/apps/deploy", 200, "text/plain; charset=utf-8", "log")).toEqual([]);
  expect(checker.problems("GET", "/api/apps/deploy", 200, JSON_TYPE, { success: true })).toEqual([expect.stringContaining("with application/json")]);
});

test("paths the document does not describe are left alone", () => {
  expect(checker.problems("GET", "/", 200, "text/html", "<html>")).toEqual([]);
  expect(checker.problems("GET", "/api/nothing", 404, JSON_TYPE, {})).toEqual([]);
});
