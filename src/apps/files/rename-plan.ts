// The bulk-rename planner: a listing of the tree under `basePath` in, the ordered list of
// renames out; it touches no file system, so preview and apply share it.
//
// What is renamed: entries strictly under `basePath` (files when `includeFiles`, folders when
// `includeDirs`) whose name (the last segment) changes when every occurrence of `find` in it is
// replaced: as plain text, or as an RE2 expression when `useRegex` (re2js: linear time, so no
// pattern can burn the CPU; `replace` may use $1, $<name>, $& and $$ as in String.replace).
//
// Order: entries are listed so that applying them one after the other with rename(2) works.
//  - Folders' contents come before the folders: the deepest parent folder first. So `from` and
//    `to` always spell ancestors with their current names, and `from` is the key of `actions`.
//  - Within one folder, a rename into a name another entry vacates comes after that entry moved
//    away (a -> b after b -> c), so it is no conflict.
//
// Conflicts (renames never leave their folder, so they are settled folder by folder):
//  - "exists": the new name is taken by an entry that stays (one this batch does not rename, or
//    one whose own rename is skipped or failed), or by an entry caught in a cycle of renames
//    (a swap a -> b, b -> a): with no temporary names (a crash must leave every entry at its old
//    or its new name) one entry of the cycle, the first in name order, meets its target taken.
//  - "same-target": another entry of the batch was renamed to that name first (name order).
//  Case-only renames (a.txt -> A.txt) are plain renames: names are compared case-sensitively.
//
// Settling, by `actions[from]`, else `defaultAction`:
//  - skip: the entry stays.
//  - overwrite: the entry replaces a file, a link or an empty folder that this batch does not
//    rename; a folder with anything in it, or an entry the batch renames (same target, cycle),
//    is never replaced: the entry fails with the reason.
//  - rename: the first free "name (1).ext", "name (2).ext"... ("ext" from the last dot, so
//    a.tar.gz -> "a.tar (1).gz"; dotfiles and folders get it at the end: ".env (1)", "src (1)").
//    Free: not taken at that point of the plan. Renames into free names run before any conflict
//    is settled, so a numbered name is never one another entry is about to be renamed to.
// A new name that is empty, "." or "..", holds a "/", or that ./paths.ts would refuse (backslash,
// control character...) fails with the reason.
//
// Bounds, checked as each new name is made (so a request whose names would take gigabytes is
// refused at the first one over): at most `maxRenames` names changed (422 TOO_MANY_RENAMES), each
// new name at most 255 bytes and the paths of the plan at most `maxPlanBytes` (400 RENAME_TOO_LARGE).
import { RE2JS, RE2JSException } from "re2js";
import { ApiError } from "../../http/errors";
import { shown } from "../zip-directory";
import type { BulkRenameInput, RenameAction } from "./bodies";
import { pathSegments } from "./paths";
import type { WalkedEntry } from "./tree";

export interface RenameLimits {
  /** Most entries under `basePath` one request may look at (TOO_MANY_ENTRIES past it). */
  maxEntries: number;
  /** Most names one request may change (TOO_MANY_RENAMES past it). */
  maxRenames: number;
  /** Most bytes of the paths the renames go from and to, summed: what a plan holds (RENAME_TOO_LARGE past it). */
  maxPlanBytes: number;
}

export const DEFAULT_RENAME_LIMITS: RenameLimits = { maxEntries: 50_000, maxRenames: 10_000, maxPlanBytes: 16 * 1024 * 1024 };

export type RenameConflict = null | "exists" | "same-target";

/** What applying the entry does: rename (to `to`, which is free by then), overwrite, or nothing. */
export type PlannedAction = "rename" | "overwrite" | "skip" | "fail";

