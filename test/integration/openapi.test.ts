// The API description (/api/docs/json): valid OpenAPI 3.1 by `redocly lint`, an operationId and a
// tag on every operation; its reference page (/api/docs) working with no internet; and the public
// platform configuration.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { TestServer } from "../helpers/server";
import { tempDir } from "../helpers/temp";
import { AUTHENTICATED_ROUTES, openApiPath } from "../helpers/auth-matrix";
import { responseCheckerFor } from "../helpers/openapi-check";
import { ERROR_STATUS, type ErrorCode } from "../../src/http/errors";
import packageJson from "../../package.json" with { type: "json" };

/** Routes anyone may call; every other route is in AUTHENTICATED_ROUTES. */
const PUBLIC_ROUTES = [
  "GET /api/platform/config",
  "GET /api/auth/setup",
  "POST /api/auth/setup",
  "POST /api/auth/login",
  "POST /api/auth/claim",
  "POST /api/organization/invitations/{invitationId}/accept",
  "GET /api/organization/invitations/{invitationId}/preview",
  // Authenticated by their signature or the secret in their URL, not a key.
  "POST /api/webhooks/github",
  "POST /api/webhooks/github/{appId}",
  "POST /api/webhooks/deploy/{appId}/{secret}",
];
const AUTHENTICATED = AUTHENTICATED_ROUTES.map((route) => `${route.method} ${openApiPath(route.path)}`);

const UPLOAD_LIMITS = { maxUploadBytes: 12_345_678, maxArchiveEntries: 321, maxUncompressedBytes: 98_765_432 };

let server: TestServer;
let document: any;
beforeAll(async () => {
  server = await TestServer.start({
    PLATFORM_MAX_UPLOAD_BYTES: String(UPLOAD_LIMITS.maxUploadBytes),
    PLATFORM_MAX_ARCHIVE_ENTRIES: String(UPLOAD_LIMITS.maxArchiveEntries),
    PLATFORM_MAX_UNCOMPRESSED_BYTES: String(UPLOAD_LIMITS.maxUncompressedBytes),
  });
  document = (await server.request("GET", "/api/docs/json")).body;
});
afterAll(() => server.stop());

const operations = () =>
  Object.entries<Record<string, any>>(document.paths).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(([method, operation]) => ({ route: `${method.toUpperCase()} ${path}`, operation })),
  );

test("describes API version 1.0.0 with the HTTP bearer scheme", () => {
  expect(document.openapi).toMatch(/^3\.1\./);
  expect(document.info.version).toBe("1.0.0");
  const schemes = Object.values<any>(document.components.securitySchemes);
  expect(schemes).toContainEqual(expect.objectContaining({ type: "http", scheme: "bearer" }));
});

test("has an entry for every route, and no other", () => {
  const documented = operations().map(({ route }) => route);
  expect(documented.sort()).toEqual([...PUBLIC_ROUTES, ...AUTHENTICATED].sort());
});

test("marks authenticated routes with the bearer scheme and public ones with none", () => {
  const bearerName = Object.entries<any>(document.components.securitySchemes).find(([, scheme]) => scheme.scheme === "bearer")![0];
  for (const { route, operation } of operations()) {
    const security = (operation.security ?? document.security) as Record<string, string[]>[];
    const names = security.flatMap((requirement) => Object.keys(requirement));
    if (PUBLIC_ROUTES.includes(route)) expect({ route, names }).toEqual({ route, names: [] });
    else expect({ route, bearer: names.includes(bearerName) }).toEqual({ route, bearer: true });
  }
});

const ROOT = resolve(import.meta.dir, "../..");

/**
 * Redocly CLI sends telemetry and checks npm for updates unless told not to; the suite may reach
 * loopback only. Both are off (here and `telemetry: off` in redocly.yaml), and any request that
 * would still go out is sent to a proxy on a loopback port nothing listens on (the CLI's fetches
 * honour HTTPS_PROXY), so it fails on this machine instead of leaving it.
 */
const OFFLINE_REDOCLY_ENV = {
  REDOCLY_TELEMETRY: "off",
  REDOCLY_SUPPRESS_UPDATE_NOTICE: "true",
  REDOCLY_SUPPRESS_NOTIFICATIONS: "true",
  HTTPS_PROXY: "http://127.0.0.1:9",
  HTTP_PROXY: "http://127.0.0.1:9",
  https_proxy: "http://127.0.0.1:9",
  http_proxy: "http://127.0.0.1:9",
  NO_PROXY: "",
  no_proxy: "",
};

