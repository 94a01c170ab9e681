// The body of POST /api/apps/deploy-from-repo, read alike from JSON, URL-encoded and multipart
// forms, and the checks of its repository reference. Owner, name, branch and path reach git's
// argv and the file system: each is held to a strict form here (no leading dash, no `..`, no
// control characters), so nothing in them can act as an option or leave the clone's folder.
import { invalid, parseDeployFields } from "../deploy-form";
import { flag, type Fields } from "../files/bodies";
import type { DeployInput } from "../app-records";

export interface RepositoryReference {
  id: string;
  owner: string;
  name: string;
  branch: string;
  /** The app's root inside the repository, "" for the top, without leading or trailing slashes. */
  path: string;
  repoHostInstallationId?: string;
}

export interface RepositoryDeployInput extends DeployInput {
  repository: RepositoryReference;
  autoDeploy?: boolean;
  /** A token the git server accepts as the HTTP password; stored encrypted. "" removes a stored one. */
  accessToken?: string;
  machineId?: string;
}

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const REPOSITORY_NAME = /^[A-Za-z0-9._][A-Za-z0-9._-]{0,99}$/;
const MAX_OWNER_LENGTH = 200;
const MAX_BRANCH_LENGTH = 255;
const MAX_PATH_LENGTH = 1024;
const MAX_ACCESS_TOKEN_LENGTH = 1024;
const CONTROL_OR_SPACE = /[\0-\x20\x7f]/;

/** An owner, or a GitLab group path (`group/subgroup`): segments of letters, digits, `.`, `_`, `-`, each starting with a letter or digit. */
export function checkOwner(owner: string): string {
  const segments = owner.split("/");
  if (owner.length > MAX_OWNER_LENGTH || segments.length > 8 || !segments.every((segment) => SEGMENT.test(segment))) {
    invalid("repository.owner", "letters, digits, '.', '_' and '-' (GitLab groups as group/subgroup), each part starting with a letter or digit");
  }
  return owner;
}

/** A repository name, without a trailing `.git` (the platform adds it). */
export function checkRepositoryName(name: string): string {
  const bare = name.endsWith(".git") ? name.slice(0, -4) : name;
  if (!REPOSITORY_NAME.test(bare) || bare === "." || bare === "..") invalid("repository.name", "1-100 letters, digits, '.', '_' and '-', not starting with '-'");
  return bare;
}

/** A branch name as `git check-ref-format --branch` accepts it, minus anything that could read as an option. */
export function checkBranch(branch: string): string {
  const problem =
    branch.length === 0 || branch.length > MAX_BRANCH_LENGTH
      ? `1 to ${MAX_BRANCH_LENGTH} characters`
      : branch.startsWith("-")
        ? "it may not start with '-'"
        : CONTROL_OR_SPACE.test(branch) || /[~^:?*[\\]/.test(branch)
          ? "no spaces, control characters or any of ~ ^ : ? * [ \\"
          : branch.includes("..") || branch.includes("@{") || branch.includes("//") || branch === "@"
            ? "no '..', '@{' or '//'"
            : branch.startsWith("/") || branch.endsWith("/") || branch.endsWith(".")
              ? "it may not start or end with '/' or end with '.'"
              : branch.split("/").some((part) => part.startsWith(".") || part.endsWith(".lock"))
                ? "no part may start with '.' or end with '.lock'"
                : null;
  if (problem) invalid("repository.branch", `not a valid branch name: ${problem}`);
  return branch;
}

/** A folder inside the repository: relative, `/`-separated, no `.` or `..` parts. "" (or "/", ".") is the top. */
export function checkPath(path: string): string {
  const trimmed = path.replace(/^\.?\/+/, "").replace(/\/+$/, "");
  if (trimmed === "" || trimmed === ".") return "";
  const parts = trimmed.split("/");
  if (path.length > MAX_PATH_LENGTH || path.includes("\\") || /[\0-\x1f\x7f]/.test(path) || parts.some((part) => part === "" || part === "." || part === "..")) {
    invalid("repository.path", `a folder inside the repository such as apps/web: relative, at most ${MAX_PATH_LENGTH} characters, no '.' or '..' parts, no backslashes or control characters`);
  }
  return parts.join("/");
}

function text(value: unknown, field: string, options: { required: boolean; max: number }): string | undefined {
  if (value === undefined || value === null || value === "") {
    if (options.required) invalid(field, "required");
    return undefined;
  }
  if (typeof value === "number" && field === "repository.id") value = String(value);
  if (typeof value !== "string") invalid(field, "expected a string");
  if (value.length > options.max) invalid(field, `at most ${options.max} characters`);
  return value;
}

/** `repository` as an object (JSON), as JSON text, or as `repository[owner]` / `repository.owner` form fields. */
function repositoryFields(fields: Fields): Fields {
  let value = fields.repository;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      invalid("repository", "expected an object {id, owner, name, branch, path?, repoHostInstallationId?}, or JSON text of one");
    }
  }
  if (value === undefined) {
    const flat: Fields = {};
    for (const [key, item] of Object.entries(fields)) {
      const match = /^repository(?:\[(\w+)\]|\.(\w+))$/.exec(key);
      if (match) flat[match[1] ?? match[2]!] = item;
    }
    if (Object.keys(flat).length === 0) invalid("repository", "required");
    return flat;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) invalid("repository", "expected an object");
  return value as Fields;
}