export interface PlannedRename {
  /** The entry's path now, relative to the app root: also its key in `actions`. */
  from: string;
  /** Its path after this step (ancestors still under their current names). */
  to: string;
  type: WalkedEntry["type"];
  conflict: RenameConflict;
  action: PlannedAction;
  /** Why the entry fails (action "fail"); null otherwise. */
  reason: string | null;
}

export interface RenameCounts {
  planned: number;
  conflicts: number;
  renamed: number;
  overwritten: number;
  skipped: number;
  failed: number;
}

export interface RenamePlan {
  entries: PlannedRename[];
  counts: RenameCounts;
}

/** `renamer`: the one the walk of the tree made the names with (Renamer.see), so that they are not made again. */
export function planRenames(
  entries: WalkedEntry[],
  request: BulkRenameInput,
  limits: RenameLimits = DEFAULT_RENAME_LIMITS,
  renamer = new Renamer(request, limits),
): RenamePlan {
  const basePath = request.basePath.replace(/^\/+|\/+$/g, "");
  const folders = foldersUnder(basePath, entries, limits.maxEntries);
  const candidates = [...folders].map(([parent, children]) => ({ parent, children, moving: renamedChildren(parent, children, renamer) }));
  const planned = candidates
    .filter((folder) => folder.moving.length > 0)
    .sort((a, b) => depth(b.parent) - depth(a.parent) || compareNames(a.parent, b.parent))
    .flatMap((folder) => new FolderPlan(folder.parent, folder.children, request).plan(folder.moving));
  return { entries: planned, counts: countsOf(planned) };
}

// ---- names ----

type NameRewrite = (name: string) => string;

function nameRewriter(request: BulkRenameInput): NameRewrite {
  if (!request.useRegex) return (name) => name.split(request.find).join(request.replace);
  const pattern = compilePattern(request.find);
  return (name) => pattern.matcher(name).replaceAll(request.replace);
}

function compilePattern(find: string): RE2JS {
  try {
    return RE2JS.compile(find);
  } catch (error) {
    if (error instanceof RE2JSException) throw new ApiError("INVALID_REGEX", `find is not a valid regular expression: ${error.message}`);
    throw error;
  }
}

function joinPath(parent: string, name: string): string {
  return parent === "" ? name : `${parent}/${name}`;
}

function depth(path: string): number {
  return path === "" ? 0 : path.split("/").length;
}

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Why `name` cannot be given to an entry of `parent`, or null when it can. */
function invalidNameReason(parent: string, name: string): string | null {
  if (name === "" || name === "." || name === "..") return `the new name would be ${JSON.stringify(name)}`;
  if (name.includes("/")) return "the new name would contain a /";
  try {
    pathSegments(joinPath(parent, name));
    return null;
  } catch (error) {
    if (error instanceof ApiError) return error.message;
    throw error;
  }
}

const MAX_NAME_BYTES = 255;

/** [stem, ext] for numbering: files split at the last dot that does not start the name, folders never. */
function splitExtension(name: string, type: WalkedEntry["type"]): [string, string] {
  const dot = name.lastIndexOf(".");
  if (type === "dir" || dot <= 0 || dot === name.length - 1) return [name, ""];
  return [name.slice(0, dot), name.slice(dot)];
}

// "stem (n)ext": the shape of a name numbering hands out.
const NUMBERED_NAME = /^(.*) \(([1-9][0-9]*)\)((?:\.[^.]+)?)$/;

// ---- the tree ----

interface Child {
  name: string;
  type: WalkedEntry["type"];
  /** A folder with nothing in it (the only kind of folder overwrite may replace). */
  empty: boolean;
}