test("passes `redocly lint` with the checked-in rules (recommended, trailing slashes allowed), without an error or a warning", async () => {
  const file = join(tempDir("openapi-lint-"), "openapi.json");
  await Bun.write(file, JSON.stringify(document));
  const lint = Bun.spawn(
    [process.execPath, resolve(ROOT, "node_modules/@redocly/cli/bin/cli.js"), "lint", file, "--config", resolve(ROOT, "redocly.yaml"), "--format", "stylish"],
    { cwd: ROOT, env: { ...(process.env as Record<string, string>), ...OFFLINE_REDOCLY_ENV }, stdout: "pipe", stderr: "pipe", stdin: "ignore" },
  );
  const [stdout, stderr, exitCode] = await Promise.all([new Response(lint.stdout).text(), new Response(lint.stderr).text(), lint.exited]);
  const output = `${stdout}\n${stderr}`;
  expect({ exitCode, output }).toEqual({ exitCode: 0, output: expect.not.stringMatching(/\berrors?\b|\bwarnings?\b/i) });
  expect(output).toContain("valid");
});

/** Every object in the document, with where it is. */
function* objectsIn(value: unknown, where = "#"): Generator<{ where: string; object: Record<string, any> }> {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) yield* objectsIn(item, `${where}/${index}`);
  } else if (value && typeof value === "object") {
    yield { where, object: value as Record<string, any> };
    for (const [key, child] of Object.entries(value)) yield* objectsIn(child, `${where}/${key}`);
  }
}

test("is OpenAPI 3.1: a relative server, a licence, and no 3.0 `nullable` anywhere", () => {
  expect(document.servers).toEqual([{ url: "/" }]);
  expect(document.info.license?.name).toEqual(expect.any(String));
  const nullable = [...objectsIn(document)].filter(({ object }) => "nullable" in object).map(({ where }) => where);
  expect(nullable).toEqual([]);
});

test("documents numbers as numbers, not as the numeric strings form bodies may also carry", () => {
  const numericStrings = [...objectsIn(document)]
    .filter(({ object }) => object.type === "string" && ["integer", "numeric"].includes(object.format))
    .map(({ where }) => where);
  expect(numericStrings).toEqual([]);
  const jsonBody = (path: string, method: string) => document.paths[path][method].requestBody.content["application/json"].schema.properties;
  const appSettings = jsonBody("/api/apps/{appId}/settings", "put");
  expect(appSettings.memoryMB).toMatchObject({ type: "integer", minimum: 64, maximum: 16384 });
  expect(appSettings.exposePort).toMatchObject({ type: ["integer", "null"], minimum: 1, maximum: 65535 });
  expect(appSettings.cpus).toMatchObject({ type: ["number", "null"] });
  expect(jsonBody("/api/databases/", "post").memoryMB).toMatchObject({ type: "integer" });
  expect(jsonBody("/api/api-keys/", "post").expiresIn).toMatchObject({ type: ["integer", "null"] });
  const tail = document.paths["/api/apps/{appId}/logs"].get.parameters.find((parameter: any) => parameter.name === "tail");
  expect(tail.schema).toMatchObject({ type: "integer", default: 100 });
});

test("every operation has a tag and a readable operationId, unique in the document", () => {
  const described = operations().map(({ route, operation }) => ({ route, operationId: operation.operationId, tags: operation.tags }));
  for (const { route, operationId, tags } of described) {
    expect({ route, operationId }).toEqual({ route, operationId: expect.stringMatching(/^[a-z][a-zA-Z]+$/) });
    expect({ route, tags }).toEqual({ route, tags: [expect.any(String)] });
  }
  const ids = described.map(({ operationId }) => operationId);
  expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([]);
  const byRoute = Object.fromEntries(described.map(({ route, operationId }) => [route, operationId]));
  expect(byRoute).toMatchObject({
    "GET /api/apps/": "listApps",
    "POST /api/apps/deploy": "deployApp",
    "POST /api/apps/{appId}/builds/{buildId}/cancel": "cancelBuild",
    "POST /api/databases/": "createDatabase",
    "POST /api/databases/{databaseId}/rotate-password": "rotateDatabasePassword",
    "POST /api/api-keys/": "createApiKey",
    "PATCH /api/organization/members/{userId}": "updateMemberRole",
  });
});

/** The 2xx answers of an operation, by status. */
const successes = (operation: any) => Object.entries<any>(operation.responses ?? {}).filter(([status]) => /^2\d\d$/.test(status));

test("every operation documents its success answer: a JSON envelope, or a stream's or file's media type", () => {
  for (const { route, operation } of operations()) {
    const answers = successes(operation);
    expect({ route, documented: answers.length > 0 }).toEqual({ route, documented: true });
    for (const [status, answer] of answers) {
      const mediaTypes = Object.keys(answer.content ?? {});
      expect({ route, status, mediaTypes: mediaTypes.length > 0 }).toEqual({ route, status, mediaTypes: true });
      const envelope = answer.content["application/json"]?.schema;
      if (!envelope) continue;
      expect({ route, status, envelope: { required: envelope.required, success: envelope.properties?.success } }).toEqual({
        route,
        status,
        envelope: { required: expect.arrayContaining(["success", "data"]), success: { const: true, type: "boolean" } },
      });
      // The payload beside `success` is the payload under `data`: written out, or the named
      // resource whose fields the payload is.
      const { success, data, ...payload } = envelope.properties;
      const underData = data.$ref ? document.components.schemas[data.$ref.replace("#/components/schemas/", "")].properties : data.properties;
      expect({ route, data: underData }).toEqual({ route, data: payload });
    }
  }
});

