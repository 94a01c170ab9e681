// The vocabulary of an app's file system API: what its routes take and answer.
import { t } from "elysia";
import { oneOf, ref, resource, timestamp } from "../../http/responses";

/** Of a path relative to the app's root (`/`-separated); ./paths.ts refuses anything unsafe. */
export const MAX_PATH_LENGTH = 1024;
const path = (description: string) => t.String({ maxLength: MAX_PATH_LENGTH, description });

export const FILE_CHANGE_ACTIONS = ["create", "write", "mkdir", "move", "delete", "bulk-rename"] as const;
export type FileChangeAction = (typeof FILE_CHANGE_ACTIONS)[number];
export const RENAME_ACTIONS = ["skip", "overwrite", "rename"] as const;

export const FileEntrySchema = resource(
  "FileEntry",
  {
    name: t.String(),
    path: t.String({ description: "Relative to the app's root, `/`-separated" }),
    type: oneOf(["file", "dir", "symlink"] as const, "A symbolic link is listed, never followed"),
    size: t.Integer({ minimum: 0, description: "Bytes (0 for a folder)" }),
    modifiedAt: timestamp(),
  },
  "One entry of a folder of the app's source tree.",
);

export const FileContentSchema = resource(
  "FileContent",
  {
    path: t.String(),
    size: t.Integer({ minimum: 0 }),
    modifiedAt: timestamp(),
    version: t.String({ description: "SHA-256 of the bytes: send it back as `ifMatch` to write only over this version" }),
    binary: t.Boolean({ description: "True when the file is not UTF-8 text; `content` is then null" }),
    content: t.Nullable(t.String()),
  },
  "A file of the app's source tree and its text.",
);

export const FileChangeSchema = resource(
  "FileChange",
  {
    id: t.String(),
    action: oneOf(FILE_CHANGE_ACTIONS),
    paths: t.Array(t.String(), { description: "The paths changed (for a move: from, then to); the first 100 of a bulk rename" }),
    pathCount: t.Integer({ minimum: 0, description: "How many paths changed in all" }),
    actor: t.Object({ type: t.String({ description: "`user`, `api_key`, `cli`" }), id: t.Nullable(t.String()) }),
    createdAt: timestamp(),
  },
  "A change of the app's source tree through the file system API.",
);

/** One of `values`, or null. */
const oneOfOrNull = (values: readonly string[], description: string) => t.Unsafe<string | null>({ type: ["string", "null"], enum: [...values, null], description });

export const FileVersionSchema = resource(
  "FileVersion",
  { path: t.String(), size: t.Integer({ minimum: 0 }), modifiedAt: timestamp(), version: t.String({ description: "SHA-256 of the bytes" }) },
  "A file as it was saved.",
);

export const FileMoveSchema = resource("FileMove", { from: t.String(), to: t.String() }, "An entry moved from one path to another.");

export const FileDeletionSchema = resource(
  "FileDeletion",
  { path: t.String(), type: oneOf(["file", "dir", "symlink"] as const) },
  "An entry deleted (a folder with everything in it; a link itself, not what it points to).",
);

export const RenamePlanEntrySchema = resource(
  "RenamePlanEntry",
  {
    from: t.String({ description: "The entry's path now, relative to the app's root: its key in `actions`" }),
    to: t.String({ description: "Its path after this step (folders above it still under their current names)" }),
    type: oneOf(["file", "dir"] as const),
    conflict: oneOfOrNull(["exists", "same-target"], "`exists`: the new name is taken by an entry that stays; `same-target`: another entry of the batch took it first; null: none"),
    action: oneOf(["rename", "overwrite", "skip", "fail"] as const, "What applying it does"),
    reason: t.Nullable(t.String({ description: "Why it fails" })),
    result: oneOfOrNull(["renamed", "overwritten", "skipped", "failed"], "What happened (apply); null in a preview"),
  },
  "One entry of a bulk rename's plan, in the order the plan is applied.",
);

export const RenameCountsSchema = resource(
  "RenameCounts",
  {
    planned: t.Integer({ minimum: 0 }),
    conflicts: t.Integer({ minimum: 0 }),
    renamed: t.Integer({ minimum: 0 }),
    overwritten: t.Integer({ minimum: 0 }),
    skipped: t.Integer({ minimum: 0 }),
    failed: t.Integer({ minimum: 0 }),
  },
  "How many entries a bulk rename planned, and (planned or, after apply, done) renamed, overwrote, skipped and failed.",
);

export const fsPathQuery = t.Object({ path: t.Optional(path("Relative to the app's root; empty or absent: the root")) });

export const createFileBody = t.Object({
  path: t.String({ minLength: 1, maxLength: MAX_PATH_LENGTH, description: "Relative to the app's root; missing parent folders are made" }),
  content: t.Optional(t.String({ description: "UTF-8 text (default empty)" })),
});

export const writeFileBody = t.Object({
  path: t.String({ minLength: 1, maxLength: MAX_PATH_LENGTH }),
  content: t.String({ description: "The file's new text, UTF-8" }),
  ifMatch: t.Optional(t.String({ description: "The `version` the edit started from: 409 FILE_CHANGED when the file is no longer that version" })),
});

/** A folder to make, or an entry to delete. */
export const entryBody = t.Object({ path: t.String({ minLength: 1, maxLength: MAX_PATH_LENGTH }) });

export const moveBody = t.Object({
  from: t.String({ minLength: 1, maxLength: MAX_PATH_LENGTH }),
  to: t.String({ minLength: 1, maxLength: MAX_PATH_LENGTH, description: "The entry's new path; 409 FILE_EXISTS when something is there" }),
});

export const historyQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 500, description: "Default 100" })),
});

export const FILE_RESOURCES = [FileEntrySchema, FileContentSchema, FileChangeSchema, FileVersionSchema, FileMoveSchema, FileDeletionSchema, RenamePlanEntrySchema, RenameCountsSchema];
