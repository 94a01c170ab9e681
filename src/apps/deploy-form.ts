// The text fields of the deploy form (multipart, so not checked by a typebox schema), checked one
// by one so each message names the field at fault.
import { ApiError } from "../http/errors";
import { parseEnvVarsField } from "./env-vars";
import { CONTAINER_CPUS, type Runtime } from "../config";
import { DEFAULT_HEALTH_CHECK, healthCheckAfter } from "./health/settings";
import { parseReleaseStrategyField, parseVolumesField } from "../volumes/validation";
import { BUILDERS, MAX_STARTUP_COMMAND, MEMORY_MB, NAME_PATTERN, SUBDOMAIN_PATTERN, type BuilderSetting } from "./model";

const RUNTIMES: Runtime[] = ["node", "bun", "python"];

export function invalid(field: string, message: string): never {
  throw new ApiError("VALIDATION_FAILED", `Invalid body field '${field}': ${message}`);
}

function integerField(fields: Record<string, string>, name: string, min: number, max: number): number | undefined {
  const raw = fields[name];
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) invalid(name, `expected a whole number from ${min} to ${max}`);
  return value;
}

function cpusField(fields: Record<string, string>): number | undefined {
  const raw = fields.cpus;
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < CONTAINER_CPUS.minimum || value > CONTAINER_CPUS.maximum) invalid("cpus", `expected a number from ${CONTAINER_CPUS.minimum} to ${CONTAINER_CPUS.maximum}`);
  return value;
}

/**
 * One line: the command is shown in build logs, where a line break in it could forge a line of
 * the platform's own (`==> ...`). Tabs are allowed; `&&` or `;` join several commands.
 */
export function checkStartupCommand(command: string) {
  if (command.length > MAX_STARTUP_COMMAND || /[\0-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]/.test(command)) {
    invalid("startupCommand", `at most ${MAX_STARTUP_COMMAND} characters on one line (join commands with && or ;), no control characters`);
  }
}

function builderField(fields: Record<string, string>): BuilderSetting | undefined {
  const raw = fields.builder;
  if (raw === undefined || raw === "") return undefined;
  if (!(raw in BUILDERS)) invalid("builder", `one of ${Object.keys(BUILDERS).join(", ")}`);
  return raw as BuilderSetting;
}

export function parseDeployFields(fields: Record<string, string>) {
  const name = fields.name ?? invalid("name", "required");
  if (!new RegExp(NAME_PATTERN).test(name)) invalid("name", "lowercase letters, digits and dashes, 1-63 characters");
  const runtime = (fields.runtime ?? invalid("runtime", "required")) as Runtime;
  if (!RUNTIMES.includes(runtime)) invalid("runtime", "one of node, bun, python");
  if (fields.memoryMB === undefined) invalid("memoryMB", "required");
  const memoryMB = integerField(fields, "memoryMB", MEMORY_MB.minimum, MEMORY_MB.maximum)!;
  const startupCommand = fields.startupCommand?.trim() || undefined;
  if (startupCommand) checkStartupCommand(startupCommand);
  const exposePort = integerField(fields, "exposePort", 1, 65535);
  const subdomain = fields.subdomain?.trim() || undefined;
  if (subdomain !== undefined && !new RegExp(SUBDOMAIN_PATTERN).test(subdomain)) invalid("subdomain", "a DNS label: lowercase letters, digits and dashes");
  const autoRestartText = fields.autoRestart;
  if (autoRestartText !== undefined && autoRestartText !== "true" && autoRestartText !== "false") invalid("autoRestart", "true or false");
  return {
    name,
    runtime,
    memoryMB,
    cpus: cpusField(fields),
    startupCommand,
    envVars: parseEnvVarsField(fields.envVars),
    exposePort,
    subdomain,
    autoRestart: autoRestartText === undefined ? undefined : autoRestartText === "true",
    builder: builderField(fields),
    // At deploy the check is given whole: fields left out take their defaults.
    healthCheck: fields.healthCheck === undefined || fields.healthCheck === "" ? undefined : healthCheckAfter(DEFAULT_HEALTH_CHECK, fields.healthCheck),
    machineId: fields.machineId || undefined,
    volumes: parseVolumesField(fields.volumes),
    releaseStrategy: parseReleaseStrategyField(fields.releaseStrategy),
  };
}
