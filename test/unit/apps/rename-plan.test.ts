// The bulk-rename planner: which names change, how conflicts are found and settled, and that the
// plan, applied step by step with rename(2) semantics, leaves the tree the user asked for.
import { describe, expect, test } from "bun:test";
import type { BulkRenameInput } from "../../../src/apps/files/bodies";
import { planRenames, Renamer, type PlannedRename, type RenameLimits } from "../../../src/apps/files/rename-plan";
import type { WalkedEntry } from "../../../src/apps/files/tree";
import { ApiError, type ErrorCode } from "../../../src/http/errors";

/** A listing from paths; a folder ends with "/". */
function tree(...paths: string[]): WalkedEntry[] {
  return paths.map((path) => (path.endsWith("/") ? { path: path.slice(0, -1), type: "dir" } : { path, type: "file" }));
}

function request(overrides: Partial<BulkRenameInput>): BulkRenameInput {
  return { basePath: "", find: "x", replace: "", useRegex: false, includeFiles: true, includeDirs: false, defaultAction: "skip", actions: {}, ...overrides };
}

/** One line per planned entry, in plan order. */
function steps(entries: PlannedRename[]): string[] {
  return entries.map(({ from, to, action, conflict }) => `${from} -> ${to} ${action}${conflict ? ` (${conflict})` : ""}`);
}

function plannedSteps(listing: WalkedEntry[], overrides: Partial<BulkRenameInput>): string[] {
  return steps(planRenames(listing, request(overrides)).entries);
}

/** Applies the plan in order as rename(2) would (a free target, or overwrite of a file or an empty folder): the final listing. */
function applied(listing: WalkedEntry[], entries: PlannedRename[]): string[] {
  const types = new Map(listing.map((entry) => [entry.path, entry.type]));
  const inside = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);
  for (const step of entries) {
    if (step.action === "skip" || step.action === "fail") continue;
    expect(types.get(step.from)).toBe(step.type);
    const held = types.get(step.to);
    if (held !== undefined) {
      expect(step.action).toBe("overwrite");
      expect([...types.keys()].filter((path) => inside(path, step.to))).toEqual([step.to]);
      types.delete(step.to);
    }
    for (const [path, type] of [...types]) {
      if (!inside(path, step.from)) continue;
      types.delete(path);
      types.set(step.to + path.slice(step.from.length), type);
    }
  }
  return [...types].map(([path, type]) => (type === "dir" ? `${path}/` : path)).sort();
}

function finalTree(listing: WalkedEntry[], overrides: Partial<BulkRenameInput>): string[] {
  return applied(listing, planRenames(listing, request(overrides)).entries);
}

function refusal(run: () => unknown, code: ErrorCode, status: number): ApiError {
  const error = (() => {
    try {
      run();
    } catch (caught) {
      return caught;
    }
  })();
  expect(error).toBeInstanceOf(ApiError);
  expect(error).toMatchObject({ code, status });
  return error as ApiError;
}

