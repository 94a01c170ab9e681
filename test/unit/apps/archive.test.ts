import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync, zipSync } from "fflate";
import { extractZip, inspectZip, MIN_ENTRY_CHARGE, type ArchiveLimits } from "../../../src/apps/archive";
import { MAX_PATH_DEPTH } from "../../../src/apps/zip-directory";
import { ApiError, type ErrorCode } from "../../../src/http/errors";
import { treeBytes } from "../../../src/quotas/usage";
import { tempDir } from "../../helpers/temp";
import { folderBombZip, makeZip, type ZipEntrySpec } from "../../helpers/zip";

const MB = 1024 * 1024;
const limits: ArchiveLimits = { maxArchiveEntries: 100, maxUncompressedBytes: 64 * MB };

/** Everything under `dir`, hidden files included, sorted. */
function listing(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).sort();
}

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

/** A workspace with the zip written to it and an apps folder that already holds something. */
function workspace(zip: Uint8Array) {
  const root = tempDir();
  const zipFile = join(root, "upload.zip");
  writeFileSync(zipFile, zip);
  const appsDir = join(root, "apps");
  mkdirSync(join(appsDir, "other-app"), { recursive: true });
  writeFileSync(join(appsDir, "other-app", "index.js"), "kept");
  return { zipFile, appsDir, destination: join(appsDir, "new-app") };
}

const text = (size: number, seed = 1) => {
  // Pseudo-random letters: compresses about 1.6:1, far from any ratio limit.
  let state = seed;
  let out = "";
  for (let i = 0; i < size; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    out += String.fromCharCode(97 + ((state >>> 16) % 26));
  }
  return out;
};
const zeros = (size: number) => new Uint8Array(size);
/** Deflated zeros as a ready entry body, made once per size: deflating 50 MB for every case is slow. */
const deflatedZerosCache = new Map<number, Pick<ZipEntrySpec, "rawData" | "crc32" | "uncompressedSize" | "method">>();
const deflatedZeros = (size: number) => {
  if (!deflatedZerosCache.has(size)) {
    const data = zeros(size);
    deflatedZerosCache.set(size, { method: 8, rawData: deflateSync(data), crc32: Bun.hash.crc32(data), uncompressedSize: size });
  }
  return deflatedZerosCache.get(size)!;
};
const noise = (size: number) => {
  const out = new Uint8Array(size);
  for (let offset = 0; offset < size; offset += 65536) crypto.getRandomValues(out.subarray(offset, offset + 65536));
  return out;
};
const good: ZipEntrySpec[] = [
  { name: "package.json", data: '{"name":"app"}' },
  { name: "src/index.js", data: "console.log(1)" },
];

interface Attack {
  name: string;
  code: ErrorCode;
  zip: () => Uint8Array;
  limits?: ArchiveLimits;
}

