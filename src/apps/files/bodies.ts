// The bodies of create-file and bulk rename, which the spec accepts as JSON, URL-encoded form or
// multipart form alike. Forms carry only text, so their fields are read as the JSON ones would be:
// booleans as true/false (1/0, on/off), `actions` as JSON text; each problem names its field.
import { ApiError } from "../../http/errors";
import { invalid } from "../deploy-form";
import { MAX_PATH_LENGTH, RENAME_ACTIONS } from "./model";

export type RenameAction = (typeof RENAME_ACTIONS)[number];

/** The spec's limits of bulk rename (part 8). */
export const RENAME_FIELD_LIMITS = { basePath: 1024, find: 200, replace: 200 } as const;
const MAX_ACTIONS = 10_000;

export interface BulkRenameInput {
  basePath: string;
  find: string;
  replace: string;
  useRegex: boolean;
  includeFiles: boolean;
  includeDirs: boolean;
  defaultAction: RenameAction;
  actions: Record<string, RenameAction>;
}

export type Fields = Record<string, unknown>;

/** The body's fields, whichever of the three forms it came in. */
export async function readFields(request: Request): Promise<Fields> {
  const type = (request.headers.get("content-type") ?? "").toLowerCase();
  if (type.startsWith("application/json")) {
    const parsed: unknown = await request.json().catch(() => {
      throw new ApiError("INVALID_JSON", "The body is not valid JSON");
    });
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new ApiError("VALIDATION_FAILED", "The body must be a JSON object");
    return parsed as Fields;
  }
  if (type.startsWith("application/x-www-form-urlencoded") || type.startsWith("multipart/form-data")) {
    const form = await request.formData().catch(() => {
      throw new ApiError("VALIDATION_FAILED", "The form body could not be read");
    });
    const fields: Fields = {};
    for (const [name, value] of form.entries()) fields[name] = typeof value === "string" ? value : await (value as Blob).text();
    return fields;
  }
  throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Send application/json, application/x-www-form-urlencoded or multipart/form-data");
}

function text(fields: Fields, name: string, options: { required?: boolean; min?: number; max: number; fallback?: string }): string {
  const value = fields[name];
  if (value === undefined || value === null) {
    if (options.required) invalid(name, "required");
    return options.fallback ?? "";
  }
  if (typeof value !== "string") invalid(name, "expected a string");
  if (value.length < (options.min ?? 0) || value.length > options.max) invalid(name, `expected ${options.min ?? 0} to ${options.max} characters`);
  return value;
}

export function flag(fields: Fields, name: string, fallback: boolean): boolean {
  const value = fields[name];
  if (value === undefined || value === null || value === "") return fallback;
  if (typeof value === "boolean") return value;
  if (typeof value === "string") {
    if (["true", "1", "on"].includes(value.toLowerCase())) return true;
    if (["false", "0", "off"].includes(value.toLowerCase())) return false;
  }
  return invalid(name, "expected true or false");
}

function renameAction(value: unknown, field: string): RenameAction {
  if (typeof value !== "string" || !(RENAME_ACTIONS as readonly string[]).includes(value)) invalid(field, `expected one of ${RENAME_ACTIONS.join(", ")}`);
  return value as RenameAction;
}

function actionsOf(fields: Fields): Record<string, RenameAction> {
  let value = fields.actions;
  if (value === undefined || value === null || value === "") return {};
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      invalid("actions", "expected a JSON object of path -> skip, overwrite or rename");
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) invalid("actions", "expected an object of path -> skip, overwrite or rename");
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_ACTIONS) invalid("actions", `at most ${MAX_ACTIONS} entries`);
  return Object.fromEntries(
    entries.map(([key, action]) => {
      if (key.length > MAX_PATH_LENGTH) invalid("actions", `a key is longer than ${MAX_PATH_LENGTH} characters`);
      return [key, renameAction(action, `actions.${key}`)];
    }),
  );
}

export function bulkRenameInput(fields: Fields): BulkRenameInput {
  return {
    basePath: text(fields, "basePath", { max: RENAME_FIELD_LIMITS.basePath }),
    find: text(fields, "find", { required: true, min: 1, max: RENAME_FIELD_LIMITS.find }),
    replace: text(fields, "replace", { max: RENAME_FIELD_LIMITS.replace }),
    useRegex: flag(fields, "useRegex", false),
    includeFiles: flag(fields, "includeFiles", true),
    includeDirs: flag(fields, "includeDirs", false),
    defaultAction: fields.defaultAction === undefined || fields.defaultAction === "" ? "skip" : renameAction(fields.defaultAction, "defaultAction"),
    actions: actionsOf(fields),
  };
}

export function createFileInput(fields: Fields, maxContentBytes: number): { path: string; content: string } {
  const content = text(fields, "content", { max: maxContentBytes });
  if (Buffer.byteLength(content) > maxContentBytes) throw new ApiError("FILE_TOO_LARGE", `The content is over ${maxContentBytes} bytes`);
  return { path: text(fields, "path", { required: true, min: 1, max: MAX_PATH_LENGTH }), content };
}