describe("which names change", () => {
  test("every occurrence of find in the name is replaced, as plain text", () => {
    expect(plannedSteps(tree("foo-foo.txt", "a.foo.b", "bar.txt"), { find: "foo", replace: "x" })).toEqual([
      "a.foo.b -> a.x.b rename",
      "foo-foo.txt -> x-x.txt rename",
    ]);
    // Plain text: regex characters and $ in replace mean themselves.
    expect(plannedSteps(tree("a.b", "axb"), { find: ".", replace: "$1" })).toEqual(["a.b -> a$1b rename"]);
  });

  test("only the last segment is matched: parent folders in the path and unchanged names are left out", () => {
    const listing = tree("foo/", "foo/readme.md", "foo/foo.md", "docs/", "docs/guide.md");
    expect(plannedSteps(listing, { find: "foo", replace: "bar" })).toEqual(["foo/foo.md -> foo/bar.md rename"]);
    expect(plannedSteps(listing, { find: "nothing", replace: "bar" })).toEqual([]);
    expect(plannedSteps(listing, { find: "foo", replace: "foo" })).toEqual([]);
  });

  test("only entries under basePath are renamed, never basePath itself", () => {
    const listing = tree("foo/", "foo/foo.txt", "foo/foo/", "foo.txt", "other/", "other/foo.txt");
    expect(plannedSteps(listing, { basePath: "foo", find: "foo", replace: "bar", includeDirs: true })).toEqual([
      "foo/foo -> foo/bar rename",
      "foo/foo.txt -> foo/bar.txt rename",
    ]);
    expect(plannedSteps(listing, { basePath: "other/", find: "foo", replace: "bar" })).toEqual(["other/foo.txt -> other/bar.txt rename"]);
  });

  test.each([
    { includeFiles: true, includeDirs: false, expected: ["src/x.ts -> src/y.ts rename"] },
    { includeFiles: false, includeDirs: true, expected: ["x -> y rename"] },
    { includeFiles: true, includeDirs: true, expected: ["src/x.ts -> src/y.ts rename", "x -> y rename"] },
    { includeFiles: false, includeDirs: false, expected: [] },
  ])("includeFiles $includeFiles, includeDirs $includeDirs", ({ includeFiles, includeDirs, expected }) => {
    const listing = tree("x/", "src/", "src/x.ts");
    expect(plannedSteps(listing, { find: "x", replace: "y", includeFiles, includeDirs })).toEqual([...expected]);
  });

  test.each([
    { find: "^(\\w+)\\.(\\w+)$", replace: "$2.$1", from: "report.txt", to: "txt.report" },
    { find: "(?P<year>\\d{4})-(?P<month>\\d{2})", replace: "$<month>.$<year>", from: "log-2024-05.txt", to: "log-05.2024.txt" },
    { find: "\\d+", replace: "N", from: "a1b22c333.txt", to: "aNbNcN.txt" },
    { find: "(?i)README", replace: "index", from: "Readme.md", to: "index.md" },
    { find: "^", replace: "old-", from: "a.txt", to: "old-a.txt" },
    { find: "\\.txt$", replace: "$$.md", from: "a.txt", to: "a$.md" },
  ])("regex $find with $replace: $from -> $to", ({ find, replace, from, to }) => {
    expect(plannedSteps(tree(from), { find, replace, useRegex: true })).toEqual([`${from} -> ${to} rename`]);
  });

  test("a regex is matched against the name only: ^ is the start of the name, not of the path", () => {
    expect(plannedSteps(tree("src/", "src/src.ts", "lib/", "lib/src.ts"), { find: "^src", replace: "app", useRegex: true })).toEqual([
      "lib/src.ts -> lib/app.ts rename",
      "src/src.ts -> src/app.ts rename",
    ]);
  });

  test("an invalid regex is refused with 400 INVALID_REGEX and the engine's reason", () => {
    const error = refusal(() => planRenames(tree("a"), request({ find: "(a", useRegex: true })), "INVALID_REGEX", 400);
    expect(error.message).toContain("missing closing )");
    refusal(() => planRenames([], request({ find: "a**", useRegex: true })), "INVALID_REGEX", 400);
    // Backreferences would need backtracking: RE2 has none.
    refusal(() => planRenames([], request({ find: "(a)\\1", useRegex: true })), "INVALID_REGEX", 400);
  });

  test("a catastrophic pattern on long names finishes fast (linear-time engine)", () => {
    const listing = Array.from({ length: 2000 }, (_, index) => ({ path: `${index}${"a".repeat(240)}!`, type: "file" as const }));
    const started = performance.now();
    const plan = planRenames(listing, request({ find: "(a+)+$", replace: "b", useRegex: true }));
    expect(performance.now() - started).toBeLessThan(2000);
    expect(plan.entries).toEqual([]); // the names end with "!": no match, nothing to rename
  });

  test.each([
    { label: "empty", find: "abc", replace: "", reason: '""' },
    { label: ".", find: "abc", replace: ".", reason: '"."' },
    { label: "..", find: "abc", replace: "..", reason: '".."' },
    { label: "with /", find: "b", replace: "/", reason: "/" },
    { label: "with a backslash", find: "b", replace: "\\", reason: "backslash" },
    { label: "with NUL", find: "b", replace: "\u0000", reason: "control character" },
    { label: "with a newline", find: "b", replace: "\n", reason: "control character" },
  ])("a new name $label is a failed entry, not a refused request", ({ find, replace, reason }) => {
    const name = "abc";
    const plan = planRenames(tree(name, "other"), request({ find, replace }));
    const failed = plan.entries.find((entry) => entry.from === name)!;
    expect(failed.action).toBe("fail");
    expect(failed.reason).toContain(reason);
    expect(plan.counts.failed).toBe(1);
    expect(applied(tree(name), plan.entries)).toEqual([name]);
  });

  test("a new name over 255 bytes refuses the request with 400 RENAME_TOO_LARGE, naming the entry", () => {
    const error = refusal(() => planRenames(tree("abc", "other"), request({ find: "b", replace: "é".repeat(127) })), "RENAME_TOO_LARGE", 400);
    expect(error.message).toContain('"abc" would be 256 bytes; a name is at most 255 bytes');
  });

  test("a name of exactly 255 bytes is fine", () => {
    const plan = planRenames(tree("abc"), request({ find: "b", replace: "é".repeat(126) }));
    expect(plan.entries[0]!.action).toBe("rename");
  });
});

