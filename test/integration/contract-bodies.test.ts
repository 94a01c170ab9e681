// Hostile bodies against every route of the OpenAPI document, found by walking its paths, so that
// a route added later is held to the same rules: each must answer the 400 its documentation lists,
// in the envelope, and the server must stay well (no 500, nothing dumped into its log).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { TestServer } from "../helpers/server";
import { AUTH_MATRIX_ENV } from "../helpers/auth-matrix";
import { deleteAllApps } from "../helpers/apps";
import { removeWorkspaceNetworks } from "../helpers/databases";

const GITHUB_APP_WEBHOOK_SECRET = "contract-webhook-secret";

let server: TestServer;
let key: string;
let workspaceId: string;
let document: any;
/** A real app, for the routes that look their app up before they read the body. */
let appId: string;
/** The secret each webhook route checks deliveries against: the GitHub App's, and the app's own. */
const webhookSecrets = new Map([["/api/webhooks/github", GITHUB_APP_WEBHOOK_SECRET]]);

beforeAll(async () => {
  // Nothing listens on the discard port: the app's clone fails at once and nothing ever runs.
  server = await TestServer.start({ ...AUTH_MATRIX_ENV, PLATFORM_GIT_BASE_URL: "http://127.0.0.1:9", PLATFORM_GITHUB_APP_WEBHOOK_SECRET: GITHUB_APP_WEBHOOK_SECRET });
  ({ key, workspaceId } = await server.createKey("contract bodies"));
  document = (await server.request("GET", "/api/docs/json")).body;
  const repository = { id: "1", owner: "nobody", name: "nothing", branch: "main" };
  const deployed = await server.request("POST", "/api/apps/deploy-from-repo", { key, body: { name: "contract", runtime: "node", memoryMB: 64, repository } });
  appId = deployed.body.app.id;
  const webhook = await server.request("GET", `/api/apps/${appId}/webhook`, { key });
  webhookSecrets.set("/api/webhooks/github/{appId}", webhook.body.webhook.secret);
});
afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

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
  /** It reads its body only once the body's signature checks out (401 INVALID_SIGNATURE). */
  signed: boolean;
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
          path: template.replace(/\{([^}]+)\}/g, (_, name: string) => (name === "appId" ? appId : "contract_0000")),
          template,
          mediaTypes: Object.keys(content),
          property: properties[0] ?? "field",
          signed: JSON.stringify(operation.responses?.["401"] ?? {}).includes("INVALID_SIGNATURE"),
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
      const body = bodyOf(route);
      const answer = await server.request(route.method, route.path, { key, body, headers: { "content-type": contentType, ...signatureOf(route, body) } });
      if (answer.status !== expected.status || answer.body?.code !== expected.code || answer.body?.success !== false) {
        wrong.push(`${where}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
      }
    } catch (error) {
      wrong.push(`${where}: ${(error as Error).message.slice(0, 300)}`);
    }
  }
  return wrong;
}

/**
 * The headers of a signed GitHub push (a new delivery id each time: a repeated one is a replay),
 * for the routes that read nothing unsigned.
 */
function signatureOf(route: BodyRoute, body: string): Record<string, string> {
  const secret = webhookSecrets.get(route.template);
  if (secret === undefined) return {};
  return {
    "x-github-event": "push",
    "x-github-delivery": crypto.randomUUID(),
    "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
  };
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

test("every JSON route answers a body that is a bare number, null or [] with the documented 400 VALIDATION_FAILED", async () => {
  const routes = jsonRoutes();
  expect(routes.filter((route) => route.signed && !webhookSecrets.has(route.template)).map((route) => route.template)).toEqual([]);
  for (const body of ["12345", "null", "[]"]) {
    expect({ body, wrong: await misanswered(routes, () => body, "application/json", { status: 400, code: "VALIDATION_FAILED" }) }).toEqual({ body, wrong: [] });
  }
});

test("a field that must be an object is refused as anything else, in JSON and in forms", async () => {
  const env = (body: string, type = "application/json") => server.request("PUT", `/api/apps/${appId}/env`, { key, body, headers: { "content-type": type } });
  for (const answer of [await env('{"envVars":"abc"}'), await env('{"envVars":12345}'), await env("envVars=abc", "application/x-www-form-urlencoded")]) {
    expect({ status: answer.status, code: answer.body.code, error: answer.body.error }).toEqual({ status: 400, code: "VALIDATION_FAILED", error: expect.stringContaining("envVars") });
  }
  const settings = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: { rateLimits: 5 } });
  expect({ status: settings.status, code: settings.body.code }).toEqual({ status: 400, code: "VALIDATION_FAILED" });
  const repository = { id: "1", owner: "nobody", name: "nothing", branch: "main" };
  const deploy = await server.request("POST", "/api/apps/deploy-from-repo", { key, body: { name: "contract", runtime: "node", memoryMB: 64, repository, envVars: 12345 } });
  expect({ status: deploy.status, code: deploy.body.code }).toEqual({ status: 400, code: "VALIDATION_FAILED" });
  // Nothing was stored by any of them.
  expect((await server.request("GET", `/api/apps/${appId}/env`, { key })).body.envVars).toEqual({});
});

test("form fields are read as the schema's types: JSON text for objects, true/false for booleans, \"\" as null for nullable numbers", async () => {
  const form = "application/x-www-form-urlencoded";
  const env = await server.request("PUT", `/api/apps/${appId}/env`, { key, body: `envVars=${encodeURIComponent('{"GREETING":"hello"}')}`, headers: { "content-type": form } });
  expect(env.status).toBe(200);
  expect((await server.request("GET", `/api/apps/${appId}/env`, { key })).body.envVars).toEqual({ GREETING: "hello" });

  const changed = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: "autoRestart=false&exposePort=8080&memoryMB=96", headers: { "content-type": form } });
  expect({ status: changed.status, autoRestart: changed.body.app?.autoRestart, exposePort: changed.body.app?.exposePort, memoryMB: changed.body.app?.memoryMB }).toEqual({ status: 200, autoRestart: false, exposePort: 8080, memoryMB: 96 });
  const multipart = new FormData();
  multipart.set("autoRestart", "true");
  multipart.set("exposePort", "");
  const reset = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: multipart });
  expect({ status: reset.status, autoRestart: reset.body.app?.autoRestart, exposePort: reset.body.app?.exposePort }).toEqual({ status: 200, autoRestart: true, exposePort: 3000 });

  const wrong = await server.request("PUT", `/api/apps/${appId}/settings`, { key, body: "autoRestart=maybe", headers: { "content-type": form } });
  expect({ status: wrong.status, code: wrong.body.code, error: wrong.body.error }).toEqual({ status: 400, code: "VALIDATION_FAILED", error: expect.stringContaining("autoRestart") });
});
