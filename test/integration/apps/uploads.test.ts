// Uploads through the real HTTP API: hostile archives (each attack of the spec) are refused on
// deploy and on inspect-env with their ARCHIVE_* code and leave no file behind, oversized uploads
// get 413, every deploy field is validated by name, a single top folder is stripped and __MACOSX
// ignored, and inspect-env lists what an app needs without keeping or deploying anything.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { dataDirTree } from "../../helpers/data-dir";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { makeZip, type ZipEntrySpec } from "../../helpers/zip";

const MAX_UPLOAD_BYTES = 1024 * 1024;
const MAX_ARCHIVE_ENTRIES = 50;
const MAX_UNCOMPRESSED_BYTES = 2 * 1024 * 1024;

let server: TestServer;
let key: string;

async function appList() {
  const listed = await server.request("GET", "/api/apps/", { key });
  expect(listed.status).toBe(200);
  return listed.body.apps.map((app: any) => app.id).sort();
}

function expectError(response: { status: number; body: any }, status: number, code: string) {
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { success: false, error: expect.any(String), code },
  });
}

function uploadForm(fields: Record<string, string>, zip: Uint8Array<ArrayBuffer> | null) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  if (zip) form.set("file", new File([zip], "app.zip", { type: "application/zip" }));
  return form;
}

const validFields = (name: string) => ({ name, runtime: "node", memoryMB: "64" });

/** Bytes from a fixed-seed generator over two letters: ~8:1 under deflate, well below the ratio limit. */
function lowEntropyText(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let seed = 12345;
  for (let i = 0; i < length; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    bytes[i] = seed & 0x10000 ? 0x61 : 0x62;
  }
  return bytes;
}

const GOOD_FIRST: ZipEntrySpec = { name: "index.js", data: "console.log('first entry, written before the bad one')\n" };
const THREE_MB = lowEntropyText(3 * 1024 * 1024);
const ZEROS = new Uint8Array(1536 * 1024);

// Each archive starts with a harmless file, so an extraction that stops at the bad entry has
// already written something: the tree comparison proves it was removed.
const HOSTILE: { attack: string; code: string; zip: () => Uint8Array<ArrayBuffer> }[] = [
  { attack: "a `..` entry", code: "ARCHIVE_PATH_TRAVERSAL", zip: () => makeZip([GOOD_FIRST, { name: "../escaped.js", data: "x" }]) },
  { attack: "a `..` in the middle of a path", code: "ARCHIVE_PATH_TRAVERSAL", zip: () => makeZip([GOOD_FIRST, { name: "app/../../escaped.js", data: "x" }]) },
  { attack: "an absolute path", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([GOOD_FIRST, { name: "/tmp/escaped.js", data: "x" }]) },
  { attack: "a backslash path", code: "ARCHIVE_UNSAFE_PATH", zip: () => makeZip([GOOD_FIRST, { name: "..\\escaped.js", data: "x" }]) },
  { attack: "a symlink entry", code: "ARCHIVE_UNSAFE_ENTRY", zip: () => makeZip([GOOD_FIRST, { name: "passwd", data: "/etc/passwd", unixMode: 0o120777 }]) },
  { attack: "a FIFO entry", code: "ARCHIVE_UNSAFE_ENTRY", zip: () => makeZip([GOOD_FIRST, { name: "pipe", unixMode: 0o010644 }]) },
  { attack: "a device entry", code: "ARCHIVE_UNSAFE_ENTRY", zip: () => makeZip([GOOD_FIRST, { name: "null", unixMode: 0o020666 }]) },
  {
    attack: "more entries than PLATFORM_MAX_ARCHIVE_ENTRIES",
    code: "ARCHIVE_TOO_MANY_ENTRIES",
    zip: () => makeZip(Array.from({ length: MAX_ARCHIVE_ENTRIES + 1 }, (_, i) => ({ name: `f${i}.txt`, data: "x" }))),
  },
  {
    attack: "more uncompressed bytes than PLATFORM_MAX_UNCOMPRESSED_BYTES",
    code: "ARCHIVE_TOO_LARGE",
    zip: () => makeZip([GOOD_FIRST, { name: "big.txt", data: THREE_MB }]),
  },
  {
    attack: "too many bytes behind a header that claims 100",
    code: "ARCHIVE_TOO_LARGE",
    zip: () => makeZip([GOOD_FIRST, { name: "big.txt", data: THREE_MB, uncompressedSize: 100 }]),
  },
  { attack: "a ratio bomb over 100:1", code: "ARCHIVE_RATIO_EXCEEDED", zip: () => makeZip([GOOD_FIRST, { name: "zeros.bin", data: ZEROS }]) },
  {
    attack: "a ratio bomb behind a header that claims 1000 bytes",
    code: "ARCHIVE_RATIO_EXCEEDED",
    zip: () => makeZip([GOOD_FIRST, { name: "zeros.bin", data: ZEROS, uncompressedSize: 1000 }]),
  },
  { attack: "bytes that are not a ZIP", code: "ARCHIVE_INVALID", zip: () => new TextEncoder().encode("this is not a zip archive, just text") as Uint8Array<ArrayBuffer> },
  { attack: "a truncated ZIP", code: "ARCHIVE_INVALID", zip: () => appZip({ "index.js": "x".repeat(5000), "b.js": "y" }).slice(0, 200) },
  {
    attack: "a deflate stream that does not inflate",
    code: "ARCHIVE_INVALID",
    zip: () => makeZip([GOOD_FIRST, { name: "broken.js", data: "hello", method: 8, rawData: new Uint8Array([0xff, 0xff, 0xff, 0xff]) }]),
  },
  { attack: "a checksum that does not match", code: "ARCHIVE_INVALID", zip: () => makeZip([GOOD_FIRST, { name: "tampered.js", data: "hello", crc32: 0xdeadbeef }]) },
  { attack: "an encrypted entry", code: "ARCHIVE_ENCRYPTED", zip: () => makeZip([GOOD_FIRST, { name: "secret.js", data: "hello", flags: 1 }]) },
];