describe("order of the plan", () => {
  test("a folder's contents are renamed before the folder, paths spelled with the names they have then", () => {
    const listing = tree("foo/", "foo/foo.txt", "foo/foo/", "foo/foo/foo.txt", "foo/keep.txt");
    const overrides = { find: "foo", replace: "bar", includeDirs: true };
    expect(plannedSteps(listing, overrides)).toEqual([
      "foo/foo/foo.txt -> foo/foo/bar.txt rename",
      "foo/foo -> foo/bar rename",
      "foo/foo.txt -> foo/bar.txt rename",
      "foo -> bar rename",
    ]);
    expect(finalTree(listing, overrides)).toEqual(["bar/", "bar/bar.txt", "bar/bar/", "bar/bar/bar.txt", "bar/keep.txt"]);
  });

  test("a folder settled by rename keeps its renamed contents", () => {
    const listing = tree("foo/", "foo/foo.txt", "bar/");
    const overrides = { find: "foo", replace: "bar", includeDirs: true, defaultAction: "rename" as const };
    expect(plannedSteps(listing, overrides)).toEqual(["foo/foo.txt -> foo/bar.txt rename", "foo -> bar (1) rename (exists)"]);
    expect(finalTree(listing, overrides)).toEqual(["bar (1)/", "bar (1)/bar.txt", "bar/"]);
  });

  test("a rename into a name another entry vacates waits for it and is no conflict", () => {
    // a -> aa, aa -> aaa, aaa -> aaaa: the last one first.
    const chain = tree("a.txt", "aa.txt", "aaa.txt");
    const lengthen = { find: "^(a+)\\.", replace: "a$1.", useRegex: true };
    expect(plannedSteps(chain, lengthen)).toEqual(["aaa.txt -> aaaa.txt rename", "aa.txt -> aaa.txt rename", "a.txt -> aa.txt rename"]);
    expect(finalTree(chain, lengthen)).toEqual(["aa.txt", "aaa.txt", "aaaa.txt"]);
  });

  test("a case-only rename is a plain rename; a separate entry with that spelling is a conflict", () => {
    expect(plannedSteps(tree("readme.md"), { find: "readme", replace: "README" })).toEqual(["readme.md -> README.md rename"]);
    expect(finalTree(tree("readme.md"), { find: "readme", replace: "README" })).toEqual(["README.md"]);
    expect(plannedSteps(tree("readme.md", "README.md"), { find: "readme", replace: "README" })).toEqual(["readme.md -> README.md skip (exists)"]);
  });

  describe("a swap (a -> b, b -> a) uses no temporary name: its first entry meets its target taken", () => {
    const swap = { find: "^(\\w)(\\w)$", replace: "$2$1", useRegex: true };
    const listing = tree("ab", "ba", "cc");

    test("skip: both stay", () => {
      expect(plannedSteps(listing, swap)).toEqual(["ab -> ba skip (exists)", "ba -> ab skip (exists)"]);
    });

    test("rename: the first takes a numbered name, which frees its name for the other", () => {
      const overrides = { ...swap, defaultAction: "rename" as const };
      expect(plannedSteps(listing, overrides)).toEqual(["ab -> ba (1) rename (exists)", "ba -> ab rename"]);
      expect(finalTree(listing, overrides)).toEqual(["ab", "ba (1)", "cc"]);
    });

    test("overwrite: neither replaces the other, nothing is lost", () => {
      const plan = planRenames(listing, request({ ...swap, defaultAction: "overwrite" }));
      expect(steps(plan.entries)).toEqual(["ab -> ba fail (exists)", "ba -> ab fail (exists)"]);
      expect(plan.entries.map((entry) => entry.reason)).toEqual([
        '"ba" is an entry this batch renames; it is not overwritten (choose rename or skip)',
        '"ab" is an entry this batch renames; it is not overwritten (choose rename or skip)',
      ]);
    });

    test("a rotation of three, settled by rename, ends with every entry present", () => {
      const rotate = { find: "^(\\w)(\\w)(\\w)$", replace: "$2$3$1", useRegex: true, defaultAction: "rename" as const };
      const rotation = tree("abc", "bca", "cab");
      expect(plannedSteps(rotation, rotate)).toEqual(["abc -> bca (1) rename (exists)", "cab -> abc rename", "bca -> cab rename"]);
      expect(finalTree(rotation, rotate)).toEqual(["abc", "bca (1)", "cab"]);
    });
  });
});