/** Children by parent folder, for every folder under `basePath` (itself included). */
function foldersUnder(basePath: string, entries: WalkedEntry[], maxEntries: number): Map<string, Child[]> {
  const prefix = basePath === "" ? "" : `${basePath}/`;
  const types = new Map<string, WalkedEntry["type"]>();
  for (const entry of entries) {
    if (entry.path === "" || !entry.path.startsWith(prefix)) continue;
    types.set(entry.path, entry.type);
    if (types.size > maxEntries) {
      throw new ApiError("TOO_MANY_ENTRIES", `${shown(basePath || "/")} holds more than ${maxEntries} files and folders; choose a smaller base folder`);
    }
  }
  const folders = new Map<string, Child[]>();
  for (const [path, type] of types) {
    const slash = path.lastIndexOf("/");
    const parent = slash < 0 ? "" : path.slice(0, slash);
    const siblings = folders.get(parent) ?? [];
    siblings.push({ name: path.slice(slash + 1), type, empty: type === "dir" });
    folders.set(parent, siblings);
  }
  for (const [parent, children] of folders) {
    for (const child of children) child.empty &&= !folders.has(joinPath(parent, child.name));
  }
  return folders;
}

interface Candidate {
  child: Child;
  /** The name the replacement gives it. */
  target: string;
  state: "pending" | "moved" | "stayed";
}

/**
 * New names, made one at a time with the plan's limits checked as each is made, so that a request
 * whose names would take gigabytes is refused at the first one over, having held one of them.
 * Each entry's name is made once: as the tree is walked (`see`, before any plan is made, so the
 * walk of a request over the limits stops at the first entry over), then read by the plan.
 */
export class Renamer {
  private readonly rewrite: NameRewrite;
  private renames = 0;
  private bytes = 0;
  /** The new name (null: unchanged) of each included entry by its path. */
  private readonly made = new Map<string, string | null>();

  constructor(
    private readonly request: BulkRenameInput,
    private readonly limits: RenameLimits,
  ) {
    this.rewrite = nameRewriter(request);
  }

  /** For the walk of the tree: makes the entry's new name as it is read. */
  readonly see = (entry: WalkedEntry): void => {
    const slash = entry.path.lastIndexOf("/");
    this.targetOf(slash < 0 ? "" : entry.path.slice(0, slash), entry.path.slice(slash + 1), entry.type);
  };

  /** The entry's new name; null when it is not renamed (not included, or unchanged). Throws at the first limit passed. */
  targetOf(parent: string, name: string, type: WalkedEntry["type"]): string | null {
    if (!(type === "file" ? this.request.includeFiles : this.request.includeDirs)) return null;
    const from = joinPath(parent, name);
    const known = this.made.get(from);
    if (known !== undefined) return known;
    const target = this.newName(from, parent, name);
    this.made.set(from, target);
    return target;
  }

  private newName(from: string, parent: string, name: string): string | null {
    const target = this.rewrite(name);
    if (target === name) return null;
    if (++this.renames > this.limits.maxRenames) {
      throw new ApiError("TOO_MANY_RENAMES", `This would change more than ${this.limits.maxRenames} names; at most ${this.limits.maxRenames} can be changed at once. Narrow find or basePath`);
    }
    const targetBytes = Buffer.byteLength(target);
    if (targetBytes > MAX_NAME_BYTES) {
      throw new ApiError("RENAME_TOO_LARGE", `The new name of ${shown(from)} would be ${targetBytes} bytes; a name is at most ${MAX_NAME_BYTES} bytes. Nothing was renamed`);
    }
    this.bytes += Buffer.byteLength(from) + Buffer.byteLength(parent) + 1 + targetBytes;
    if (this.bytes > this.limits.maxPlanBytes) {
      throw new ApiError("RENAME_TOO_LARGE", `The renames' paths would take more than ${this.limits.maxPlanBytes} bytes; narrow find or basePath. Nothing was renamed`);
    }
    return target;
  }
}

function renamedChildren(parent: string, children: Child[], renamer: Renamer): Candidate[] {
  const moving: Candidate[] = [];
  for (const child of children) {
    const target = renamer.targetOf(parent, child.name, child.type);
    if (target !== null) moving.push({ child, target, state: "pending" });
  }
  return moving.sort((a, b) => compareNames(a.child.name, b.child.name));
}