beforeAll(async () => {
  server = await TestServer.start({
    PLATFORM_MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES),
    PLATFORM_MAX_ARCHIVE_ENTRIES: String(MAX_ARCHIVE_ENTRIES),
    PLATFORM_MAX_UNCOMPRESSED_BYTES: String(MAX_UNCOMPRESSED_BYTES),
  });
  key = (await server.createKey("uploads")).key;
  // The uploads spool folder is made by the first upload; have it exist before any tree is compared.
  const warmUp = await server.request("POST", "/api/apps/inspect-env", { key, body: uploadForm({}, appZip({ "index.js": "" })) });
  expect(warmUp.status).toBe(200);
});
afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

describe("hostile archives are refused and leave nothing on disk", () => {
  for (const { attack, code, zip } of HOSTILE) {
    test(`${attack}: ${code} on deploy and on inspect-env`, async () => {
      const treeBefore = dataDirTree(server.dataDir);
      const appsBefore = await appList();
      const archive = zip();

      const deployed = await deployZip(server, key, validFields("hostile"), archive);
      expectError(deployed, 400, code);
      const inspected = await server.request("POST", "/api/apps/inspect-env", { key, body: uploadForm({}, archive) });
      expectError(inspected, 400, code);

      expect(await appList()).toEqual(appsBefore);
      expect(dataDirTree(server.dataDir)).toEqual(treeBefore);
    });
  }
});

