// The permission matrix's lookup: Elysia's route pattern or the path, and fail-closed refusals.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { assertPermitted, mayReadSecrets, PERMISSIONS, permittedRoutes, routeKeyOf } from "../../../src/http/permissions";
import { ApiError } from "../../../src/http/errors";

const ROOT = join(import.meta.dir, "../../..");

function refusal(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("routeKeyOf", () => {
  test("takes Elysia's route pattern when the table knows it", () => {
    expect(routeKeyOf("DELETE", "/api/databases/:databaseId", "/api/databases/db_1")).toBe("DELETE /api/databases/:databaseId");
  });

  test("falls back to matching the path, parameters matching one segment", () => {
    expect(routeKeyOf("GET", undefined, "/api/apps/app_1/builds/bld_2/log")).toBe("GET /api/apps/:appId/builds/:buildId/log");
    expect(routeKeyOf("GET", undefined, "/api/apps/app_1/builds/bld_2/log/extra")).toBeUndefined();
    expect(routeKeyOf("HEAD", undefined, "/api/apps/")).toBe("GET /api/apps/");
  });
});

describe("assertPermitted", () => {
  test("a route missing from the table is refused to every role, owner included", () => {
    const error = refusal(() => assertPermitted("owner", routeKeyOf("POST", "/api/not-in-the-table", "/api/not-in-the-table")));
    expect(error.code).toBe("FORBIDDEN");
    expect(error.message).toContain("permission matrix");
  });

  test("a role outside the route's list gets 403 FORBIDDEN naming the roles needed", () => {
    const error = refusal(() => assertPermitted("member", "DELETE /api/databases/:databaseId"));
    expect({ status: error.status, code: error.code }).toEqual({ status: 403, code: "FORBIDDEN" });
    expect(error.message).toContain("owner or admin");
    expect(assertPermitted("admin", "DELETE /api/databases/:databaseId").audit).toBe("database.deleted");
  });

  test("viewers may only read: every route they may call is a GET, and they never read secrets", () => {
    const viewerRoutes = Object.entries(PERMISSIONS).filter(([, permission]) => permission.roles.includes("viewer"));
    const writes = viewerRoutes.filter(([key]) => !key.startsWith("GET "));
    // Their own keys and session are theirs to manage.
    expect(writes.map(([key]) => key).every((key) => key.includes("/api/api-keys/") || key.includes("/api/auth/"))).toBe(true);
    expect(mayReadSecrets("viewer")).toBe(false);
    expect(mayReadSecrets("member")).toBe(true);
  });

  test("every role the table names is one of the four, and owners may call every route", () => {
    for (const [key, permission] of Object.entries(PERMISSIONS)) {
      expect(permission.roles.every((role) => ["owner", "admin", "member", "viewer"].includes(role))).toBe(true);
      expect(key).toMatch(/^(GET|POST|PUT|PATCH|DELETE) \/api\//);
      expect(permission.roles).toContain("owner");
    }
  });
});

describe("permittedRoutes", () => {
  test("lists a role's routes as the OpenAPI document writes them", () => {
    const viewer = permittedRoutes("viewer");
    expect(viewer).toContain("GET /api/apps/{appId}");
    expect(viewer).not.toContain("POST /api/apps/{appId}/stop");
    expect(permittedRoutes("member")).toContain("POST /api/apps/{appId}/stop");
    expect(permittedRoutes("member")).not.toContain("DELETE /api/databases/{databaseId}");
    expect(permittedRoutes("owner")).toHaveLength(Object.keys(PERMISSIONS).length);
  });

  // The dashboard offers an action when the session lists its route (static/ui/session.ts, may()):
  // a route written there that is not in the table would hide its action from every role.
  test("every route the dashboard asks about is a route of the table", async () => {
    const routes = new Set(permittedRoutes("owner"));
    const asked: string[] = [];
    for (const file of new Bun.Glob("static/ui/**/*.{ts,tsx}").scanSync({ cwd: ROOT })) {
      const source = await Bun.file(`${ROOT}/${file}`).text();
      for (const match of source.matchAll(/"((?:GET|POST|PUT|PATCH|DELETE) \/api\/[^"]*)"/g)) asked.push(match[1]!);
    }
    expect(asked.length).toBeGreaterThan(40);
    expect(asked.filter((route) => !routes.has(route))).toEqual([]);
  });
});