export function repositoryReference(fields: Fields): RepositoryReference {
  const id = text(fields.id, "repository.id", { required: true, max: 200 })!;
  if (/[\0-\x1f\x7f]/.test(id)) invalid("repository.id", "no control characters");
  const installationField = fields.repoHostInstallationId;
  const installation = text(typeof installationField === "number" ? String(installationField) : installationField, "repository.repoHostInstallationId", { required: false, max: 20 });
  if (installation !== undefined && !/^\d+$/.test(installation)) invalid("repository.repoHostInstallationId", "the GitHub App installation's number");
  return {
    id,
    owner: checkOwner(text(fields.owner, "repository.owner", { required: true, max: MAX_OWNER_LENGTH })!),
    name: checkRepositoryName(text(fields.name, "repository.name", { required: true, max: 104 })!),
    branch: checkBranch(text(fields.branch, "repository.branch", { required: true, max: MAX_BRANCH_LENGTH })!),
    path: checkPath(text(fields.path, "repository.path", { required: false, max: MAX_PATH_LENGTH }) ?? ""),
    ...(installation !== undefined && { repoHostInstallationId: installation }),
  };
}

/** The deploy fields as the deploy form's text fields: JSON numbers and booleans as text, envVars as JSON text. */
export function asFormText(fields: Fields): Record<string, string> {
  const form: Record<string, string> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (name === "repository" || name.startsWith("repository[") || name.startsWith("repository.")) continue;
    if (value === undefined || value === null) continue;
    if ((name === "envVars" || name === "healthCheck" || name === "volumes") && typeof value === "object") form[name] = JSON.stringify(value);
    else if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") form[name] = String(value);
    else invalid(name, "expected a string, number or boolean");
  }
  return form;
}

export function repositoryDeployInput(fields: Fields): RepositoryDeployInput {
  const repository = repositoryReference(repositoryFields(fields));
  const accessToken = fields.accessToken;
  if (accessToken !== undefined && accessToken !== null) {
    if (typeof accessToken !== "string" || accessToken.length > MAX_ACCESS_TOKEN_LENGTH || (accessToken !== "" && CONTROL_OR_SPACE.test(accessToken))) {
      invalid("accessToken", `a token of at most ${MAX_ACCESS_TOKEN_LENGTH} characters without spaces, or "" to remove the stored one`);
    }
  }
  const autoDeploy = fields.autoDeploy === undefined || fields.autoDeploy === null ? undefined : flag(fields, "autoDeploy", false);
  return {
    ...parseDeployFields(asFormText(fields)),
    repository,
    autoDeploy,
    accessToken: typeof accessToken === "string" ? accessToken : undefined,
  };
}
