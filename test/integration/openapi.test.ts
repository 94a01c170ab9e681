// The API description (/api/docs/json), its reference page (/api/docs) working with no internet,
// and the public platform configuration.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";
import { AUTHENTICATED_ROUTES, openApiPath } from "../helpers/auth-matrix";
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
  expect(document.openapi).toMatch(/^3\./);
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
