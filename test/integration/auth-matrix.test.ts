// Every authenticated route gets the same authentication checks (test/helpers/auth-matrix.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";
import { AUTH_MATRIX_ENV, AUTHENTICATED_ROUTES, describeAuthMatrix, openApiPath } from "../helpers/auth-matrix";
import { removeMatrixDatabases } from "../helpers/databases";
import { removeMatrixBuildNetworks } from "../helpers/apps";
import { removeMatrixVolumes } from "../helpers/volume-backups";
import { PERMISSIONS } from "../../src/http/permissions";
import { startServerWithDns } from "../helpers/domains";

let server: TestServer;
let stopServer: () => Promise<void>;
// With a DNS server of its own, where the matrix's custom domains are proved.
beforeAll(async () => ({ server, stop: stopServer } = await startServerWithDns(AUTH_MATRIX_ENV)));
// Stopping waits for the apps' and databases' background work; under load that takes more than the default 5 s.
afterAll(() => stopServer?.(), 60_000);
afterAll(removeMatrixDatabases, 60_000);
afterAll(removeMatrixBuildNetworks);
afterAll(removeMatrixVolumes);

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

test("every authenticated route documents the 401 codes the matrix below gets, and 403 FORBIDDEN where a role is refused", async () => {
  const { body: document } = await server.request("GET", "/api/docs/json");
  for (const route of AUTHENTICATED_ROUTES) {
    const responses = document.paths[openApiPath(route.path)][route.method.toLowerCase()].responses;
    const codes = (status: number) => responses[status]?.content["application/json"].schema.allOf[1].properties.code.enum ?? [];
    const name = `${route.method} ${route.path}`;
    expect({ name, codes: codes(401) }).toEqual({ name, codes: expect.arrayContaining(["UNAUTHORIZED", "INVALID_API_KEY", "KEY_EXPIRED"]) });
    const refusesARole = PERMISSIONS[name]!.roles.length < 4;
    expect({ name, codes: codes(403) }).toEqual({ name, codes: expect.arrayContaining(refusesARole ? ["FORBIDDEN", "HOST_NOT_ALLOWED"] : ["HOST_NOT_ALLOWED"]) });
  }
});

describeAuthMatrix(() => server);