const attacks: Attack[] = [
  { name: "a ../ entry", code: "ARCHIVE_PATH_TRAVERSAL", zip: () => makeZip([...good, { name: "../evil.js", data: "x" }]) },
  { name: "a .. in the middle", code: "ARCHIVE_PATH_TRAVERSAL", zip: () => makeZip([{ name: "app/../../evil.js", data: "x" }]) },
  { name: "a folder entry ..", code: "ARCHIVE_PATH_TRAVERSAL", zip: () => makeZip([...good, { name: "a/../" }]) },
  { name: "traversal hidden under __MACOSX", code: "ARCHIVE_PATH_TRAVERSAL", zip: () => makeZip([...good, { name: "__MACOSX/../../evil", data: "x" }]) },
  { name: "an absolute path", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([...good, { name: "/etc/cron.d/evil", data: "x" }]) },
  { name: "a drive letter", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([{ name: "C:/Windows/evil.exe", data: "x" }]) },
  { name: "a drive-relative path", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([{ name: "c:evil.exe", data: "x" }]) },
  { name: "a backslash path", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([...good, { name: "..\\..\\evil.js", data: "x" }]) },
  { name: "a NUL in a name", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([{ name: "index.js\u0000.txt", data: "x" }]) },
  { name: "a control character in a name", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([{ name: "read\u001b[2Jme.md", data: "x" }]) },
  { name: "a name that is not UTF-8", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([{ name: new Uint8Array([0x66, 0xff, 0xfe, 0x2e, 0x6a, 0x73]), data: "x" }]) },
  { name: "a 256-byte segment", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([{ name: `src/${"a".repeat(256)}.js`, data: "x" }]) },
  { name: "a 1025-byte path", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([{ name: `${"abcdefgh/".repeat(113)}zzzzzzzz`, data: "x" }]) },
  { name: "a symlink", code: "ARCHIVE_UNSAFE_ENTRY", zip: () => makeZip([...good, { name: "secrets", data: "/etc/shadow", unixMode: 0o120777 }]) },
  { name: "a symlink folder", code: "ARCHIVE_UNSAFE_ENTRY", zip: () => makeZip([{ name: "root/", unixMode: 0o120755 }]) },
  { name: "a FIFO", code: "ARCHIVE_UNSAFE_ENTRY", zip: () => makeZip([{ name: "pipe", unixMode: 0o010644 }]) },
  { name: "a character device", code: "ARCHIVE_UNSAFE_ENTRY", zip: () => makeZip([{ name: "null", unixMode: 0o020666 }]) },
  { name: "a block device", code: "ARCHIVE_UNSAFE_ENTRY", zip: () => makeZip([{ name: "sda", unixMode: 0o060660 }]) },
  { name: "a socket", code: "ARCHIVE_UNSAFE_ENTRY", zip: () => makeZip([{ name: "sock", unixMode: 0o140755 }]) },
  {
    name: "more entries than the limit",
    code: "ARCHIVE_TOO_MANY_ENTRIES",
    limits: { ...limits, maxArchiveEntries: 10 },
    zip: () => makeZip(Array.from({ length: 11 }, (_, i) => ({ name: `f${i}.txt`, data: "x" }))),
  },
  {
    name: "junk entries count towards the entry limit",
    code: "ARCHIVE_TOO_MANY_ENTRIES",
    limits: { ...limits, maxArchiveEntries: 3 },
    zip: () => makeZip([...good, { name: "__MACOSX/._a", data: "x" }, { name: ".DS_Store", data: "x" }]),
  },
  {
    name: "more bytes than the limit",
    code: "ARCHIVE_TOO_LARGE",
    limits: { ...limits, maxUncompressedBytes: 100_000 },
    zip: () => makeZip([{ name: "a.txt", data: text(60_000) }, { name: "b.txt", data: text(60_000, 2) }]),
  },
  {
    name: "sizes that lie to slip under the byte limit",
    code: "ARCHIVE_TOO_LARGE",
    limits: { ...limits, maxUncompressedBytes: 100_000 },
    zip: () => makeZip([{ name: "a.txt", data: text(300_000), uncompressedSize: 10 }]),
  },
  { name: "a zip bomb (50 MB of zeros)", code: "ARCHIVE_RATIO_EXCEEDED", zip: () => makeZip([...good, { name: "bomb.bin", ...deflatedZeros(50 * MB) }]) },
  {
    name: "a zip bomb whose header claims 1 KB",
    code: "ARCHIVE_RATIO_EXCEEDED",
    zip: () => makeZip([...good, { name: "bomb.bin", ...deflatedZeros(50 * MB), uncompressedSize: 1024 }]),
  },
  {
    name: "a bomb spread over entries each under the grace size",
    code: "ARCHIVE_RATIO_EXCEEDED",
    zip: () => makeZip(Array.from({ length: 40 }, (_, i) => ({ name: `part${i}.bin`, ...deflatedZeros(900 * 1024) }))),
  },
  {
    // Its first entry stays under the ratio's grace size, so the lie is what stops it, one entry in.
    name: "a spread bomb whose headers claim 1 byte each",
    code: "ARCHIVE_INVALID",
    zip: () => makeZip(Array.from({ length: 40 }, (_, i) => ({ name: `part${i}.bin`, ...deflatedZeros(900 * 1024), uncompressedSize: 1 }))),
  },
  {
    // 3 MB of incompressible data keeps the archive as a whole under 100:1; the entry alone is not.
    name: "a bomb hidden beside incompressible data",
    code: "ARCHIVE_RATIO_EXCEEDED",
    zip: () => makeZip([{ name: "bomb.bin", ...deflatedZeros(50 * MB) }, { name: "random.bin", data: noise(3 * MB), method: 0 }]),
  },
  {
    name: "a lying bomb hidden beside incompressible data",
    code: "ARCHIVE_RATIO_EXCEEDED",
    zip: () => makeZip([{ name: "bomb.bin", ...deflatedZeros(50 * MB), uncompressedSize: 1024 }, { name: "random.bin", data: noise(3 * MB), method: 0 }]),
  },
  {
    // Honest entries just under 100:1 overall, then a last small entry whose header lies: only the
    // count of bytes actually inflated across the archive catches it before the lie is noticed.
    name: "a lying entry that tips the whole archive past 100:1",
    code: "ARCHIVE_RATIO_EXCEEDED",
    zip: () =>
      makeZip([
        { name: "a-noise.bin", data: noise(20 * 1024), method: 0 },
        { name: "b-zeros.bin", ...deflatedZeros(900 * 1024) },
        { name: "c-zeros.bin", ...deflatedZeros(900 * 1024) },
        { name: "z-last.bin", ...deflatedZeros(900 * 1024), uncompressedSize: 1 },
      ]),
  },
  {
    name: "a bomb refused from its headers alone, before inflating",
    code: "ARCHIVE_RATIO_EXCEEDED",
    zip: () => makeZip([{ name: "bomb.bin", rawData: noise(20 * 1024), uncompressedSize: 50 * MB }]),
  },
  {
    name: "a size past the limit refused from its headers alone, before inflating",
    code: "ARCHIVE_TOO_LARGE",
    limits: { ...limits, maxUncompressedBytes: 100_000 },
    zip: () => makeZip([{ name: "big.txt", rawData: noise(20 * 1024), uncompressedSize: 200_000 }]),
  },
  { name: "a file 33 levels deep", code: "ARCHIVE_TOO_DEEP", zip: () => makeZip([...good, { name: `${"d/".repeat(MAX_PATH_DEPTH)}f.js`, data: "x" }]) },
  { name: "a folder 33 levels deep", code: "ARCHIVE_TOO_DEEP", zip: () => makeZip([{ name: "d/".repeat(MAX_PATH_DEPTH + 1) }]) },
  { name: "the folder-bomb recipe: 40 empty files, each 500 folders deep", code: "ARCHIVE_TOO_DEEP", zip: () => folderBombZip(40, 501) },
  {
    // 3 entries in the central directory, 12 files and folders on disk.
    name: "folders implied by paths count towards the entry limit",
    code: "ARCHIVE_TOO_MANY_ENTRIES",
    limits: { ...limits, maxArchiveEntries: 11 },
    zip: () => folderBombZip(3, 4),
  },
  {
    name: "empty files and implied folders are charged 4 KiB each against the byte limit",
    code: "ARCHIVE_TOO_LARGE",
    limits: { ...limits, maxUncompressedBytes: 12 * MIN_ENTRY_CHARGE - 1 },
    zip: () => folderBombZip(3, 4),
  },
  {
    name: "listed empty folders are charged 4 KiB each against the byte limit",
    code: "ARCHIVE_TOO_LARGE",
    limits: { ...limits, maxUncompressedBytes: 10 * MIN_ENTRY_CHARGE },
    zip: () => makeZip(Array.from({ length: 11 }, (_, i) => ({ name: `empty${i}/` }))),
  },
  { name: "duplicate names", code: "ARCHIVE_INVALID", zip: () => makeZip([...good, { name: "src/index.js", data: "evil" }]) },
  { name: "duplicate names after ./ normalisation", code: "ARCHIVE_INVALID", zip: () => makeZip([...good, { name: "./src//index.js", data: "evil" }]) },
  { name: "a file that is also a folder", code: "ARCHIVE_INVALID", zip: () => makeZip([{ name: "lib", data: "x" }, { name: "lib/a.js", data: "y" }]) },
  { name: "an encrypted entry", code: "ARCHIVE_ENCRYPTED", zip: () => makeZip([...good, { name: "secret.txt", data: "x", flags: 1 }]) },
  { name: "an AES-encrypted entry (method 99)", code: "ARCHIVE_ENCRYPTED", zip: () => makeZip([{ name: "secret.txt", data: "x", method: 99 }]) },
  { name: "LZMA compression (method 14)", code: "ARCHIVE_UNSUPPORTED_METHOD", zip: () => makeZip([...good, { name: "a.txt", data: "x", method: 14 }]) },
  { name: "bzip2 compression (method 12)", code: "ARCHIVE_UNSUPPORTED_METHOD", zip: () => makeZip([{ name: "a.txt", data: "x", method: 12 }]) },
  { name: "a truncated archive", code: "ARCHIVE_INVALID", zip: () => makeZip([...good, { name: "a.txt", data: text(5000) }]).slice(0, 3000) },
  { name: "a text file", code: "ARCHIVE_INVALID", zip: () => new TextEncoder().encode("this is not a zip file, honest") },
  { name: "an empty file", code: "ARCHIVE_INVALID", zip: () => new Uint8Array(0) },
  { name: "corrupt deflate data", code: "ARCHIVE_INVALID", zip: () => makeZip([...good, { name: "a.txt", data: "hello", method: 8, rawData: new Uint8Array([0xff, 0xff, 0xff, 0xff]) }]) },
  { name: "a wrong CRC", code: "ARCHIVE_INVALID", zip: () => makeZip([...good, { name: "a.txt", data: "hello", crc32: 12345 }]) },
  { name: "a header claiming more bytes than there are", code: "ARCHIVE_INVALID", zip: () => makeZip([...good, { name: "a.txt", data: "hello", uncompressedSize: 6 }]) },
  { name: "a header claiming fewer bytes than there are", code: "ARCHIVE_INVALID", zip: () => makeZip([...good, { name: "a.txt", data: text(2000), uncompressedSize: 100 }]) },
  { name: "a compressed size past the central directory", code: "ARCHIVE_INVALID", zip: () => makeZip([{ name: "a.txt", data: "hello", compressedSize: 100_000 }]) },
  { name: "a ZIP64 size marker", code: "ARCHIVE_INVALID", zip: () => makeZip([{ name: "a.txt", data: "hello", compressedSize: 0xffffffff }]) },
  { name: "a local name different from the central one", code: "ARCHIVE_INVALID", zip: () => makeZip([...good, { name: "safe.txt", localName: "../x.txt", data: "x" }]) },
  { name: "a folder entry with content", code: "ARCHIVE_INVALID", zip: () => makeZip([{ name: "docs/", data: "surprise", method: 0 }]) },
];

