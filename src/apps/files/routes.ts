// Routes of /api/apps/{appId}/fs: an app's kept source tree, read and edited (./tree.ts does the
// file work inside the tree, ./rename-plan.ts plans bulk renames). Every change is recorded in the
// tree's history and marks the app `filesChangedSinceBuild` until a build reads the tree.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../../http/context";
import { auditActor, authPlugin, type Principal } from "../../http/auth";
import { recordAuditEvent } from "../../audit/service";
import { ok } from "../../http/envelope";
import { formsBody, json, media, ref, responses } from "../../http/responses";
import { appIdParams } from "../model";
import { bulkRenameInput, createFileInput, readFields } from "./bodies";
import { FileHistory } from "./history";
import {
  entryBody,
  FileChangeSchema,
  FileContentSchema,
  FileDeletionSchema,
  FileEntrySchema,
  FileMoveSchema,
  FileVersionSchema,
  fsPathQuery,
  historyQuery,
  moveBody,
  writeFileBody,
} from "./model";
import { AppTree, MAX_TEXT_FILE_BYTES } from "./tree";
import { BulkRenames, RENAME_PLAN_ANSWER, RENAME_ERRORS, RENAME_BODY_DOC } from "./bulk-rename";

const PATH_ERRORS = ["NOT_FOUND", "INVALID_PATH", "SYMLINK_NOT_FOLLOWED"] as const;

