// Bulk rename of an app's tree: the tree under `basePath` walked (./tree.ts), the renames planned
// (./rename-plan.ts, pure), and for apply carried out in the plan's order, one rename(2) each, so
// a crash in the middle leaves every entry at its old or its new name.
import { t } from "elysia";
import type { ServerContext } from "../../http/context";
import { oneOf, ref } from "../../http/responses";
import type { BulkRenameInput } from "./bodies";
import { RENAME_ACTIONS, RenameCountsSchema, RenamePlanEntrySchema } from "./model";
import { DEFAULT_RENAME_LIMITS, planRenames, Renamer, type PlannedRename, type RenameCounts } from "./rename-plan";
import { AppTree } from "./tree";

export type RenameResult = "renamed" | "overwritten" | "skipped" | "failed";

export interface RenameEntry extends PlannedRename {
  /** What happened (apply); null in a preview. */
  result: RenameResult | null;
}

export const RENAME_PLAN_ANSWER = {
  entries: t.Array(ref(RenamePlanEntrySchema), { description: "In the order they are (or would be) applied" }),
  counts: ref(RenameCountsSchema),
};

export const RENAME_ERRORS = ["VALIDATION_FAILED", "INVALID_JSON", "UNSUPPORTED_MEDIA_TYPE", "INVALID_REGEX", "TOO_MANY_ENTRIES", "TOO_MANY_RENAMES", "RENAME_TOO_LARGE", "NOT_A_DIRECTORY"] as const;

const action = oneOf(RENAME_ACTIONS);
export const RENAME_BODY_DOC = t.Object(
  {
    basePath: t.Optional(t.String({ maxLength: 1024, description: "The folder whose entries (at any depth) are renamed; default the root, never renamed itself" })),
    find: t.String({ minLength: 1, maxLength: 200, description: "Text in a name (every occurrence is replaced), or an RE2 pattern when `useRegex`" }),
    replace: t.Optional(t.String({ maxLength: 200, description: "Default empty; with `useRegex` it may use $1, $<name>, $& and $$" })),
    useRegex: t.Optional(t.Boolean({ description: "Default false. RE2 syntax, matched in linear time; an invalid pattern is 400 INVALID_REGEX" })),
    includeFiles: t.Optional(t.Boolean({ description: "Default true" })),
    includeDirs: t.Optional(t.Boolean({ description: "Default false" })),
    defaultAction: t.Optional(action),
    actions: t.Optional(
      t.Record(t.String(), action, {
        description:
          "Per entry, how its conflict is settled. Keys are the entry's current path relative to the app's root (its `from` in " +
          "the plan, e.g. `src/old.js`), not relative to basePath; keys that name no planned entry are ignored. In a form: JSON text.",
      }),
    ),
  },
  {
    description:
      "Only names (the last segment) are renamed, never contents. Conflicts: the new name exists, or two renames land on one " +
      "name; settled by `actions[from]`, else `defaultAction` (default skip): `skip` leaves both, `overwrite` replaces a file, " +
      "link or empty folder (never a folder with content, nor an entry the batch renames), `rename` takes the first free " +
      "`name (1).ext`, `name (2).ext`... (folders and dotfiles: `name (1)`). A swap (a -> b, b -> a) is a conflict for the " +
      "first in name order: no temporary names are used, so a crash leaves every entry at its old or its new name. Folders' " +
      "contents come before the folders. Bounds, checked as the plan is made: 50,000 entries under basePath (400 " +
      "TOO_MANY_ENTRIES), 10,000 renames (422 TOO_MANY_RENAMES), new names of at most 255 bytes and 16 MiB of paths in " +
      "the plan (400 RENAME_TOO_LARGE), each refused at the first entry over.",
  },
);

export class BulkRenames {
  constructor(private readonly ctx: Pick<ServerContext, "storage">) {}

  private async plan(appId: string, input: BulkRenameInput) {
    const tree = new AppTree(this.ctx.storage.sourceDir(appId));
    // The names are made (and their limits checked) as the tree is walked; the plan reuses them.
    const renamer = new Renamer(input, DEFAULT_RENAME_LIMITS);
    const walked = await tree.walk(input.basePath, DEFAULT_RENAME_LIMITS.maxEntries, renamer.see);
    return { tree, plan: planRenames(walked, input, DEFAULT_RENAME_LIMITS, renamer) };
  }

  async preview(appId: string, input: BulkRenameInput): Promise<{ entries: RenameEntry[]; counts: RenameCounts }> {
    const { plan } = await this.plan(appId, input);
    return { entries: plan.entries.map((entry) => ({ ...entry, result: null })), counts: plan.counts };
  }

  /** Carries out the plan in its order; skipped and failed entries say so, the others what rename(2) did. */
  async apply(appId: string, input: BulkRenameInput): Promise<{ entries: RenameEntry[]; counts: RenameCounts }> {
    const { tree, plan } = await this.plan(appId, input);
    const applied = plan.entries.filter((entry) => entry.action === "rename" || entry.action === "overwrite");
    const outcomes = await tree.applyRenames(applied.map((entry) => ({ from: entry.from, to: entry.to, overwrite: entry.action === "overwrite" })));
    const outcomeOf = new Map(applied.map((entry, index) => [entry, outcomes[index]!]));
    const entries = plan.entries.map((entry): RenameEntry => {
      const outcome = outcomeOf.get(entry);
      if (!outcome) return { ...entry, result: entry.action === "skip" ? "skipped" : "failed" };
      return { ...entry, result: outcome.result, reason: outcome.result === "failed" ? outcome.reason : entry.reason };
    });
    const count = (result: RenameResult) => entries.filter((entry) => entry.result === result).length;
    const counts = { ...plan.counts, renamed: count("renamed"), overwritten: count("overwritten"), skipped: count("skipped"), failed: count("failed") };
    return { entries, counts };
  }
}
