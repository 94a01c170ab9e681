// An app's source tree through HTTP, on a deployed static app: list, read, write with ifMatch,
// create (JSON, URL-encoded and multipart bodies), folders, move, delete, bulk rename (preview and
// apply), the ZIP of the tree, the history, and a redeploy that serves the edited files. Hostile
// paths and a symbolic link planted in the tree are refused with nothing touched outside it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { unzipSync, strFromU8 } from "fflate";
import { TestServer } from "../../helpers/server";
import { tempDir } from "../../helpers/temp";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";

let server: TestServer;
let key: string;
let app: any;
let outside: string;

beforeAll(async () => {
  server = await TestServer.start();
  key = (await server.createKey("files")).key;
  const deployed = await deployZip(
    server,
    key,
    { name: "site", runtime: "node", memoryMB: "64" },
    appZip({ "index.html": "version one", "assets/logo-old.svg": "<svg/>", "assets/icon-old.svg": "<svg/>", "assets/icon-new.svg": "<svg>new</svg>" }),
  );
  expect(deployed.status).toBe(202);
  app = await waitForStatus(server, key, deployed.body.app.id, ["running"]);
  outside = tempDir();
  writeFileSync(join(outside, "secret.txt"), "outside the tree");
}, 180_000);

afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

const fs = (method: string, path: string, body?: unknown) => server.request(method, `/api/apps/${app.id}/fs/${path}`, { key, body });
const sourceDir = () => join(server.dataDir, "apps", app.id, "source");
const appNow = async () => (await server.request("GET", `/api/apps/${app.id}`, { key })).body.app;

describe("reading and editing", () => {
  test("list and read: entries with type and size, the file's text and version", async () => {
    const listed = await fs("GET", "list");
    expect(listed.status).toBe(200);
    expect(listed.body.entries.map((entry: any) => [entry.name, entry.type])).toEqual([
      ["assets", "dir"],
      ["index.html", "file"],
    ]);
    const read = await fs("GET", "file?path=index.html");
    expect(read.body.file).toMatchObject({ path: "index.html", content: "version one", binary: false, size: 11 });
    expect(read.body.file.version).toMatch(/^[0-9a-f]{64}$/);
  });

  test("write with ifMatch: an old version -> 409 FILE_CHANGED and nothing written; the current one saves, and the app says its files changed", async () => {
    const { version } = (await fs("GET", "file?path=index.html")).body.file;
    const stale = await fs("PUT", "file", { path: "index.html", content: "lost edit", ifMatch: "0".repeat(64) });
    expect({ status: stale.status, code: stale.body.code }).toEqual({ status: 409, code: "FILE_CHANGED" });
    expect(readFileSync(join(sourceDir(), "index.html"), "utf8")).toBe("version one");

    const saved = await fs("PUT", "file", { path: "index.html", content: "version two", ifMatch: version });
    expect(saved.status).toBe(200);
    expect(saved.body.file.version).not.toBe(version);
    expect(readFileSync(join(sourceDir(), "index.html"), "utf8")).toBe("version two");
    expect((await appNow()).filesChangedSinceBuild).toBe(true);
  });

  test("create a file as JSON, URL-encoded form or multipart form, with its folders; again -> 409 FILE_EXISTS", async () => {
    const json = await fs("POST", "file", { path: "notes/json.txt", content: "from json" });
    expect(json.status).toBe(201);
    const urlencoded = await server.request("POST", `/api/apps/${app.id}/fs/file`, {
      key,
      body: "path=notes%2Fform.txt&content=from+a+form",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(urlencoded.status).toBe(201);
    const form = new FormData();
    form.set("path", "notes/multipart.txt");
    form.set("content", "from multipart");
    expect((await fs("POST", "file", form)).status).toBe(201);
    expect(readFileSync(join(sourceDir(), "notes/form.txt"), "utf8")).toBe("from a form");
    expect(readFileSync(join(sourceDir(), "notes/multipart.txt"), "utf8")).toBe("from multipart");

    const again = await fs("POST", "file", { path: "notes/json.txt" });
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 409, code: "FILE_EXISTS" });
    expect(readFileSync(join(sourceDir(), "notes/json.txt"), "utf8")).toBe("from json");
  });

  test("folder, move and delete; each change is in the history with its paths and actor", async () => {
    expect((await fs("POST", "folder", { path: "archive/2026" })).status).toBe(201);
    const moved = await fs("POST", "move", { from: "notes/json.txt", to: "archive/2026/json.txt" });
    expect(moved.body.moved).toEqual({ from: "notes/json.txt", to: "archive/2026/json.txt" });
    expect((await fs("POST", "delete", { path: "notes" })).status).toBe(200);
    expect((await fs("GET", "list")).body.entries.map((entry: any) => entry.name)).toEqual(["archive", "assets", "index.html"]);

    const history = (await fs("GET", "history")).body.changes;
    expect(history.slice(0, 3).map((change: any) => [change.action, change.paths])).toEqual([
      ["delete", ["notes"]],
      ["move", ["notes/json.txt", "archive/2026/json.txt"]],
      ["mkdir", ["archive/2026"]],
    ]);
    expect(history[0].actor.type).toBe("api_key");
  });
});

