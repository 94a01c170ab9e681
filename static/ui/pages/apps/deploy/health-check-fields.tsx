// A deploy's optional health check: the path a release waits on (empty: a TCP connect to the port),
// and the numbers folded away (empty: the platform's defaults). Sent as `healthCheck`, an object
// of only the fields given; the ZIP form sends it as JSON text.
import { Field } from "../../../components/form";

/** Field, label, bounds and default, as src/apps/health/settings.ts sets them. */
const NUMBERS: [field: string, label: string, min: number, max: number, fallback: number][] = [
  ["intervalSeconds", "Interval (seconds)", 1, 3600, 10],
  ["timeoutSeconds", "Timeout (seconds)", 1, 60, 5],
  ["healthyThreshold", "Healthy after (passes in a row)", 1, 10, 1],
  ["unhealthyThreshold", "Unhealthy after (failures in a row)", 1, 20, 3],
  ["startPeriodSeconds", "Start period (seconds)", 0, 600, 60],
];

export function HealthCheckFields() {
  return (
    <fieldset class="deploy-health">
      <legend>Health check (optional)</legend>
      <Field
        label="Health check path"
        name="healthCheck.path"
        autocomplete="off"
        spellcheck={false}
        placeholder="/health"
        hint="The proxy switches to a new version once GET on this path answers 2xx or 3xx. Empty: TCP only (a connect to the port)."
      />
      <details class="deploy-health-more">
        <summary>Interval, timeout and thresholds</summary>
        <div class="deploy-fields">
          {NUMBERS.map(([field, label, min, max, fallback]) => (
            <Field label={label} name={`healthCheck.${field}`} type="number" min={min} max={max} step={1} placeholder={`${fallback} (default)`} />
          ))}
        </div>
      </details>
    </fieldset>
  );
}

/** `{healthCheck}` with the fields given, or nothing when none is. */
export function healthCheckValue(values: Record<string, string>): {
  healthCheck?: Record<string, string | number>;
} {
  const healthCheck: Record<string, string | number> = {};
  const path = values["healthCheck.path"]?.trim();
  if (path) healthCheck.path = path;
  for (const [field] of NUMBERS) {
    const given = values[`healthCheck.${field}`]?.trim();
    if (given) healthCheck[field] = Number(given);
  }
  return Object.keys(healthCheck).length ? { healthCheck } : {};
}