describe("upload size limit", () => {
  test("the limits are published in /api/platform/config", async () => {
    const config = await server.request("GET", "/api/platform/config");
    expect(config.status).toBe(200);
    expect(config.body.uploadLimits).toEqual({
      maxUploadBytes: MAX_UPLOAD_BYTES,
      maxArchiveEntries: MAX_ARCHIVE_ENTRIES,
      maxUncompressedBytes: MAX_UNCOMPRESSED_BYTES,
    });
  });

  const storedZipOf = (bytes: number) => makeZip([{ name: "blob.bin", data: crypto.getRandomValues(new Uint8Array(bytes)), method: 0 }]);

  for (const megabytes of [1.5, 4]) {
    test(`a ${megabytes} MB upload gets 413 PAYLOAD_TOO_LARGE on deploy and inspect-env`, async () => {
      const treeBefore = dataDirTree(server.dataDir);
      const appsBefore = await appList();
      const archive = storedZipOf(megabytes * 1024 * 1024);
      expectError(await deployZip(server, key, validFields("too-big"), archive), 413, "PAYLOAD_TOO_LARGE");
      expectError(await server.request("POST", "/api/apps/inspect-env", { key, body: uploadForm({}, archive) }), 413, "PAYLOAD_TOO_LARGE");
      expect(await appList()).toEqual(appsBefore);
      expect(dataDirTree(server.dataDir)).toEqual(treeBefore);
    });
  }

  test("a chunked upload without Content-Length is cut off at the limit with 413", async () => {
    const treeBefore = dataDirTree(server.dataDir);
    const boundary = "----platform-test-boundary";
    const head = new TextEncoder().encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nchunked\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="runtime"\r\n\r\nnode\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="memoryMB"\r\n\r\n64\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="app.zip"\r\nContent-Type: application/zip\r\n\r\n`,
    );
    const chunk = crypto.getRandomValues(new Uint8Array(64 * 1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(head);
        if (sent >= 1.5 * MAX_UPLOAD_BYTES) {
          controller.enqueue(new TextEncoder().encode(`\r\n--${boundary}--\r\n`));
          return controller.close();
        }
        controller.enqueue(chunk);
        sent += chunk.length;
      },
    });
    const response = await fetch(`${server.baseUrl}/api/apps/deploy`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    });
    const answer = { status: response.status, headers: response.headers, body: await response.json() };
    await server.assertDocumented("POST", "/api/apps/deploy", answer);
    expectError(answer, 413, "PAYLOAD_TOO_LARGE");
    expect(dataDirTree(server.dataDir)).toEqual(treeBefore);
  });
});

describe("deploy form validation", () => {
  const zip = appZip({ "index.html": "<h1>never deployed</h1>" });
  const cases: { what: string; fields: Record<string, string>; file?: boolean; mentions: string }[] = [
    { what: "no file", fields: validFields("no-file"), file: false, mentions: "'file'" },
    { what: "no name", fields: { runtime: "node", memoryMB: "64" }, mentions: "'name'" },
    { what: "an invalid name", fields: { ...validFields("x"), name: "Not_A Name!" }, mentions: "'name'" },
    { what: "no runtime", fields: { name: "no-runtime", memoryMB: "64" }, mentions: "'runtime'" },
    { what: "an unknown runtime", fields: { ...validFields("ruby-app"), runtime: "ruby" }, mentions: "'runtime'" },
    { what: "no memoryMB", fields: { name: "no-memory", runtime: "node" }, mentions: "'memoryMB'" },
    { what: "a non-numeric memoryMB", fields: { ...validFields("mem-text"), memoryMB: "lots" }, mentions: "'memoryMB'" },
    { what: "a memoryMB below the minimum", fields: { ...validFields("mem-low"), memoryMB: "16" }, mentions: "'memoryMB'" },
    { what: "a memoryMB above the maximum", fields: { ...validFields("mem-high"), memoryMB: "99999" }, mentions: "'memoryMB'" },
    { what: "exposePort 0", fields: { ...validFields("port-zero"), exposePort: "0" }, mentions: "'exposePort'" },
    { what: "exposePort 70000", fields: { ...validFields("port-high"), exposePort: "70000" }, mentions: "'exposePort'" },
    { what: "a fractional exposePort", fields: { ...validFields("port-frac"), exposePort: "80.5" }, mentions: "'exposePort'" },
    { what: "a subdomain that is no DNS label", fields: { ...validFields("sub-bad"), subdomain: "Not_A_Label" }, mentions: "'subdomain'" },
    { what: "a subdomain starting with a dash", fields: { ...validFields("sub-dash"), subdomain: "-dash" }, mentions: "'subdomain'" },
    { what: "envVars that are not JSON", fields: { ...validFields("env-json"), envVars: "{not json" }, mentions: "envVars" },
    { what: "envVars that are a JSON array", fields: { ...validFields("env-array"), envVars: '["A"]' }, mentions: "envVars" },
    { what: "an envVars value that is not a string", fields: { ...validFields("env-number"), envVars: '{"LIMIT": 5}' }, mentions: "envVars.LIMIT" },
    { what: "an envVars name with a dash", fields: { ...validFields("env-name"), envVars: '{"BAD-NAME": "x"}' }, mentions: "envVars name 'BAD-NAME'" },
    { what: "an envVars name starting with a digit", fields: { ...validFields("env-digit"), envVars: '{"1ST": "x"}' }, mentions: "envVars name '1ST'" },
    { what: "envVars setting PORT", fields: { ...validFields("env-port"), envVars: '{"PORT": "80"}' }, mentions: "envVars.PORT" },
    { what: "an autoRestart that is not a boolean", fields: { ...validFields("restart-maybe"), autoRestart: "maybe" }, mentions: "'autoRestart'" },
  ];

  for (const { what, fields, file, mentions } of cases) {
    test(`${what}: 400 VALIDATION_FAILED naming the field`, async () => {
      const treeBefore = dataDirTree(server.dataDir);
      const appsBefore = await appList();
      const response = await server.request("POST", "/api/apps/deploy", { key, body: uploadForm(fields, file === false ? null : zip) });
      expectError(response, 400, "VALIDATION_FAILED");
      expect(response.body.error).toContain(mentions);
      expect(await appList()).toEqual(appsBefore);
      expect(dataDirTree(server.dataDir)).toEqual(treeBefore);
    });
  }

  test("inspect-env without a file: 400 naming the field", async () => {
    const response = await server.request("POST", "/api/apps/inspect-env", { key, body: uploadForm({ name: "x" }, null) });
    expectError(response, 400, "VALIDATION_FAILED");
    expect(response.body.error).toContain("'file'");
  });

  test("an unknown machineId: 400 UNKNOWN_MACHINE", async () => {
    const treeBefore = dataDirTree(server.dataDir);
    const appsBefore = await appList();
    const response = await deployZip(server, key, { ...validFields("elsewhere"), machineId: "mars-1" }, zip);
    expectError(response, 400, "UNKNOWN_MACHINE");
    expect(response.body.error).toContain("mars-1");
    expect(await appList()).toEqual(appsBefore);
    expect(dataDirTree(server.dataDir)).toEqual(treeBefore);
  });

  for (const path of ["/api/apps/deploy", "/api/apps/inspect-env"]) {
    test(`${path} refuses a body that is not multipart with 415`, async () => {
      expectError(await server.request("POST", path, { key, body: { ...validFields("json"), file: "UEsDBA==" } }), 415, "UNSUPPORTED_MEDIA_TYPE");
      const urlEncoded = await server.request("POST", path, {
        key,
        body: "name=form&runtime=node&memoryMB=64",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      expectError(urlEncoded, 415, "UNSUPPORTED_MEDIA_TYPE");
    });
  }
});

describe("archive layout", () => {
  test("a single top folder is stripped and __MACOSX is ignored", async () => {
    const zip = makeZip([
      { name: "site/" },
      { name: "site/index.html", data: "<h1>from the top folder</h1>" },
      { name: "site/about/index.html", data: "<h1>about</h1>" },
      { name: "__MACOSX/" },
      { name: "__MACOSX/site/._index.html", data: "\x00\x05\x16\x07AppleDouble junk" },
      { name: "site/.DS_Store", data: "junk" },
    ]);
    const deployed = await deployZip(server, key, { name: "mac-site", runtime: "node", memoryMB: "64" }, zip);
    expect(deployed.status).toBe(202);
    const app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
    const build = await server.request("GET", `/api/apps/${app.id}/builds/${deployed.body.buildId}`, { key });
    expect({ status: app.status, log: build.body.log }).toMatchObject({ status: "running", log: expect.stringContaining("static site") });
    const home = await viaProxy(server, app.subdomain, "/");
    expect(home.status).toBe(200);
    expect(await home.text()).toBe("<h1>from the top folder</h1>");
    expect(await (await viaProxy(server, app.subdomain, "/about/")).text()).toBe("<h1>about</h1>");
    // The kept source tree is the folder's content, without the Mac junk.
    const sourceDir = join(server.dataDir, "apps", app.id, "source");
    expect(readdirSync(sourceDir, { recursive: true }).map(String).sort()).toEqual(["about", "about/index.html", "index.html"]);
  });
});

describe("inspect-env", () => {
  test("lists every variable with its files, lines and example value; keeps and deploys nothing", async () => {
    const canary = `canary-${crypto.randomUUID()}`;
    const zip = appZip({
      "shop/.env.example": "# copy to .env\nDATABASE_URL=postgres://localhost/shop\nAPI_TOKEN=\n",
      "shop/.env": `DATABASE_URL=${canary}\nLOCAL_ONLY="${canary}"\n`,
      "shop/src/server.js":
        "const url = process.env.DATABASE_URL;\n" +
        'const token = process.env["API_TOKEN"];\n' +
        "const port = process.env.PORT;\n",
      "shop/web/main.ts": "export const title = import.meta.env.VITE_TITLE;\n\nconst region = Bun.env.REGION;\n",
      "shop/worker.py":
        "import os\n" +
        'a = os.environ["PY_A"]\n' +
        'b = os.environ.get("PY_B")\n' +
        'c = os.getenv("PY_C")\n',
    });
    const treeBefore = dataDirTree(server.dataDir);
    const appsBefore = await appList();
    const response = await server.request("POST", "/api/apps/inspect-env", { key, body: uploadForm({}, zip) });
    expect(response.status).toBe(200);
    const byName = Object.fromEntries(response.body.variables.map((variable: any) => [variable.name, variable]));
    expect(Object.keys(byName).sort()).toEqual(["API_TOKEN", "DATABASE_URL", "LOCAL_ONLY", "PORT", "PY_A", "PY_B", "PY_C", "REGION", "VITE_TITLE"]);
    expect(byName.DATABASE_URL).toMatchObject({
      hasExampleValue: true,
      exampleValue: "postgres://localhost/shop",
      references: [
        { file: ".env", line: 1 },
        { file: ".env.example", line: 2 },
        { file: "src/server.js", line: 1 },
      ],
    });
    expect(byName.API_TOKEN).toMatchObject({
      hasExampleValue: false,
      references: [
        { file: ".env.example", line: 3 },
        { file: "src/server.js", line: 2 },
      ],
    });
    expect(byName.API_TOKEN.exampleValue).toBeUndefined();
    expect(byName.LOCAL_ONLY).toMatchObject({ hasExampleValue: false, references: [{ file: ".env", line: 2 }] });
    expect(byName.PORT).toMatchObject({ builtin: true, required: false, references: [{ file: "src/server.js", line: 3 }] });
    expect(byName.VITE_TITLE).toMatchObject({ hasExampleValue: false, required: true, references: [{ file: "web/main.ts", line: 1 }] });
    expect(byName.REGION).toMatchObject({ references: [{ file: "web/main.ts", line: 3 }] });
    expect(byName.PY_A).toMatchObject({ references: [{ file: "worker.py", line: 2 }] });
    expect(byName.PY_B).toMatchObject({ references: [{ file: "worker.py", line: 3 }] });
    expect(byName.PY_C).toMatchObject({ references: [{ file: "worker.py", line: 4 }] });

    // The real .env's values are never read into the answer.
    expect(JSON.stringify(response.body)).not.toContain(canary);
    expect(JSON.stringify(response.headers.toJSON())).not.toContain(canary);
    expect(await appList()).toEqual(appsBefore);
    expect(dataDirTree(server.dataDir)).toEqual(treeBefore);
  });
});