describe("conflicts and how they are settled", () => {
  const listing = tree("a.txt", "b.txt");
  const aToB = { find: "a", replace: "b" };

  test.each([
    { defaultAction: "skip" as const, step: "a.txt -> b.txt skip (exists)", after: ["a.txt", "b.txt"] },
    { defaultAction: "overwrite" as const, step: "a.txt -> b.txt overwrite (exists)", after: ["b.txt"] },
    { defaultAction: "rename" as const, step: "a.txt -> b (1).txt rename (exists)", after: ["b (1).txt", "b.txt"] },
  ])("the new name exists, defaultAction $defaultAction", ({ defaultAction, step, after }) => {
    expect(plannedSteps(listing, { ...aToB, defaultAction })).toEqual([step]);
    expect(finalTree(listing, { ...aToB, defaultAction })).toEqual([...after]);
  });

  test("actions, keyed by the entry's path from the app root, override defaultAction", () => {
    const nested = tree("docs/", "docs/a.txt", "docs/b.txt", "docs/a.md", "docs/b.md");
    const overrides = { basePath: "docs", ...aToB, defaultAction: "skip" as const };
    expect(plannedSteps(nested, { ...overrides, actions: { "docs/a.txt": "overwrite", "docs/a.md": "rename" } })).toEqual([
      "docs/a.md -> docs/b (1).md rename (exists)",
      "docs/a.txt -> docs/b.txt overwrite (exists)",
    ]);
    // A key relative to basePath, or one for an entry that has no conflict, changes nothing.
    expect(plannedSteps(nested, { ...overrides, actions: { "a.txt": "overwrite", "docs/b.md": "rename" } })).toEqual([
      "docs/a.md -> docs/b.md skip (exists)",
      "docs/a.txt -> docs/b.txt skip (exists)",
    ]);
    // An entry named like an Object property gets no inherited action.
    expect(plannedSteps(tree("constructor", "b"), { find: "constructor", replace: "b" })).toEqual(["constructor -> b skip (exists)"]);
  });

  describe("two renames land on one name: the first in name order gets it", () => {
    const pair = tree("a-1.txt", "a_1.txt");
    const join = { find: "[-_]", replace: "", useRegex: true };

    test.each([
      { defaultAction: "skip" as const, second: "a_1.txt -> a1.txt skip (same-target)", after: ["a1.txt", "a_1.txt"] },
      { defaultAction: "rename" as const, second: "a_1.txt -> a1 (1).txt rename (same-target)", after: ["a1 (1).txt", "a1.txt"] },
      { defaultAction: "overwrite" as const, second: "a_1.txt -> a1.txt fail (same-target)", after: ["a1.txt", "a_1.txt"] },
    ])("defaultAction $defaultAction", ({ defaultAction, second, after }) => {
      expect(plannedSteps(pair, { ...join, defaultAction })).toEqual(["a-1.txt -> a1.txt rename", second]);
      expect(finalTree(pair, { ...join, defaultAction })).toEqual([...after]);
    });

    test("onto an existing entry both meet it; with overwrite the second may not replace the first", () => {
      const plan = planRenames(tree("a-1.txt", "a_1.txt", "a1.txt"), request({ ...join, defaultAction: "overwrite" }));
      expect(steps(plan.entries)).toEqual(["a-1.txt -> a1.txt overwrite (exists)", "a_1.txt -> a1.txt fail (same-target)"]);
      expect(plan.entries[1]!.reason).toBe('another entry of this batch is renamed to "a1.txt"; choose rename or skip');
    });
  });

  test("an entry whose own rename is skipped or failed keeps its name, which others then meet", () => {
    // a -> aa, aa -> aaa; aaa stays (not matched), so aa meets it, and a meets aa.
    const listing = tree("a", "aa", "aaa");
    const lengthen = { find: "^(a{1,2})$", replace: "a$1", useRegex: true };
    expect(plannedSteps(listing, lengthen)).toEqual(["aa -> aaa skip (exists)", "a -> aa skip (exists)"]);
    expect(plannedSteps(listing, { ...lengthen, actions: { a: "rename" } })).toEqual(["aa -> aaa skip (exists)", "a -> aa (1) rename (exists)"]);
    // Overwrite never replaces an entry the batch renames, even one whose rename did not happen.
    const plan = planRenames(listing, request({ ...lengthen, actions: { a: "overwrite" } }));
    expect(steps(plan.entries)).toEqual(["aa -> aaa skip (exists)", "a -> aa fail (exists)"]);
    expect(plan.entries[1]!.reason).toContain("is an entry this batch renames");
  });

  test.each([
    { holder: ["b.txt/"], type: "empty folder", moving: "a.txt", expected: "overwrite" },
    { holder: ["b.txt/", "b.txt/inside"], type: "folder with content", moving: "a.txt", expected: "fail" },
    { holder: ["b.txt"], type: "file", moving: "a.txt/", expected: "overwrite" },
  ])("overwrite onto a $type: $expected", ({ holder, moving, expected }) => {
    const listing = tree(moving, ...holder);
    const plan = planRenames(listing, request({ find: "a", replace: "b", includeDirs: true, defaultAction: "overwrite" }));
    expect(plan.entries.map((entry) => entry.action)).toEqual([expected as PlannedRename["action"]]);
    if (expected === "fail") expect(plan.entries[0]!.reason).toContain("not empty");
    applied(listing, plan.entries);
  });

  test.each([
    { name: "b.txt", type: "file", numbered: "b (1).txt" },
    { name: ".env", type: "file", numbered: ".env (1)" },
    { name: ".env.local", type: "file", numbered: ".env (1).local" },
    { name: "a.tar.gz", type: "file", numbered: "a.tar (1).gz" },
    { name: "README", type: "file", numbered: "README (1)" },
    { name: "trailing.", type: "file", numbered: "trailing. (1)" },
    { name: "src", type: "dir", numbered: "src (1)" },
    { name: "v1.2", type: "dir", numbered: "v1.2 (1)" },
  ])("rename gives $type $name the name $numbered", ({ name, type, numbered }) => {
    const suffix = type === "dir" ? "/" : "";
    const listing = tree(`#${name}${suffix}`, `${name}${suffix}`);
    const overrides = { find: "#", replace: "", includeDirs: true, defaultAction: "rename" as const };
    expect(plannedSteps(listing, overrides)).toEqual([`#${name} -> ${numbered} rename (exists)`]);
  });

  test("rename skips numbers that exist or that another entry of the batch is renamed to", () => {
    // b.txt and b (1).txt exist; "b (2)#.txt" is renamed to b (2).txt; so "#b.txt" takes b (3).txt.
    const listing = tree("#b.txt", "b.txt", "b (1).txt", "b (2)#.txt");
    const overrides = { find: "#", replace: "", defaultAction: "rename" as const };
    expect(plannedSteps(listing, overrides)).toEqual(["b (2)#.txt -> b (2).txt rename", "#b.txt -> b (3).txt rename (exists)"]);
    expect(finalTree(listing, overrides)).toEqual(["b (1).txt", "b (2).txt", "b (3).txt", "b.txt"]);
  });

  test("a numbered name freed earlier in the plan is handed out again", () => {
    // All three meet b.txt. "b (1).txt" settles first and takes "b (2).txt", freeing "b (1).txt".
    const listing = tree("b.txt", "b (1).txt", "x1.txt", "x2.txt");
    const overrides = { find: "^(?:x\\d|b \\(1\\))", replace: "b", useRegex: true, defaultAction: "rename" as const };
    expect(plannedSteps(listing, overrides)).toEqual([
      "b (1).txt -> b (2).txt rename (exists)",
      "x1.txt -> b (1).txt rename (exists)",
      "x2.txt -> b (3).txt rename (exists)",
    ]);
    expect(finalTree(listing, overrides)).toEqual(["b (1).txt", "b (2).txt", "b (3).txt", "b.txt"]);
  });

  test("counts sum up the plan", () => {
    const listing = tree("a.txt", "b.txt", "a.md", "b.md", "a.js", "b.js/", "b.js/x", "a.css");
    const plan = planRenames(listing, request({ find: "a", replace: "b", actions: { "a.md": "rename", "a.js": "overwrite" } }));
    expect(steps(plan.entries)).toEqual([
      "a.css -> b.css rename",
      "a.js -> b.js fail (exists)",
      "a.md -> b (1).md rename (exists)",
      "a.txt -> b.txt skip (exists)",
    ]);
    expect(plan.counts).toEqual({ planned: 4, conflicts: 3, renamed: 2, overwritten: 0, skipped: 1, failed: 1 });
  });
});

