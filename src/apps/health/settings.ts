// An app's health check (`healthCheck`): what a release waits for before the proxy switches, and
// what the running app is probed with. Bounds, defaults, and the one check every way in uses (the
// deploy form's JSON text, a JSON deploy body, the settings route), so that each refuses the same.
import { t } from "elysia";
import type { apps } from "../../db/schema";
import { ApiError } from "../../http/errors";
import { ref, resource } from "../../http/responses";
import { HEALTH_HISTORY_LENGTH } from "./history";

/** As an app row holds it (the fields are described by HEALTH_CHECK_FIELDS). */
export type HealthCheck = NonNullable<(typeof apps.$inferSelect)["healthCheck"]>;

type NumberField = Exclude<keyof HealthCheck, "path">;

/** Printable ASCII after the leading `/`: no space, CR or LF can reach the request line. */
export const HEALTH_PATH_PATTERN = "^/[!-~]{0,255}$";
const PATH_RULE = "a path starting with `/`, at most 256 printable ASCII characters (no space, CR or LF)";

export const HEALTH_CHECK_FIELDS: Record<NumberField, { minimum: number; maximum: number; default: number; meaning: string }> = {
  intervalSeconds: { minimum: 1, maximum: 3600, default: 10, meaning: "Seconds between two probes of the running app" },
  timeoutSeconds: { minimum: 1, maximum: 60, default: 5, meaning: "Seconds one probe may take (connect to the end of the status line); a running app's probes take at most intervalSeconds" },
  healthyThreshold: { minimum: 1, maximum: 10, default: 1, meaning: "Passing probes in a row a release needs before the proxy switches to it, and an unhealthy app needs to be running again" },
  unhealthyThreshold: { minimum: 1, maximum: 20, default: 3, meaning: "Failing probes in a row that make a running app `unhealthy`" },
  startPeriodSeconds: { minimum: 0, maximum: 600, default: 60, meaning: "Seconds a new container is given to pass before a release gives up on it" },
};

export const DEFAULT_HEALTH_CHECK: HealthCheck = {
  path: null,
  ...(Object.fromEntries(Object.entries(HEALTH_CHECK_FIELDS).map(([name, field]) => [name, field.default])) as Record<NumberField, number>),
};

const pathInput = t.Nullable(t.String({ pattern: HEALTH_PATH_PATTERN, description: `${PATH_RULE}; null: a TCP connect to the app's port is the check` }));
const numberInput = (name: NumberField) => {
  const { minimum, maximum, meaning, default: fallback } = HEALTH_CHECK_FIELDS[name];
  return t.Integer({ minimum, maximum, description: `${meaning} (${minimum}-${maximum}, default ${fallback})` });
};

const HEALTH_CHECK_TEXT =
  "The app's health check. A release switches the proxy only once the new container answers GET `path` (Host: the app's host) " +
  "with a 2xx or 3xx `healthyThreshold` times in a row; the running app is then probed every `intervalSeconds`.";

/**
 * Settings bodies: the fields given change, the others keep their value; null: the defaults (a TCP
 * check). Documented with this shape but not checked by the route: healthCheckAfter checks it in
 * the service, as a deploy's, so a refusal names the sub-field and its rule (the route's check of a
 * nullable object could only say "Expected union value").
 */
export const healthCheckInput = t.Unknown({
  ...t.Nullable(
    t.Object(
      {
        path: t.Optional(pathInput),
        intervalSeconds: t.Optional(numberInput("intervalSeconds")),
        timeoutSeconds: t.Optional(numberInput("timeoutSeconds")),
        healthyThreshold: t.Optional(numberInput("healthyThreshold")),
        unhealthyThreshold: t.Optional(numberInput("unhealthyThreshold")),
        startPeriodSeconds: t.Optional(numberInput("startPeriodSeconds")),
      },
      { additionalProperties: false, description: `${HEALTH_CHECK_TEXT} Fields left out keep their value; null goes back to the defaults (a TCP check).` },
    ),
  ),
});

export const HealthCheckSchema = resource(
  "HealthCheck",
  {
    path: pathInput,
    intervalSeconds: numberInput("intervalSeconds"),
    timeoutSeconds: numberInput("timeoutSeconds"),
    healthyThreshold: numberInput("healthyThreshold"),
    unhealthyThreshold: numberInput("unhealthyThreshold"),
    startPeriodSeconds: numberInput("startPeriodSeconds"),
  },
  HEALTH_CHECK_TEXT,
);

function invalidField(field: string, message: string): never {
  throw new ApiError("VALIDATION_FAILED", `Invalid body field 'healthCheck${field ? `.${field}` : ""}': ${message}`);
}

