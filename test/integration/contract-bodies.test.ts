// Hostile bodies against every route of the OpenAPI document, found by walking its paths, so that
// a route added later is held to the same rules: each must answer the 400 its documentation lists,
// in the envelope, and the server must stay well (no 500, nothing dumped into its log).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";
import { AUTH_MATRIX_ENV } from "../helpers/auth-matrix";

let server: TestServer;
let key: string;
let document: any;

beforeAll(async () => {
  server = await TestServer.start(AUTH_MATRIX_ENV);
  key = (await server.createKey("contract bodies")).key;
  document = (await server.request("GET", "/api/docs/json")).body;
});
afterAll(() => server.stop());

interface BodyRoute {
  method: string;
  /** The documented path with every parameter filled in. */
  path: string;
  /** The documented path, for messages. */
  template: string;
  /** The media types the operation's body is documented in. */
  mediaTypes: string[];
  /** A property of its JSON body, so that a hostile value sits where the validator looks. */
  property: string;
}

/** Every operation that documents a request body. */
function bodyRoutes(): BodyRoute[] {
  return Object.entries<Record<string, any>>(document.paths).flatMap(([template, operations]) =>
    Object.entries(operations)
      .filter(([, operation]) => operation.requestBody)
      .map(([method, operation]) => {
        const content = operation.requestBody.content as Record<string, any>;
        const properties = Object.keys(content["application/json"]?.schema?.properties ?? {});
        return {
          method: method.toUpperCase(),
          path: template.replace(/\{[^}]+\}/g, "contract_0000"),
          template,
          mediaTypes: Object.keys(content),
          property: properties[0] ?? "field",
        };
      }),
  );
}

const jsonRoutes = () => bodyRoutes().filter((route) => route.mediaTypes.includes("application/json"));

/**
 * Sends `body` to every route and returns what differs from `expected`, one line per route: a
 * wrong status or code, or an answer the document does not list (server.request checks it).
 */
async function misanswered(routes: BodyRoute[], bodyOf: (route: BodyRoute) => string, contentType: string, expected: { status: number; code: string }) {
  const wrong: string[] = [];
  for (const route of routes) {
    const where = `${route.method} ${route.template} (${contentType.split(";")[0]})`;
    try {
      const answer = await server.request(route.method, route.path, { key, body: bodyOf(route), headers: { "content-type": contentType } });
      if (answer.status !== expected.status || answer.body?.code !== expected.code || answer.body?.success !== false) {
        wrong.push(`${where}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
      }
    } catch (error) {
      wrong.push(`${where}: ${(error as Error).message.slice(0, 300)}`);
    }
  }
  return wrong;
}

/** An array inside an array... `levels` deep. */
const nestedArrays = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

test("the walk finds the JSON routes, public and authenticated", () => {
  const routes = jsonRoutes().map((route) => `${route.method} ${route.template}`);
  expect(routes).toEqual(expect.arrayContaining(["POST /api/auth/login", "POST /api/auth/setup", "POST /api/auth/claim", "PUT /api/apps/{appId}/env", "PUT /api/apps/{appId}/settings"]));
  expect(routes.length).toBeGreaterThan(20);
});

test("every JSON route answers a field nested 4,500 levels deep (9 KB) with the documented 400 BODY_TOO_DEEP, and logs nothing", async () => {
  const logged = server.output.length;
  const body = (route: BodyRoute) => `{${JSON.stringify(route.property)}:${nestedArrays(4_500)}}`;
  expect(await misanswered(jsonRoutes(), body, "application/json", { status: 400, code: "BODY_TOO_DEEP" })).toEqual([]);
  expect(server.output.slice(logged)).not.toContain("[error]");
});

test("every route taking a form answers a field holding deeply nested JSON text with 400 BODY_TOO_DEEP", async () => {
  const deep = nestedArrays(40);
  const urlEncoded = bodyRoutes().filter((route) => route.mediaTypes.includes("application/x-www-form-urlencoded"));
  expect(await misanswered(urlEncoded, (route) => `${route.property}=${encodeURIComponent(deep)}`, "application/x-www-form-urlencoded", { status: 400, code: "BODY_TOO_DEEP" })).toEqual([]);
  const multipart = urlEncoded.filter((route) => route.mediaTypes.includes("multipart/form-data"));
  const form = (route: BodyRoute) => `--b\r\nContent-Disposition: form-data; name="${route.property}"\r\n\r\n${deep}\r\n--b--\r\n`;
  expect(await misanswered(multipart, form, "multipart/form-data; boundary=b", { status: 400, code: "BODY_TOO_DEEP" })).toEqual([]);
});

test("32 levels pass the depth check; 33 do not", async () => {
  // The body's object is level 1: `{"envVars": [[...]]}` with 31 arrays is 32 levels.
  const at = (levels: number) => server.request("PUT", "/api/apps/contract_0000/env", { key, body: `{"envVars":${nestedArrays(levels - 1)}}`, headers: { "content-type": "application/json" } });
  const within = await at(32);
  expect({ status: within.status, code: within.body.code }).toEqual({ status: 400, code: "VALIDATION_FAILED" });
  const past = await at(33);
  expect({ status: past.status, code: past.body.code }).toEqual({ status: 400, code: "BODY_TOO_DEEP" });
  // Brackets inside strings are text, not levels.
  const inString = await server.request("PUT", "/api/apps/contract_0000/env", { key, body: { envVars: { A: "[".repeat(100) } } });
  expect({ status: inString.status, code: inString.body.code }).toEqual({ status: 404, code: "NOT_FOUND" });
});

test("an upload's form fields are held to the same depth (POST /api/apps/deploy, envVars)", async () => {
  const form = new FormData();
  form.set("name", "deep-env");
  form.set("runtime", "node");
  form.set("memoryMB", "128");
  form.set("envVars", `{"A":${nestedArrays(40)}}`);
  form.set("file", new Blob([new Uint8Array(22)]), "app.zip");
  const answer = await server.request("POST", "/api/apps/deploy", { key, body: form });
  expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 400, code: "BODY_TOO_DEEP" });
});