describe("hostile archives are refused and leave nothing behind", () => {
  for (const attack of attacks) {
    test(`${attack.name} -> ${attack.code}`, async () => {
      const { zipFile, appsDir, destination } = workspace(attack.zip());
      const before = listing(appsDir);

      const extractError = await failure(extractZip(zipFile, destination, attack.limits ?? limits));
      expect(extractError.code).toBe(attack.code);
      expect(extractError.status).toBe(400);
      expect(listing(appsDir)).toEqual(before);
      expect(existsSync(destination)).toBe(false);

      const inspectError = await failure(inspectZip(zipFile, attack.limits ?? limits));
      expect(inspectError.code).toBe(attack.code);
      expect(listing(appsDir)).toEqual(before);
    });
  }

  test("a refusal found only while inflating, after other files were written, removes them too", async () => {
    const files = Array.from({ length: 20 }, (_, i) => ({ name: `src/file${i}.js`, data: text(20_000, i) }));
    const { zipFile, appsDir, destination } = workspace(makeZip([...files, { name: "zz-last.txt", data: "hello", crc32: 1 }]));
    const before = listing(appsDir);
    expect((await failure(extractZip(zipFile, destination, limits))).code).toBe("ARCHIVE_INVALID");
    expect(listing(appsDir)).toEqual(before);
  });

  test("error messages name the offending entry safely", async () => {
    const { zipFile, destination } = workspace(makeZip([{ name: "ok/../../\u001b[31mred", data: "x" }]));
    const error = await failure(extractZip(zipFile, destination, limits));
    expect(error.message).toContain("\\u001b[31mred");
    expect(error.message).not.toContain("\u001b");
  });
});