describe("bulk rename", () => {
  const body = { basePath: "assets", find: "-old", replace: "-new", defaultAction: "skip" };

  test("preview plans every entry with its conflict and changes nothing", async () => {
    const preview = await fs("POST", "bulk-rename/preview", body);
    expect(preview.status).toBe(200);
    // Renames into free names come first, then the conflicts.
    expect(preview.body.entries.map((entry: any) => [entry.from, entry.to, entry.conflict, entry.action, entry.result])).toEqual([
      ["assets/logo-old.svg", "assets/logo-new.svg", null, "rename", null],
      ["assets/icon-old.svg", "assets/icon-new.svg", "exists", "skip", null],
    ]);
    expect(readFileSync(join(sourceDir(), "assets/logo-old.svg"), "utf8")).toBe("<svg/>");
  });

  test("apply settles the conflict by `actions` (keyed by the path from the app's root), the rest by defaultAction", async () => {
    const applied = await fs("POST", "bulk-rename/apply", { ...body, actions: { "assets/icon-old.svg": "rename" } });
    expect(applied.status).toBe(200);
    expect(applied.body.entries.map((entry: any) => [entry.from, entry.to, entry.result])).toEqual([
      ["assets/logo-old.svg", "assets/logo-new.svg", "renamed"],
      ["assets/icon-old.svg", "assets/icon-new (1).svg", "renamed"],
    ]);
    expect(applied.body.counts).toMatchObject({ renamed: 2, skipped: 0, failed: 0 });
    expect((await fs("GET", "list?path=assets")).body.entries.map((entry: any) => entry.name)).toEqual(["icon-new (1).svg", "icon-new.svg", "logo-new.svg"]);
    expect(readFileSync(join(sourceDir(), "assets/icon-new.svg"), "utf8")).toBe("<svg>new</svg>");
    const change = (await fs("GET", "history")).body.changes[0];
    expect(change).toMatchObject({ action: "bulk-rename", pathCount: 4 });
  });

  test("URL-encoded and multipart bodies work too; an invalid regular expression -> 400 INVALID_REGEX; a catastrophic one finishes at once", async () => {
    const form = new URLSearchParams({ find: "(a+)+$", replace: "x", useRegex: "true", includeDirs: "true" });
    const started = Date.now();
    const linear = await server.request("POST", `/api/apps/${app.id}/fs/bulk-rename/preview`, { key, body: form.toString(), headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(linear.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2000);
    const multipart = new FormData();
    multipart.set("find", "logo");
    multipart.set("basePath", "assets");
    multipart.set("includeFiles", "true");
    const fromForm = await fs("POST", "bulk-rename/preview", multipart);
    expect(fromForm.body.entries.map((entry: any) => entry.from)).toEqual(["assets/logo-new.svg"]);
    const invalid = await fs("POST", "bulk-rename/preview", { find: "([unclosed", useRegex: true });
    expect({ status: invalid.status, code: invalid.body.code }).toEqual({ status: 400, code: "INVALID_REGEX" });
  });
});

describe("bulk rename bounds", () => {
  const residentMiB = () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${server.process!.pid}/status`, "utf8"))![1]) / 1024;

  test("the recipe: 50,000 names each rewritten to 51,000 characters -> 400 RENAME_TOO_LARGE at once, the server growing by less than 50 MB", async () => {
    // 50 folders of 1,000: Bun reads a whole folder at once (one of 50,000 such names takes it
    // 20-35 MB whatever is done with them), and it is the planning this measures.
    const folder = join(sourceDir(), "bulk");
    try {
      for (let index = 0; index < 50_000; index++) {
        const subfolder = join(folder, String(Math.floor(index / 1000)).padStart(2, "0"));
        if (index % 1000 === 0) mkdirSync(subfolder, { recursive: true });
        writeFileSync(join(subfolder, `${String(index).padStart(5, "0")}${"n".repeat(250)}`), "");
      }
      const before = residentMiB();
      for (const route of ["preview", "apply"]) {
        const started = Date.now();
        const refused = await fs("POST", `bulk-rename/${route}`, { basePath: "bulk", find: ".", replace: "x".repeat(200), useRegex: true });
        expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 400, code: "RENAME_TOO_LARGE" });
        expect(refused.body.error).toContain("would be 51000 bytes; a name is at most 255 bytes");
        expect(Date.now() - started).toBeLessThan(10_000);
      }
      expect(residentMiB() - before).toBeLessThan(50);
      expect((await fs("GET", "list?path=bulk/49")).body.entries[0].name).toBe(`49000${"n".repeat(250)}`); // none renamed
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("hostile paths", () => {
  test("traversal, absolute paths, backslashes, NUL, encoded dots and over-long names -> 400 INVALID_PATH, on every operation", async () => {
    const hostile = ["../outside.txt", "/etc/passwd", "assets\\..\\x", "a\u0000b", "%2e%2e/x", "assets/%2F..%2Fx", `${"n".repeat(300)}.txt`];
    for (const path of hostile) {
      for (const [method, route, body] of [
        ["GET", `file?path=${encodeURIComponent(path)}`, undefined],
        ["POST", "file", { path, content: "x" }],
        ["PUT", "file", { path, content: "x" }],
        ["POST", "delete", { path }],
        ["POST", "move", { from: "index.html", to: path }],
      ] as const) {
        const answer = await fs(method, route, body);
        expect({ path, route, status: answer.status, code: answer.body.code }).toEqual({ path, route, status: 400, code: "INVALID_PATH" });
      }
    }
    expect(readFileSync(join(sourceDir(), "index.html"), "utf8")).toBe("version two");
  });

  test("a symbolic link planted in the tree that leads out of it is never followed: 403, and nothing outside is read or written", async () => {
    symlinkSync(outside, join(sourceDir(), "escape"));
    mkdirSync(join(sourceDir(), "deep/er"), { recursive: true });
    symlinkSync(join(outside, "secret.txt"), join(sourceDir(), "deep/er/secret-link"));
    const refused = [
      await fs("GET", "list?path=escape"),
      await fs("GET", "file?path=escape/secret.txt"),
      await fs("GET", "file?path=deep/er/secret-link"),
      await fs("POST", "file", { path: "escape/planted.txt", content: "x" }),
      await fs("PUT", "file", { path: "deep/er/secret-link", content: "overwritten" }),
    ];
    for (const answer of refused) expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 403, code: "SYMLINK_NOT_FOLLOWED" });
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("outside the tree");
    expect((await fs("GET", "list")).body.entries.find((entry: any) => entry.name === "escape").type).toBe("symlink");
    // Deleting the link removes the link, not what it points to.
    expect((await fs("POST", "delete", { path: "escape" })).status).toBe(200);
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("outside the tree");
    expect((await fs("POST", "delete", { path: "deep" })).status).toBe(200);
  });
});

describe("the tree as a whole", () => {
  test("the ZIP download holds the edited tree", async () => {
    const response = await fetch(`${server.baseUrl}/api/apps/${app.id}/fs/archive`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/zip");
    const files = unzipSync(new Uint8Array(await response.arrayBuffer()));
    expect(strFromU8(files["index.html"]!)).toBe("version two");
    expect(Object.keys(files)).toContain("assets/logo-new.svg");
  });

  test("redeploy builds the edited tree and serves it, with zero downtime; filesChangedSinceBuild turns false", async () => {
    expect(await (await viaProxy(server, app.subdomain, "/")).text()).toBe("version one");
    const redeployed = await server.request("POST", `/api/apps/${app.id}/redeploy`, { key });
    expect(redeployed.status).toBe(202);
    const build = redeployed.body.buildId;
    let answers = 0;
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; answers++) {
      const response = await viaProxy(server, app.subdomain, "/");
      expect(response.status).toBe(200);
      if ((await response.text()) === "version two") break;
      await Bun.sleep(100);
    }
    expect(answers).toBeGreaterThan(0);
    const after = await appNow();
    expect(after.currentBuildId).toBe(build);
    expect(after.filesChangedSinceBuild).toBe(false);
    const builds = (await server.request("GET", `/api/apps/${app.id}/builds`, { key })).body.builds;
    expect(builds[0]).toMatchObject({ id: build, trigger: "redeploy", status: "succeeded" });

    // One timeline: the redeploy's build, then (older) the edits it was made from, then the first build.
    const events = (await server.request("GET", `/api/apps/${app.id}/history`, { key })).body.events;
    expect(events[0]).toMatchObject({ kind: "build", build: { id: build }, change: null });
    expect(events.slice(1, 3).map((event: any) => [event.kind, event.change?.action])).toEqual([
      ["files", "delete"],
      ["files", "delete"],
    ]);
    expect(events.at(-1)).toMatchObject({ kind: "build", build: { trigger: "upload" } });
    expect(events.filter((event: any) => event.kind === "files").length).toBeGreaterThanOrEqual(8);
  }, 180_000);
});