export function appFilesRoutes(ctx: ServerContext) {
  const history = new FileHistory(ctx.db);
  const renames = new BulkRenames(ctx);
  /** The app's tree, once the app is the caller's (404 otherwise). */
  const treeOf = (principal: Principal, appId: string) => new AppTree(ctx.storage.sourceDir(ctx.apps.get(principal.workspaceId, appId).id));
  /**
   * Runs a change that may grow the app's tree: each growth is reserved against the disk quota
   * before anything is written (409 QUOTA_EXCEEDED otherwise), and held until `record` has counted
   * it in the tree's size, so that changes made at the same time see each other.
   */
  const growTree = async <T>(principal: Principal, appId: string, change: (tree: AppTree) => Promise<T>, record: (result: T, grownBytes: number) => void): Promise<T> => {
    const releases: (() => void)[] = [];
    let grownBytes = 0;
    const tree = new AppTree(ctx.storage.sourceDir(ctx.apps.get(principal.workspaceId, appId).id), async (bytes) => {
      releases.push(await ctx.apps.reserveDiskGrowth(principal.workspaceId, bytes));
      grownBytes += bytes;
    });
    try {
      const result = await change(tree);
      record(result, grownBytes);
      return result;
    } finally {
      for (const release of releases) release();
    }
  };
  /** Recorded in the history; `deltaBytes`, when known, moves the tree's size for the disk quota. */
  const changed = (principal: Principal, appId: string, action: Parameters<FileHistory["record"]>[1], paths: string[], deltaBytes?: number) => {
    const actor = auditActor(principal);
    history.record(appId, action, paths, { type: actor.type, id: actor.id });
    ctx.apps.sourceChanged(appId, deltaBytes);
  };

  return new Elysia({ prefix: "/api/apps", tags: ["App files"] })
    .use(authPlugin(ctx))
    .get(
      "/:appId/fs/list",
      async ({ principal, params, query }) => {
        const path = query.path ?? "";
        return ok({ path, entries: await treeOf(principal, params.appId).list(path) });
      },
      {
        auth: true,
        params: appIdParams,
        query: fsPathQuery,
        detail: {
          operationId: "listAppFiles",
          responses: responses({ 200: json("The folder's entries", { path: t.String(), entries: t.Array(ref(FileEntrySchema)) }) }, ...PATH_ERRORS, "NOT_A_DIRECTORY", "TOO_MANY_ENTRIES"),
          summary: "List a folder of the app's files",
          description:
            "Answers `entries` of the folder at `path` (default the root): name, path, type (`file`, `dir`, `symlink`), size, " +
            "modifiedAt; folders first, then by name. Symbolic links are listed, never followed: a path through one is 403 " +
            "`SYMLINK_NOT_FOLLOWED`. Paths are relative to the app's root, `/`-separated; `..`, absolute paths, backslashes, " +
            "control characters, percent-encoded separators or dots, and over-long names are 400 `INVALID_PATH`. A folder of " +
            "more than 5,000 entries is 400 `TOO_MANY_ENTRIES`.",
        },
      },
    )
    .get(
      "/:appId/fs/file",
      async ({ principal, params, query }) => ok({ file: await treeOf(principal, params.appId).read(query.path ?? "") }),
      {
        auth: true,
        params: appIdParams,
        query: fsPathQuery,
        detail: {
          operationId: "readAppFile",
          responses: responses({ 200: json("The file", { file: ref(FileContentSchema) }) }, ...PATH_ERRORS, "NOT_A_FILE", "FILE_TOO_LARGE"),
          summary: "Read a file",
          description:
            "Answers `file`: path, size, modifiedAt, `version` (SHA-256 of its bytes, for `ifMatch`), `binary` and `content` " +
            `(the UTF-8 text; null for a binary file). Files over ${MAX_TEXT_FILE_BYTES} bytes are 413 \`FILE_TOO_LARGE\`.`,
        },
      },
    )
    .post(
      "/:appId/fs/file",
      async ({ principal, params, request, set }) => {
        const input = createFileInput(await readFields(request), MAX_TEXT_FILE_BYTES);
        const file = await growTree(principal, params.appId, (tree) => tree.create(input.path, input.content), (made, grownBytes) => {
          changed(principal, params.appId, "create", [made.path], grownBytes);
        });
        set.status = 201;
        return ok({ file });
      },
      {
        auth: true,
        params: appIdParams,
        parse: "none",
        detail: {
          operationId: "createAppFile",
          requestBody: formsBody(t.Object({ path: t.String({ minLength: 1 }), content: t.Optional(t.String()) }), "`path` (required) and `content` (default empty)"),
          responses: responses({ 201: json("Created", { file: ref(FileVersionSchema) }) }, ...PATH_ERRORS, "VALIDATION_FAILED", "INVALID_JSON", "UNSUPPORTED_MEDIA_TYPE", "FILE_EXISTS", "FILE_TOO_LARGE", "NOT_A_DIRECTORY", "QUOTA_EXCEEDED"),
          summary: "Create a file",
          description:
            "Creates the file at `path` with `content` (UTF-8 text, default empty), making missing parent folders; JSON, " +
            "URL-encoded or multipart bodies. Answers 201 with `file` (path, size, modifiedAt, version). 409 `FILE_EXISTS` when " +
            "anything is at `path`; 409 `QUOTA_EXCEEDED`, with nothing made, when the file and the folders made for it would take " +
            "the workspace past PLATFORM_QUOTA_DISK_MB (every file and folder counts at least 4 KiB). " +
            "The change is in GET .../fs/history and takes effect at the next build (POST redeploy).",
        },
      },
    )
    .put(
      "/:appId/fs/file",
      async ({ principal, params, body }) => {
        const ifMatch = body.ifMatch?.replace(/^"|"$/g, "");
        const file = await growTree(principal, params.appId, (tree) => tree.write(body.path, body.content, ifMatch), (saved, grownBytes) => {
          changed(principal, params.appId, "write", [saved.path], grownBytes);
        });
        return ok({ file });
      },
      {
        auth: true,
        params: appIdParams,
        body: writeFileBody,
        detail: {
          operationId: "writeAppFile",
          responses: responses({ 200: json("Saved", { file: ref(FileVersionSchema) }) }, ...PATH_ERRORS, "VALIDATION_FAILED", "FILE_CHANGED", "FILE_TOO_LARGE", "NOT_A_FILE", "QUOTA_EXCEEDED"),
          summary: "Write a file",
          description:
            "Replaces the file's text (its folder must exist), atomically: readers see the old or the new file, never half. With " +
            "`ifMatch` (the `version` the edit started from) a file changed or deleted since is 409 `FILE_CHANGED`, so two " +
            "editors cannot overwrite each other silently. Answers `file` with its new version. 409 `QUOTA_EXCEEDED`, with " +
            "nothing written, when the file's growth (every file counts at least 4 KiB) would take the workspace past PLATFORM_QUOTA_DISK_MB.",
        },
      },
    )
    .post(
      "/:appId/fs/folder",
      async ({ principal, params, body, set }) => {
        const path = await growTree(principal, params.appId, (tree) => tree.mkdir(body.path), (made, grownBytes) => {
          changed(principal, params.appId, "mkdir", [made], grownBytes);
        });
        set.status = 201;
        return ok({ path });
      },
      {
        auth: true,
        params: appIdParams,
        body: entryBody,
        detail: {
          operationId: "createAppFolder",
          responses: responses({ 201: json("Created", { path: t.String() }) }, ...PATH_ERRORS, "VALIDATION_FAILED", "FILE_EXISTS", "QUOTA_EXCEEDED"),
          summary: "Make a folder",
          description:
            "Makes the folder at `path` and its missing parents; 409 `FILE_EXISTS` when anything is there. Every folder counts " +
            "4 KiB against PLATFORM_QUOTA_DISK_MB: 409 `QUOTA_EXCEEDED`, with nothing made, past it.",
        },
      },
    )
    .post(
      "/:appId/fs/move",
      async ({ principal, params, body }) => {
        const moved = await treeOf(principal, params.appId).move(body.from, body.to);
        changed(principal, params.appId, "move", [moved.from, moved.to], 0);
        return ok({ moved });
      },
      {
        auth: true,
        params: appIdParams,
        body: moveBody,
        detail: {
          operationId: "moveAppFile",
          responses: responses({ 200: json("Moved", { moved: ref(FileMoveSchema) }) }, ...PATH_ERRORS, "VALIDATION_FAILED", "FILE_EXISTS", "MOVE_INTO_ITSELF"),
          summary: "Move or rename one entry",
          description:
            "Moves the file or folder `from` to `to` with one rename(2) (the target's folder must exist). 409 `FILE_EXISTS` " +
            "when something is at `to`; 400 `MOVE_INTO_ITSELF` for a folder moved under itself. A change of case only is a move.",
        },
      },
    )
    .post(
      "/:appId/fs/delete",
      async ({ principal, params, body }) => {
        const removed = await treeOf(principal, params.appId).remove(body.path);
        changed(principal, params.appId, "delete", [removed.path]);
        return ok({ deleted: true, entry: removed });
      },
      {
        auth: true,
        params: appIdParams,
        body: entryBody,
        detail: {
          operationId: "deleteAppFile",
          responses: responses({ 200: json("Deleted", { deleted: t.Literal(true), entry: ref(FileDeletionSchema) }) }, ...PATH_ERRORS, "VALIDATION_FAILED"),
          summary: "Delete a file or folder",
          description: "Deletes the entry at `path` (a folder with everything in it; links inside are removed, never followed). The root cannot be deleted (400 `INVALID_PATH`).",
        },
      },
    )
    .get(
      "/:appId/fs/archive",
      ({ principal, params }) => {
        const app = ctx.apps.get(principal.workspaceId, params.appId);
        // The auth plugin audits JSON answers only: a download is recorded here, as it starts.
        recordAuditEvent(ctx.db, { workspaceId: principal.workspaceId, action: "app.files_downloaded", actor: auditActor(principal), target: `${app.name} (${app.id})` });
        return new Response(new AppTree(ctx.storage.sourceDir(app.id)).zip(), {
          headers: { "content-type": "application/zip", "content-disposition": `attachment; filename="${app.name}.zip"`, "cache-control": "no-store" },
        });
      },
      {
        auth: true,
        params: appIdParams,
        detail: {
          operationId: "downloadAppFiles",
          responses: responses({ 200: media("The tree as a ZIP", "application/zip", t.String({ format: "binary" })) }, "NOT_FOUND"),
          summary: "Download the app's files as a ZIP",
          description:
            "Streams the whole source tree as a ZIP (folders, files with their permissions; links left out), as a deploy would " +
            "take it back. Recorded in the audit log (`app.files_downloaded`, who and which app).",
        },
      },
    )
    .get(
      "/:appId/fs/history",
      ({ principal, params, query }) => {
        const app = ctx.apps.get(principal.workspaceId, params.appId);
        return ok({ changes: history.list(app.id, query.limit ?? 100) });
      },
      {
        auth: true,
        params: appIdParams,
        query: historyQuery,
        detail: {
          operationId: "listAppFileChanges",
          responses: responses({ 200: json("Newest first", { changes: t.Array(ref(FileChangeSchema)) }) }, "NOT_FOUND"),
          summary: "History of the app's files",
          description:
            "Answers `changes`, newest first: every change made through the file system API (create, write, mkdir, move, " +
            "delete, bulk-rename) with its paths, who made it and when. Builds (GET .../builds) show which tree each release was built from.",
        },
      },
    )
    .post(
      "/:appId/fs/bulk-rename/preview",
      async ({ principal, params, request }) => {
        const app = ctx.apps.get(principal.workspaceId, params.appId);
        return ok(await renames.preview(app.id, bulkRenameInput(await readFields(request))));
      },
      {
        auth: true,
        params: appIdParams,
        parse: "none",
        detail: {
          operationId: "previewAppBulkRename",
          requestBody: formsBody(RENAME_BODY_DOC, "The bulk rename to plan"),
          responses: responses({ 200: json("The plan; nothing changed", RENAME_PLAN_ANSWER) }, ...PATH_ERRORS, ...RENAME_ERRORS),
          summary: "Preview a bulk rename",
          description: "The plan POST .../bulk-rename/apply would carry out with the same body, without changing anything: every planned entry with its conflict and action, and counts.",
        },
      },
    )
    .post(
      "/:appId/fs/bulk-rename/apply",
      async ({ principal, params, request }) => {
        const app = ctx.apps.get(principal.workspaceId, params.appId);
        const applied = await renames.apply(app.id, bulkRenameInput(await readFields(request)));
        const moved = applied.entries.filter((entry) => entry.result === "renamed" || entry.result === "overwritten");
        if (moved.length) changed(principal, app.id, "bulk-rename", moved.flatMap((entry) => [entry.from, entry.to]));
        return ok(applied);
      },
      {
        auth: true,
        params: appIdParams,
        parse: "none",
        detail: {
          operationId: "applyAppBulkRename",
          requestBody: formsBody(RENAME_BODY_DOC, "The bulk rename to carry out"),
          responses: responses({ 200: json("Applied: every entry with its result", RENAME_PLAN_ANSWER) }, ...PATH_ERRORS, ...RENAME_ERRORS),
          summary: "Apply a bulk rename",
          description: "Renames file and/or folder names under `basePath`, one entry at a time with rename(2), as the plan says; see the rename plan's description for the rules.",
        },
      },
    );
}