// ---- one folder ----

/** Who holds a name at a point of the plan: an entry the batch does not rename, or a candidate. */
interface Holder {
  child: Child;
  candidate: Candidate | null;
}

/**
 * Simulates one folder's renames in the order they will run: any rename whose target is free
 * goes first; when none is, one conflict is settled (first those whose target is held for good,
 * then one entry of a cycle), which frees or fixes a name, and so on until every entry is done.
 */
class FolderPlan {
  /** Name -> who holds it at the current point of the plan. */
  private readonly holders = new Map<string, Holder>();
  /** Name -> candidates whose target it is. */
  private readonly waiting = new Map<string, Candidate[]>();
  /** Per "stem/ext": every number below it is taken, so numbering starts there. */
  private readonly nextNumber = new Map<string, number>();
  private readonly ready: Candidate[] = [];
  private readonly blocked: Candidate[] = [];
  private readonly steps: PlannedRename[] = [];
  /** Candidates before this index (in name order) are done. */
  private firstPending = 0;

  constructor(
    private readonly parent: string,
    children: Child[],
    private readonly request: BulkRenameInput,
  ) {
    for (const child of children) this.holders.set(child.name, { child, candidate: null });
  }

  plan(candidates: Candidate[]): PlannedRename[] {
    for (const candidate of candidates) this.enlist(candidate);
    for (const candidate of candidates) {
      const reason = invalidNameReason(this.parent, candidate.target);
      if (reason) this.stay(candidate, null, "fail", reason);
    }
    for (const candidate of candidates) if (candidate.state === "pending") this.route(candidate);
    let next: Candidate | undefined;
    while ((next = this.nextPending(this.ready) ?? this.nextPending(this.blocked) ?? this.cycleEntry(candidates))) {
      if (this.isFree(next.target)) this.move(next, next.target, null, "rename");
      else this.settle(next);
    }
    return this.steps;
  }

  private enlist(candidate: Candidate): void {
    this.holders.get(candidate.child.name)!.candidate = candidate;
    const waiting = this.waiting.get(candidate.target) ?? [];
    waiting.push(candidate);
    this.waiting.set(candidate.target, waiting);
  }

  /** Queues a pending candidate by what holds its target: nothing (ready), an entry that stays (blocked), or a pending candidate (waits for it). */
  private route(candidate: Candidate): void {
    const holder = this.holders.get(candidate.target);
    if (!holder) this.ready.push(candidate);
    else if (holder.candidate?.state !== "pending") this.blocked.push(candidate);
  }

  private nextPending(queue: Candidate[]): Candidate | undefined {
    while (queue.length > 0) {
      const candidate = queue.shift()!;
      if (candidate.state === "pending") return candidate;
    }
    return undefined;
  }

  /** With nothing ready or blocked, every pending candidate waits on another: the first in name order of a cycle. */
  private cycleEntry(candidates: Candidate[]): Candidate | undefined {
    while (this.firstPending < candidates.length && candidates[this.firstPending]!.state !== "pending") this.firstPending++;
    const start = candidates[this.firstPending];
    if (!start) return undefined;
    const seen = new Set<Candidate>();
    let current = start;
    while (!seen.has(current)) {
      seen.add(current);
      current = this.holders.get(current.target)!.candidate!;
    }
    let first = current;
    for (let member = this.holderOf(current); member !== current; member = this.holderOf(member)) {
      if (compareNames(member.child.name, first.child.name) < 0) first = member;
    }
    return first;
  }

  private holderOf(candidate: Candidate): Candidate {
    return this.holders.get(candidate.target)!.candidate!;
  }

  private isFree(name: string): boolean {
    return !this.holders.has(name);
  }

