// Every authenticated route gets the same authentication checks (test/helpers/auth-matrix.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";
import { AUTH_MATRIX_ENV, AUTHENTICATED_ROUTES, describeAuthMatrix, openApiPath } from "../helpers/auth-matrix";
import { removeMatrixDatabases } from "../helpers/databases";
import { removeMatrixBuildNetworks } from "../helpers/apps";

let server: TestServer;
beforeAll(async () => (server = await TestServer.start(AUTH_MATRIX_ENV)));
// Stopping waits for the apps' and databases' background work; under load that takes more than the default 5 s.
afterAll(() => server.stop(), 60_000);
afterAll(removeMatrixDatabases, 60_000);
afterAll(removeMatrixBuildNetworks);

test("the matrix covers every route the server documents as authenticated", async () => {
  const { body: document } = await server.request("GET", "/api/docs/json");
  const documented: string[] = [];
  for (const [path, operations] of Object.entries<Record<string, { security?: unknown[] }>>(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const security = operation.security ?? document.security ?? [];
      if (security.length > 0) documented.push(`${method.toUpperCase()} ${path}`);
    }
  }
  const covered = AUTHENTICATED_ROUTES.map((route) => `${route.method} ${openApiPath(route.path)}`);
  expect(covered.sort()).toEqual(documented.sort());
});

describeAuthMatrix(() => server);