describe("any plan applies cleanly", () => {
  // Random trees of look-alike names, rules and actions: every step finds its source and a free
  // target (or one it may overwrite); only overwritten entries are gone at the end.
  const names = ["a", "b", "ab", "ba", "aa", "a.txt", "b.txt", "ab.txt", "b (1).txt", "A.txt"];
  const rules: Partial<BulkRenameInput>[] = [
    { find: "a", replace: "b" },
    { find: "b", replace: "a" },
    { find: "a", replace: "A" },
    { find: "^(\\w)(\\w)", replace: "$2$1", useRegex: true },
    { find: "^[ab]", replace: "b", useRegex: true },
    { find: " \\(1\\)|^a", replace: "", useRegex: true },
  ];
  let seed = 7;
  const random = (below: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % below;
  };
  const randomTree = (folder: string, levels: number): string[] =>
    names
      .filter(() => random(2) === 0)
      .flatMap((name) => {
        const path = folder + name;
        return levels > 0 && random(3) === 0 ? [`${path}/`, ...randomTree(`${path}/`, levels - 1)] : [path];
      });

  test("over 200 random trees, rules and actions", () => {
    for (let round = 0; round < 200; round++) {
      const listing = tree(...randomTree("", 2));
      const actions = Object.fromEntries(listing.filter(() => random(3) === 0).map((entry) => [entry.path, (["skip", "overwrite", "rename"] as const)[random(3)]!]));
      const overrides = { ...rules[random(rules.length)], includeDirs: random(2) === 0, defaultAction: (["skip", "overwrite", "rename"] as const)[random(3)]!, actions };
      const plan = planRenames(listing, request(overrides));
      expect(applied(listing, plan.entries).length).toBe(listing.length - plan.counts.overwritten);
      expect(new Set(plan.entries.map((entry) => entry.from)).size).toBe(plan.entries.length);
    }
  });
});

