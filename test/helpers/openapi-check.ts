// Holds every answer a test receives to the OpenAPI document the server publishes: the status must
// be documented for the operation, and a JSON body must match the documented schema (JSON Schema
// 2020-12, by ajv). TestServer.request runs it on every answer, so a route whose answer drifts
// from its documentation fails whichever test received it.
//
// Stricter than the document on one point: an object schema that lists its properties is read as
// closed, so a field the server sends but the document does not name is a failure too. The
// published document stays open (clients must tolerate fields added later).
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";

type Json = Record<string, any>;

const DOCUMENT_ID = "https://platform.invalid/openapi.json";
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

/** A copy of the document where every object schema that names its properties admits no others. */
function closed(value: unknown, inAllOf = false): unknown {
  if (Array.isArray(value)) return value.map((item) => closed(item, inAllOf));
  if (!value || typeof value !== "object") return value;
  const copy: Json = {};
  for (const [key, child] of Object.entries(value)) copy[key] = closed(child, key === "allOf");
  // The branches of an allOf each see the whole object, so they cannot be closed one by one.
  if (!inAllOf && copy.type === "object" && copy.properties && !("additionalProperties" in copy)) copy.additionalProperties = false;
  return copy;
}

const escapePointer = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1");

interface Template {
  path: string;
  pattern: RegExp;
  parameters: number;
}

export class ResponseChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly templates: Template[];
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(private readonly document: Json) {
    addFormats(this.ajv);
    this.ajv.addSchema(closed(document) as Json, DOCUMENT_ID);
    this.templates = Object.keys(document.paths)
      .map((path) => ({
        path,
        pattern: new RegExp(`^${path.replace(/\/$/, "").replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}/?$`),
        parameters: (path.match(/\{/g) ?? []).length,
      }))
      // A literal segment wins over a parameter: /api/apps/deploy is not /api/apps/{appId}.
      .sort((a, b) => a.parameters - b.parameters);
  }

  /** The documented path an answer belongs to, or null for a path the document does not describe. */
  templateOf(method: string, url: string): string | null {
    const pathname = new URL(url, "http://x").pathname;
    const lower = method.toLowerCase();
    return this.templates.find((template) => template.pattern.test(pathname) && this.document.paths[template.path][lower])?.path ?? null;
  }

  /**
   * What is wrong with an answer, or [] when it is as documented. Paths the document does not
   * describe (the dashboard, the docs themselves, unknown routes) are not its business.
   */
  problems(method: string, url: string, status: number, contentType: string | null, body: unknown): string[] {
    const lower = method.toLowerCase();
    if (!METHODS.includes(lower)) return [];
    const path = this.templateOf(method, url);
    if (!path) return [];
    const where = `${method.toUpperCase()} ${path} answered ${status}`;
    const answer = this.document.paths[path][lower].responses?.[String(status)];
    if (!answer) return [`${where}, a status its documentation does not list`];
    const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
    if (!mediaType) return answer.content ? [`${where} with no content type; documented: ${Object.keys(answer.content).join(", ")}`] : [];
    if (!answer.content?.[mediaType]) return [`${where} with ${mediaType}; documented: ${Object.keys(answer.content ?? {}).join(", ") || "no body"}`];
    if (mediaType !== "application/json") return [];
    const validate = this.validatorFor(["paths", path, lower, "responses", String(status), "content", mediaType, "schema"]);
    if (validate(body)) return [];
    return (validate.errors ?? []).map((error) => `${where}: body${error.instancePath} ${error.message}${error.params ? ` ${JSON.stringify(error.params)}` : ""}`);
  }

  private validatorFor(pointer: string[]): ValidateFunction {
    const ref = `${DOCUMENT_ID}#/${pointer.map(escapePointer).join("/")}`;
    let validate = this.validators.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: ref });
      this.validators.set(ref, validate);
    }
    return validate;
  }
}

let shared: Promise<ResponseChecker> | null = null;

/**
 * The checker for the document the servers of this test run publish. Every server a run starts
 * runs the same code, so the document is fetched from the first one only: generating it costs a
 * server some 30 ms of its event loop, which the lag probes of later servers should not see.
 */
export function responseCheckerFor(baseUrl: string): Promise<ResponseChecker> {
  shared ??= fetch(`${baseUrl}/api/docs/json`)
    .then((response) => response.json())
    .then((document) => new ResponseChecker(document as Json))
    .catch((error) => {
      shared = null;
      throw error;
    });
  return shared;
}