  private settle(candidate: Candidate): void {
    const holder = this.holders.get(candidate.target)!;
    const conflict = holder.candidate?.state === "moved" ? "same-target" : "exists";
    const action = this.actionFor(candidate);
    if (action === "skip") return this.stay(candidate, conflict, "skip", null);
    if (action === "rename") {
      const free = this.numberedName(candidate);
      if (free) return this.move(candidate, free, conflict, "rename");
      return this.stay(candidate, conflict, "fail", `no free numbered name within ${MAX_NAME_BYTES} bytes`);
    }
    const refusal = overwriteRefusal(holder, this.pathOf(candidate.target));
    if (refusal) return this.stay(candidate, conflict, "fail", refusal);
    this.move(candidate, candidate.target, conflict, "overwrite");
  }

  /** `actions` by the entry's path (own keys only: a key like "constructor" is not inherited), else `defaultAction`. */
  private actionFor(candidate: Candidate): RenameAction {
    const from = this.pathOf(candidate.child.name);
    return Object.hasOwn(this.request.actions, from) ? this.request.actions[from]! : this.request.defaultAction;
  }

  private move(candidate: Candidate, name: string, conflict: RenameConflict, action: "rename" | "overwrite"): void {
    const from = candidate.child.name;
    const holder = this.holders.get(from)!;
    this.holders.delete(from);
    this.holders.set(name, holder);
    candidate.state = "moved";
    this.record(candidate, name, conflict, action, null);
    this.forgetNumber(from);
    for (const waiter of this.waiting.get(from) ?? []) this.ready.push(waiter);
  }

  private stay(candidate: Candidate, conflict: RenameConflict, action: "skip" | "fail", reason: string | null): void {
    candidate.state = "stayed";
    this.record(candidate, candidate.target, conflict, action, reason);
    for (const waiter of this.waiting.get(candidate.child.name) ?? []) this.blocked.push(waiter);
  }

  private record(candidate: Candidate, name: string, conflict: RenameConflict, action: PlannedAction, reason: string | null): void {
    const { child } = candidate;
    this.steps.push({ from: this.pathOf(child.name), to: this.pathOf(name), type: child.type, conflict, action, reason });
  }

  private pathOf(name: string): string {
    return joinPath(this.parent, name);
  }

  private numberedName(candidate: Candidate): string | null {
    const [stem, ext] = splitExtension(candidate.target, candidate.child.type);
    const key = `${stem}/${ext}`;
    for (let number = this.nextNumber.get(key) ?? 1; ; number++) {
      const name = `${stem} (${number})${ext}`;
      if (Buffer.byteLength(name) > MAX_NAME_BYTES) return null;
      if (this.isFree(name)) {
        this.nextNumber.set(key, number + 1);
        return name;
      }
    }
  }

  /** A numbered name that is vacated is free again: numbering of its stem must look from there. */
  private forgetNumber(name: string): void {
    const numbered = NUMBERED_NAME.exec(name);
    if (!numbered) return;
    const key = `${numbered[1]}/${numbered[3]}`;
    const number = Number(numbered[2]);
    if (number < (this.nextNumber.get(key) ?? 1)) this.nextNumber.set(key, number);
  }
}

function overwriteRefusal(holder: Holder, targetPath: string): string | null {
  const shownTarget = shown(targetPath);
  if (holder.candidate?.state === "moved") return `another entry of this batch is renamed to ${shownTarget}; choose rename or skip`;
  if (holder.candidate) return `${shownTarget} is an entry this batch renames; it is not overwritten (choose rename or skip)`;
  if (holder.child.type === "dir" && !holder.child.empty) return `${shownTarget} is a folder that is not empty; it is not overwritten`;
  return null;
}

function countsOf(planned: PlannedRename[]): RenameCounts {
  const count = (action: PlannedAction) => planned.filter((entry) => entry.action === action).length;
  return {
    planned: planned.length,
    conflicts: planned.filter((entry) => entry.conflict !== null).length,
    renamed: count("rename"),
    overwritten: count("overwrite"),
    skipped: count("skip"),
    failed: count("fail"),
  };
}