describe("bounds", () => {
  const limits: RenameLimits = { maxEntries: 5, maxRenames: 3, maxPlanBytes: 1000 };
  const many = (count: number, prefix = "") => tree(...Array.from({ length: count }, (_, index) => `${prefix}f${index}`));

  test("more entries under basePath than maxEntries: 400 TOO_MANY_ENTRIES; entries outside basePath do not count", () => {
    refusal(() => planRenames(many(6), request({ find: "nothing" }), limits), "TOO_MANY_ENTRIES", 400);
    expect(planRenames(many(5), request({ find: "nothing" }), limits).entries).toEqual([]);
    const outside = [...many(20), ...tree("sub/", ...many(3, "sub/").map((entry) => entry.path))];
    expect(planRenames(outside, request({ basePath: "sub", find: "f", replace: "g" }), limits).counts.renamed).toBe(3);
  });

  test("more names changed than maxRenames: 422 TOO_MANY_RENAMES, counting only names that change", () => {
    const error = refusal(() => planRenames(many(4), request({ find: "f", replace: "g" }), limits), "TOO_MANY_RENAMES", 422);
    expect(error.message).toContain("more than 3 names");
    expect(planRenames(many(4), request({ find: "f", replace: "f" }), limits).entries).toEqual([]);
    expect(planRenames(many(3), request({ find: "f", replace: "g" }), limits).counts.renamed).toBe(3);
  });

  test("the names the walk made are the plan's: each is made and counted once, the walk refusing at the first over", () => {
    const walked = many(3);
    const renamer = new Renamer(request({ find: "f", replace: "g" }), limits);
    walked.forEach(renamer.see);
    // Made again by the plan, the 3 names would count 6 against maxRenames 3.
    expect(planRenames(walked, request({ find: "f", replace: "g" }), limits, renamer).counts.renamed).toBe(3);
    const over = new Renamer(request({ find: "f", replace: "g" }), limits);
    refusal(() => many(4).forEach(over.see), "TOO_MANY_RENAMES", 422);
  });

  test("the paths of a plan past maxPlanBytes: 400 RENAME_TOO_LARGE", () => {
    const deep = `${"d".repeat(200)}/${"e".repeat(200)}`;
    const listing = tree(`${deep}/`, `${deep}/f1`, `${deep}/f2`);
    // Each rename holds its from and to paths: ~810 bytes, so the second passes 1000.
    const error = refusal(() => planRenames(listing, request({ find: "f", replace: "g" }), { ...limits, maxEntries: 10 }), "RENAME_TOO_LARGE", 400);
    expect(error.message).toContain("more than 1000 bytes");
  });

  test("the recipe: 50,000 names each rewritten to 51,000 characters is refused at the first name, at once", () => {
    const listing = Array.from({ length: 50_000 }, (_, index) => ({ path: `${String(index).padStart(5, "0")}${"n".repeat(250)}`, type: "file" as const }));
    const started = performance.now();
    const error = refusal(() => planRenames(listing, request({ find: ".", replace: "x".repeat(200), useRegex: true })), "RENAME_TOO_LARGE", 400);
    expect(error.message).toContain("would be 51000 bytes");
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test("10,000 renames onto one name, and 5,000 swaps, are planned quickly", () => {
    const started = performance.now();
    const onto = planRenames(many(10_000), request({ find: "^f\\d+$", replace: "same", useRegex: true, defaultAction: "rename" }));
    expect(new Set(onto.entries.map((entry) => entry.to)).size).toBe(10_000);
    expect(onto.entries.at(-1)!.to).toBe("same (9999)");
    const pairs = tree(...Array.from({ length: 5000 }, (_, index) => [`${2 * index}-${2 * index + 1}`, `${2 * index + 1}-${2 * index}`]).flat());
    const swaps = planRenames(pairs, request({ find: "^(\\d+)-(\\d+)$", replace: "$2-$1", useRegex: true, defaultAction: "rename" }));
    expect(swaps.counts).toMatchObject({ renamed: 10_000, conflicts: 5000 });
    expect(performance.now() - started).toBeLessThan(3000);
  });
});
