// The one error type of the API and the one map of its codes. Every failure a client can see
// is an ApiError with a stable `code`; the global handler in src/http/server.ts turns it into
// `{ success: false, error, code }` with the status from ERROR_STATUS.

export const ERROR_STATUS = {
  VALIDATION_FAILED: 400,
  DUPLICATE_SESSION_COOKIE: 400,
  SESSION_REQUIRED: 400,
  INVALID_TWO_FACTOR_CODE: 400,
  WRONG_PASSWORD: 400,
  INVALID_JSON: 400,
  BODY_TOO_DEEP: 400,
  UNKNOWN_MACHINE: 400,
  ARCHIVE_INVALID: 400,
  ARCHIVE_PATH_TRAVERSAL: 400,
  ARCHIVE_UNSAFE_PATH: 400,
  ARCHIVE_UNSAFE_ENTRY: 400,
  ARCHIVE_TOO_MANY_ENTRIES: 400,
  ARCHIVE_TOO_DEEP: 400,
  ARCHIVE_TOO_LARGE: 400,
  ARCHIVE_RATIO_EXCEEDED: 400,
  ARCHIVE_ENCRYPTED: 400,
  ARCHIVE_UNSUPPORTED_METHOD: 400,
  INVALID_CRON: 400,
  INVALID_REGEX: 400,
  INVALID_PATH: 400,
  MOVE_INTO_ITSELF: 400,
  TOO_MANY_ENTRIES: 400,
  RENAME_TOO_LARGE: 400,
  GITHUB_APP_NOT_CONFIGURED: 400,
  INVALID_INSTALL_STATE: 400,
  DOMAIN_RESERVED: 400,
  IMAGE_NOT_ALLOWED: 400,
  INVALID_CERTIFICATE: 400,
  // Volumes (src/volumes).
  INVALID_VOLUME_NAME: 400,
  INVALID_MOUNT_PATH: 400,
  MOUNT_PATHS_OVERLAP: 400,
  TOO_MANY_VOLUMES: 400,
  UNAUTHORIZED: 401,
  INVALID_SIGNATURE: 401,
  INVALID_DEPLOY_HOOK: 401,
  INVALID_API_KEY: 401,
  KEY_EXPIRED: 401,
  INVALID_CREDENTIALS: 401,
  SETUP_KEY_REQUIRED: 401,
  SETUP_TOKEN_REQUIRED: 401,
  TWO_FACTOR_REQUIRED: 401,
  FORBIDDEN: 403,
  WEBHOOKS_DISABLED: 403,
  INSTALLATION_NOT_YOURS: 403,
  CSRF_REJECTED: 403,
  HOST_NOT_ALLOWED: 403,
  NOT_A_MEMBER: 403,
  TWO_FACTOR_SETUP_REQUIRED: 403,
  SYMLINK_NOT_FOLLOWED: 403,
  NOT_FOUND: 404,
  WORKSPACE_NOT_FOUND: 404,
  API_KEY_NOT_FOUND: 404,
  INVITATION_NOT_FOUND: 404,
  MEMBER_NOT_FOUND: 404,
  ALREADY_SET_UP: 409,
  SUBDOMAIN_TAKEN: 409,
  DOMAIN_TAKEN: 409,
  DOMAIN_NOT_VERIFIED: 409,
  NOT_DEPLOYED: 409,
  CONFLICT: 409,
  INVITATION_PENDING: 409,
  NAME_TAKEN: 409,
  BUSY: 409,
  BUILD_FINISHED: 409,
  BUILD_NOT_RELEASABLE: 409,
  ROLLBACK_UNAVAILABLE: 409,
  REGISTRY_TAKEN: 409,
  NOT_RUNNING: 409,
  OPERATION_FAILED: 409,
  PORT_RANGE_EXHAUSTED: 409,
  ALREADY_MEMBER: 409,
  PASSWORDLESS_ACCOUNT: 409,
  TWO_FACTOR_NOT_ENABLED: 409,
  KEY_LIMIT_REACHED: 409,
  LAST_OWNER: 409,
  WORKSPACE_NOT_EMPTY: 409,
  QUOTA_EXCEEDED: 409,
  BACKUP_IN_PROGRESS: 409,
  RESTORE_IN_PROGRESS: 409,
  BACKUP_NOT_READY: 409,
  VERIFY_IN_PROGRESS: 409,
  VOLUME_IN_USE: 409,
  FILE_EXISTS: 409,
  FILE_CHANGED: 409,
  NOT_A_DIRECTORY: 409,
  NOT_A_FILE: 409,
  VOLUME_ATTACHED: 409,
  VOLUME_ON_OTHER_MACHINE: 409,
  REQUEST_TIMEOUT: 408,
  INVITATION_EXPIRED: 410,
  BACKUP_FILE_MISSING: 410,
  LENGTH_REQUIRED: 411,
  PAYLOAD_TOO_LARGE: 413,
  FILE_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RANGE_NOT_SATISFIABLE: 416,
  BACKUP_CORRUPT: 422,
  TOO_MANY_RENAMES: 422,
  INVALID_DUMP: 422,
  RATE_LIMITED: 429,
  HEADERS_TOO_LARGE: 431,
  USAGE_EXCEEDED: 429,
  INTERNAL_ERROR: 500,
  INSUFFICIENT_STORAGE: 507,
  GITHUB_API_FAILED: 502,
  DOCKER_UNAVAILABLE: 503,
  IMAGE_UNAVAILABLE: 503,
  SERVER_BUSY: 503,
  DOCKER_TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers, e.g. Retry-After on 429 and 503. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.status = ERROR_STATUS[code];
  }
}

export function notFound(what: string): ApiError {
  return new ApiError("NOT_FOUND", `${what} not found`);
}

/** The file system is full (ENOSPC), a quota of it is (EDQUOT), or SQLite found no room for its pages (SQLITE_FULL). */
export function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT" || code === "SQLITE_FULL";
}

/**
 * 507 naming what could not be written. It says nothing of it was kept only when the caller knows
 * (`nothingKept`): a handler of several writes that stopped part way may have kept the first ones.
 */
export function diskFull(what: string, { nothingKept = false } = {}): ApiError {
  const kept = nothingKept ? "and nothing of it was kept" : "and what was written before it may have been kept: check before trying again";
  return new ApiError("INSUFFICIENT_STORAGE", `The platform's disk is full: ${what} could not be written, ${kept}`);
}

/** For a `.catch` around one write that leaves nothing when it fails: a full disk becomes 507 naming `what`; any other failure goes on as it was. */
export function rethrowDiskFull(what: string): (error: unknown) => never {
  return (error) => {
    throw isDiskFull(error) ? diskFull(what, { nothingKept: true }) : error;
  };
}