describe("extracting well-formed archives", () => {
  test("nested folders, empty folders, contents, exec bit and the returned listing", async () => {
    const zip = makeZip([
      { name: "package.json", data: '{"name":"app"}' },
      { name: "src/" },
      { name: "src/lib/util.js", data: "export const x = 1;" },
      { name: "public/empty/" },
      { name: "bin/start.sh", data: "#!/bin/sh\necho hi\n", unixMode: 0o100755 },
      { name: "data/blob.bin", data: zeros(4096), method: 0 },
      { name: "empty.txt", data: "" },
    ]);
    const { zipFile, appsDir, destination } = workspace(zip);
    const result = await extractZip(zipFile, destination, limits);

    expect(result.entries.map((entry) => entry.path)).toEqual([
      "bin/start.sh",
      "data/blob.bin",
      "empty.txt",
      "package.json",
      "public/empty",
      "src",
      "src/lib/util.js",
    ]);
    expect(result.totalBytes).toBe(14 + 19 + 18 + 4096);
    expect(result.entries.find((entry) => entry.path === "bin/start.sh")).toEqual({
      path: "bin/start.sh",
      kind: "file",
      size: 18,
      executable: true,
    });
    expect(readFileSync(join(destination, "src/lib/util.js"), "utf8")).toBe("export const x = 1;");
    expect(readFileSync(join(destination, "data/blob.bin"))).toEqual(Buffer.alloc(4096));
    expect(readFileSync(join(destination, "empty.txt"), "utf8")).toBe("");
    expect(statSync(join(destination, "public/empty")).isDirectory()).toBe(true);
    expect(readdirSync(join(destination, "public/empty"))).toEqual([]);
    expect(statSync(join(destination, "bin/start.sh")).mode & 0o777).toBe(0o755);
    expect(statSync(join(destination, "package.json")).mode & 0o777).toBe(0o644);
    expect(statSync(destination).mode & 0o777).toBe(0o755);
    // Only the destination was added beside the other app: no temp dir is left.
    expect(readdirSync(appsDir).sort()).toEqual(["new-app", "other-app"]);
  });

  test("a single top folder is stripped and macOS junk is ignored", async () => {
    const zip = makeZip([
      { name: "my-app/" },
      { name: "my-app/package.json", data: "{}" },
      { name: "my-app/src/index.js", data: "1" },
      { name: "my-app/.DS_Store", data: "junk" },
      { name: "my-app/src/.DS_Store", data: "junk" },
      { name: "__MACOSX/" },
      { name: "__MACOSX/my-app/._package.json", data: "junk" },
    ]);
    const { zipFile, destination } = workspace(zip);
    const result = await extractZip(zipFile, destination, limits);
    expect(result.entries.map((entry) => entry.path)).toEqual(["package.json", "src/index.js"]);
    expect(listing(destination)).toEqual(["package.json", "src", join("src", "index.js")]);
  });

  test("the top folder is kept when something sits beside it or the only top entry is a file", async () => {
    const beside = workspace(makeZip([{ name: "app/index.js", data: "1" }, { name: "README.md", data: "r" }]));
    expect((await extractZip(beside.zipFile, beside.destination, limits)).entries.map((e) => e.path)).toEqual([
      "README.md",
      "app/index.js",
    ]);
    const single = workspace(makeZip([{ name: "index.html", data: "<h1>hi</h1>" }]));
    expect((await extractZip(single.zipFile, single.destination, limits)).entries.map((e) => e.path)).toEqual(["index.html"]);
  });

  test("archives made by fflate's zipSync are accepted, exec bit included", async () => {
    const zip = zipSync({
      "site/index.html": new TextEncoder().encode("<h1>hello</h1>"),
      "site/assets/app.js": [new TextEncoder().encode(text(10_000)), { level: 9 }],
      "site/run.sh": [new TextEncoder().encode("#!/bin/sh\n"), { os: 3, attrs: (0o100755 << 16) >>> 0 }],
      "site/raw.txt": [new TextEncoder().encode("stored"), { level: 0 }],
    });
    const { zipFile, destination } = workspace(zip);
    const result = await extractZip(zipFile, destination, limits);
    expect(result.entries.map((entry) => entry.path)).toEqual(["assets/app.js", "index.html", "raw.txt", "run.sh"]);
    expect(readFileSync(join(destination, "assets/app.js"), "utf8")).toBe(text(10_000));
    expect(readFileSync(join(destination, "raw.txt"), "utf8")).toBe("stored");
    expect(statSync(join(destination, "run.sh")).mode & 0o777).toBe(0o755);
  });

  test("entries written with data descriptors (streaming zip tools) are read from the central directory", async () => {
    const zip = makeZip([
      { name: "a.txt", data: text(50_000), dataDescriptor: true },
      { name: "b.txt", data: "stored", method: 0, dataDescriptor: true },
    ]);
    const { zipFile, destination } = workspace(zip);
    await extractZip(zipFile, destination, limits);
    expect(readFileSync(join(destination, "a.txt"), "utf8")).toBe(text(50_000));
    expect(readFileSync(join(destination, "b.txt"), "utf8")).toBe("stored");
  });

  test("UTF-8 names, ./ prefixes and highly compressible small files are fine", async () => {
    const zip = makeZip([
      { name: "./docs/résumé 履歴書.md", data: "ok" },
      { name: "./src/blank.css", data: " ".repeat(500_000) },
    ]);
    const { zipFile, destination } = workspace(zip);
    const result = await extractZip(zipFile, destination, limits);
    expect(result.entries.map((entry) => entry.path)).toEqual(["docs/résumé 履歴書.md", "src/blank.css"]);
    expect(readFileSync(join(destination, "docs/résumé 履歴書.md"), "utf8")).toBe("ok");
  });

  test("an archive at exactly the byte and entry limits is accepted", async () => {
    const zip = makeZip([{ name: "a.txt", data: text(5000) }, { name: "b.txt", data: text(5000, 7) }]);
    const { zipFile, destination } = workspace(zip);
    const result = await extractZip(zipFile, destination, { maxArchiveEntries: 2, maxUncompressedBytes: 10_000 });
    expect(result.totalBytes).toBe(10_000);
  });

  test("a tree at exactly the entry and 4 KiB charge limits is accepted; totalBytes stays the files' real size", async () => {
    // 3 chains: a top folder, 2 folders and an empty file each: 12 entries on disk, 48 KiB charged.
    const { zipFile, destination } = workspace(folderBombZip(3, 4, [{ name: "index.html", data: "hi" }]));
    const exact = { maxArchiveEntries: 13, maxUncompressedBytes: 13 * MIN_ENTRY_CHARGE };
    expect((await inspectZip(zipFile, exact)).totalBytes).toBe(2);
    const result = await extractZip(zipFile, destination, exact);
    expect(result.totalBytes).toBe(2);
    expect(readFileSync(join(destination, "2/d/d/f"), "utf8")).toBe("");
  });

  test(`a path ${MAX_PATH_DEPTH} levels deep is accepted`, async () => {
    const path = `${"d/".repeat(MAX_PATH_DEPTH - 1)}deep.js`;
    const { zipFile, destination } = workspace(makeZip([{ name: path, data: "x" }, { name: "index.js", data: "y" }]));
    await extractZip(zipFile, destination, limits);
    expect(readFileSync(join(destination, path), "utf8")).toBe("x");
  });

  test("an empty archive extracts to an empty folder", async () => {
    const { zipFile, destination } = workspace(makeZip([]));
    expect(await extractZip(zipFile, destination, limits)).toEqual({ entries: [], totalBytes: 0, chargedBytes: 0 });
    expect(readdirSync(destination)).toEqual([]);
  });

  test("an existing destination is never overwritten", async () => {
    const { zipFile, appsDir } = workspace(makeZip(good));
    const existing = join(appsDir, "other-app");
    await expect(extractZip(zipFile, existing, limits)).rejects.toThrow(/already exists/);
    expect(listing(existing)).toEqual(["index.js"]);
    expect(readdirSync(appsDir)).toEqual(["other-app"]);
  });

  test("inspectZip lists what extractZip would write, without writing", async () => {
    const zip = makeZip([{ name: "top/a.txt", data: "hello" }, { name: "top/b/", unixMode: 0o040755 }, { name: "top/run", data: "x", unixMode: 0o100700 }]);
    const { zipFile, appsDir } = workspace(zip);
    const before = listing(appsDir);
    expect(await inspectZip(zipFile, limits)).toEqual({
      entries: [
        { path: "a.txt", kind: "file", size: 5, executable: false },
        { path: "b", kind: "directory", size: 0, executable: false },
        { path: "run", kind: "file", size: 1, executable: true },
      ],
      totalBytes: 6,
      chargedBytes: 3 * MIN_ENTRY_CHARGE,
    });
    expect(listing(appsDir)).toEqual(before);
  });

  test("what an extracted tree is charged is what the disk quota measures of it later", async () => {
    const zip = makeZip([{ name: "top/a.txt", data: "x".repeat(5000) }, { name: "top/b/", unixMode: 0o040755 }, { name: "top/c/d/e.txt", data: "" }]);
    const { zipFile, destination } = workspace(zip);
    const { chargedBytes } = await extractZip(zipFile, destination, limits);
    expect(chargedBytes).toBe(5000 + 4 * MIN_ENTRY_CHARGE);
    expect(await treeBytes(destination)).toBe(chargedBytes);
  });
});