/** Object schemas written out in place, where a named component should be referred to. */
function inlineObjects(schema: unknown, where: string): string[] {
  return [...objectsIn(schema, where)]
    .filter(({ object }) => object.properties && typeof object.properties === "object" && !("$ref" in object))
    .map(({ where }) => where);
}

test("a resource in a success answer is a named schema reached by $ref, never an object written out in place", () => {
  const inline: string[] = [];
  for (const { route, operation } of operations()) {
    for (const [status, answer] of successes(operation)) {
      const envelope = answer.content?.["application/json"]?.schema;
      if (!envelope) continue;
      const { success, data, ...payload } = envelope.properties;
      for (const [key, value] of Object.entries(payload)) inline.push(...inlineObjects(value, `${route} ${status} ${key}`));
    }
  }
  expect(inline).toEqual([]);
  const names = Object.keys(document.components.schemas);
  expect(names).toEqual(expect.arrayContaining(["App", "Build", "Database", "ApiKey", "Member", "Invitation", "AuditEntry", "Machine", "PlatformConfig", "Session", "Error", "ErrorCode"]));
});

test("every operation documents its errors with the one Error schema, each code under its own status", () => {
  const codes: string[] = document.components.schemas.ErrorCode.enum;
  for (const { route, operation } of operations()) {
    const errors = Object.entries<any>(operation.responses).filter(([status]) => /^[45]\d\d$/.test(status));
    expect({ route, has500: errors.some(([status]) => status === "500") }).toEqual({ route, has500: true });
    for (const [status, answer] of errors) {
      const [base, narrowed] = answer.content["application/json"].schema.allOf;
      expect(base).toEqual({ $ref: "#/components/schemas/Error" });
      for (const code of narrowed.properties.code.enum) {
        expect(codes).toContain(code);
        expect({ route, code, status: Number(status) }).toEqual({ route, code, status: ERROR_STATUS[code as ErrorCode] });
      }
      if (status === "429" || status === "503") expect({ route, status, header: answer.headers?.["Retry-After"] }).toEqual({ route, status, header: { $ref: "#/components/headers/RetryAfter" } });
    }
  }
});

test("the test suite's answer check fails a real answer missing a required field", async () => {
  const checker = await responseCheckerFor(server.baseUrl);
  const answer = await server.request("GET", "/api/platform/config");
  const contentType = answer.headers.get("content-type");
  expect(checker.problems("GET", "/api/platform/config", 200, contentType, answer.body)).toEqual([]);
  const { version, ...withoutVersion } = answer.body;
  expect(checker.problems("GET", "/api/platform/config", 200, contentType, withoutVersion)).toEqual([expect.stringContaining("'version'")]);
});

test("documents path parameters, e.g. keyId", () => {
  const parameters = document.paths["/api/api-keys/{keyId}"].delete.parameters;
  expect(parameters).toContainEqual(expect.objectContaining({ name: "keyId", in: "path", required: true }));
});

test("the docs page loads only scripts from this server, and they and the description it points to are served", async () => {
  const page = await server.request("GET", "/api/docs");
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toContain("text/html");
  const html = String(page.body);
  const pageUrl = `${server.baseUrl}/api/docs`;

  const scriptSources = [...html.matchAll(/<script\b[^>]*\bsrc=["']([^"']+)["']/g)].map((match) => match[1]!);
  expect(scriptSources.length).toBeGreaterThan(0);
  const external = [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)=["']((?:https?:)?\/\/[^"']+)["']/g)].map((match) => match[1]);
  expect(external).toEqual([]);
  for (const source of scriptSources) {
    const script = await fetch(new URL(source, pageUrl));
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toContain("javascript");
    expect((await script.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  }

  // The page's script fetches the description from the configured url, relative to the page.
  const configuration = JSON.parse(/data-configuration='([^']+)'/.exec(html)![1]!);
  expect(String(configuration.cdn ?? "")).not.toMatch(/^(https?:)?\/\//);
  const described = await fetch(new URL(configuration.url, pageUrl));
  expect(described.status).toBe(200);
  expect((await described.json()).info.version).toBe("1.0.0");
});

test("GET /api/platform/config needs no key and publishes the upload limits and the version", async () => {
  const response = await server.request("GET", "/api/platform/config");
  expect(response.status).toBe(200);
  expect(response.body.success).toBe(true);
  expect(response.body.uploadLimits).toEqual(UPLOAD_LIMITS);
  expect(response.body.version).toBe(packageJson.version);
});