/**
 * `input` applied over `current`: an object of some of the fields (each checked), null for the
 * defaults, or (in a form) the same as JSON text. Unknown fields are refused: a misspelt one would
 * silently change nothing.
 */
export function healthCheckAfter(current: HealthCheck, input: unknown): HealthCheck {
  if (input === null || input === "null") return { ...DEFAULT_HEALTH_CHECK };
  if (typeof input === "string") {
    if (input.length > 4096) invalidField("", "at most 4096 characters of JSON");
    try {
      input = JSON.parse(input);
    } catch {
      invalidField("", "a JSON object");
    }
    if (input === null) return { ...DEFAULT_HEALTH_CHECK };
  }
  if (typeof input !== "object" || Array.isArray(input)) invalidField("", "an object or null");
  const next = { ...current };
  for (const [name, value] of Object.entries(input as Record<string, unknown>)) {
    if (name === "path") {
      if (value !== null && (typeof value !== "string" || !new RegExp(HEALTH_PATH_PATTERN).test(value))) invalidField("path", `${PATH_RULE}, or null`);
      next.path = value as string | null;
      continue;
    }
    if (!Object.hasOwn(HEALTH_CHECK_FIELDS, name)) invalidField(name, `unknown field; known: path, ${Object.keys(HEALTH_CHECK_FIELDS).join(", ")}`);
    const field = HEALTH_CHECK_FIELDS[name as NumberField];
    if (typeof value !== "number" || !Number.isInteger(value) || value < field.minimum || value > field.maximum) {
      invalidField(name, `a whole number from ${field.minimum} to ${field.maximum}`);
    }
    next[name as NumberField] = value;
  }
  return next;
}

/** The check an app row holds (null: the defaults). */
export function healthCheckOf(app: { healthCheck: HealthCheck | null }): HealthCheck {
  return app.healthCheck ?? { ...DEFAULT_HEALTH_CHECK };
}

/** One probe's outcome. */
export interface HealthProbe {
  passed: boolean;
  /** ms since the epoch. */
  at: number;
  /** The answer's status; null when none came (refused, timed out, not HTTP) or for a TCP check. */
  httpStatus: number | null;
  /** Why it failed (null when it passed or the status says it). */
  error: string | null;
  latencyMs: number;
}

export const HealthProbeSchema = resource(
  "HealthProbe",
  {
    status: t.Union([t.Literal("pass"), t.Literal("fail")], { description: "`pass`: a 2xx or 3xx (or, without a path, a TCP connect) within `timeoutSeconds`" }),
    at: t.String({ format: "date-time" }),
    httpStatus: t.Nullable(t.Integer({ description: "The status the app answered; null when none came or the check is TCP" })),
    error: t.Nullable(t.String({ description: "Why no answer counted, e.g. `connection refused`, `timed out after 5 s`" })),
    latencyMs: t.Number({ minimum: 0, description: "From the connect to the end of the status line (or the connect, for TCP)" }),
  },
  "One probe of an app's health check.",
);

export function probeView(probe: HealthProbe) {
  return {
    status: probe.passed ? ("pass" as const) : ("fail" as const),
    at: new Date(probe.at).toISOString(),
    httpStatus: probe.httpStatus,
    error: probe.error,
    latencyMs: probe.latencyMs,
  };
}

/** One line for a build log or a statusReason. */
export function describeProbe(probe: HealthProbe, path: string | null): string {
  const what = path === null ? "TCP connect" : `GET ${path}`;
  const outcome = probe.httpStatus !== null ? `HTTP ${probe.httpStatus}` : (probe.error ?? "no answer");
  return `${what}: ${outcome} after ${Math.round(probe.latencyMs)} ms`;
}

export const AppHealthSchema = resource(
  "AppHealth",
  {
    healthCheck: ref(HealthCheckSchema),
    lastProbe: t.Nullable(ref(HealthProbeSchema), { description: "null before the first probe since the platform started" }),
    consecutiveFailures: t.Integer({ minimum: 0, description: "Failing probes in a row up to the last one" }),
    probes: t.Array(ref(HealthProbeSchema), { description: `The last probes of the serving container, newest first (at most ${HEALTH_HISTORY_LENGTH}, in memory)` }),
  },
  "An app's health check and its recent probes.",
);

/** GET /api/apps/{id}/health from the probes kept (newest first). */
export function appHealthView(app: { healthCheck: HealthCheck | null }, probes: HealthProbe[]) {
  const failures = probes.findIndex((probe) => probe.passed);
  return {
    healthCheck: healthCheckOf(app),
    lastProbe: probes[0] ? probeView(probes[0]) : null,
    consecutiveFailures: failures < 0 ? probes.length : failures,
    probes: probes.map(probeView),
  };
}
