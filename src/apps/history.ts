// GET /api/apps/{appId}/history: one timeline of what changed the app, its builds and the edits of
// its source tree through the file system API, newest first, so a person sees which edits each
// build was made from.
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { json, oneOf, ref, resource, responses, timestamp } from "../http/responses";
import { FileChangeSchema } from "./files/model";
import { FileHistory } from "./files/history";
import { BuildSchema, appIdParams } from "./model";

export const AppHistoryEventSchema = resource(
  "AppHistoryEvent",
  {
    kind: oneOf(["build", "files"] as const, "`build`: a build began (see `build`); `files`: the source tree was edited (see `change`)"),
    at: timestamp("When the build began, or when the edit was made"),
    build: t.Nullable(ref(BuildSchema)),
    change: t.Nullable(ref(FileChangeSchema)),
  },
  "One event of an app's history.",
);

const HISTORY_LENGTH = 100;

export function appHistoryRoutes(ctx: ServerContext) {
  const fileHistory = new FileHistory(ctx.db);
  return new Elysia({ prefix: "/api/apps", tags: ["Apps"] }).use(authPlugin(ctx)).get(
    "/:appId/history",
    ({ principal, params }) => {
      const builds = ctx.apps.builds.list(principal.workspaceId, params.appId);
      const changes = fileHistory.list(params.appId, HISTORY_LENGTH);
      const events = [
        ...builds.map((build) => ({ kind: "build" as const, at: build.startedAt, build, change: null })),
        ...changes.map((change) => ({ kind: "files" as const, at: change.createdAt, build: null, change })),
      ]
        .sort((a, b) => b.at.localeCompare(a.at))
        .slice(0, HISTORY_LENGTH);
      return ok({ events });
    },
    {
      auth: true,
      params: appIdParams,
      detail: {
        operationId: "getAppHistory",
        responses: responses({ 200: json("Newest first", { events: t.Array(ref(AppHistoryEventSchema)) }) }, "NOT_FOUND"),
        summary: "An app's history",
        description:
          `Answers \`events\`, newest first (${HISTORY_LENGTH} at most): each build (\`kind: build\`, the build as GET .../builds ` +
          "shows it) and each change of the source tree through /fs (`kind: files`: action, paths, actor), by time, so the " +
          "edits each build was made from come right before it.",
      },
    },
  );
}
