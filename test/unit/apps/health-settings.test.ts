// The health check setting: defaults, bounds, and the same refusals from every way in.
import { describe, expect, test } from "bun:test";
import { ApiError } from "../../../src/http/errors";
import { parseDeployFields } from "../../../src/apps/deploy-form";
import { DEFAULT_HEALTH_CHECK, healthCheckAfter } from "../../../src/apps/health/settings";

const refusal = (input: unknown) => {
  try {
    healthCheckAfter(DEFAULT_HEALTH_CHECK, input);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("VALIDATION_FAILED");
    return (error as ApiError).message;
  }
  throw new Error(`accepted ${JSON.stringify(input)}`);
};

describe("health check settings", () => {
  test("the defaults are a TCP check with sensible numbers", () => {
    expect(DEFAULT_HEALTH_CHECK).toEqual({ path: null, intervalSeconds: 10, timeoutSeconds: 5, healthyThreshold: 1, unhealthyThreshold: 3, startPeriodSeconds: 60 });
  });

  test("fields given change, the others keep their value; null goes back to the defaults", () => {
    const first = healthCheckAfter(DEFAULT_HEALTH_CHECK, { path: "/health?full=1", healthyThreshold: 3 });
    expect(first).toEqual({ ...DEFAULT_HEALTH_CHECK, path: "/health?full=1", healthyThreshold: 3 });
    expect(healthCheckAfter(first, { intervalSeconds: 30 })).toEqual({ ...first, intervalSeconds: 30 });
    expect(healthCheckAfter(first, null)).toEqual(DEFAULT_HEALTH_CHECK);
    expect(healthCheckAfter(first, { path: null }).path).toBeNull();
  });

  test("JSON text (a form field) is read as the object it holds", () => {
    expect(healthCheckAfter(DEFAULT_HEALTH_CHECK, '{"path":"/up","timeoutSeconds":2}')).toEqual({ ...DEFAULT_HEALTH_CHECK, path: "/up", timeoutSeconds: 2 });
    expect(refusal("{not json")).toContain("healthCheck");
    expect(refusal("x".repeat(5000))).toContain("4096");
  });

  test("a path must start with / and hold no space, CR, LF or control character, bounded", () => {
    for (const path of ["health", "", "/a b", "/a\r\nX-Injected: 1", "/a\tb", "/é", `/${"a".repeat(256)}`, 42]) {
      expect(refusal({ path })).toContain("healthCheck.path");
    }
    expect(healthCheckAfter(DEFAULT_HEALTH_CHECK, { path: `/${"a".repeat(255)}` }).path).toHaveLength(256);
  });

  test("numbers are whole and within bounds; unknown fields are refused", () => {
    expect(refusal({ intervalSeconds: 0 })).toContain("healthCheck.intervalSeconds");
    expect(refusal({ timeoutSeconds: 61 })).toContain("from 1 to 60");
    expect(refusal({ healthyThreshold: 1.5 })).toContain("healthCheck.healthyThreshold");
    expect(refusal({ unhealthyThreshold: "3" })).toContain("healthCheck.unhealthyThreshold");
    expect(refusal({ startPeriodSeconds: -1 })).toContain("healthCheck.startPeriodSeconds");
    expect(refusal({ interval: 5 })).toContain("unknown field");
    expect(refusal({ constructor: 5 })).toContain("unknown field");
    expect(refusal([1])).toContain("an object or null");
  });

  test("the deploy form takes it as JSON text, whole: fields left out take their defaults", () => {
    const base = { name: "web", runtime: "node", memoryMB: "128" };
    expect(parseDeployFields(base).healthCheck).toBeUndefined();
    expect(parseDeployFields({ ...base, healthCheck: '{"path":"/ready"}' }).healthCheck).toEqual({ ...DEFAULT_HEALTH_CHECK, path: "/ready" });
    expect(() => parseDeployFields({ ...base, healthCheck: '{"path":"ready"}' })).toThrow("healthCheck.path");
  });
});
