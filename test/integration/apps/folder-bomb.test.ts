// Folder bombs: ZIPs tiny on the wire whose paths imply thousands of folders. Too deep a path,
// too many implied folders, or too many folders at 4 KiB each are refused before anything is
// written; a deep tree that is allowed is extracted, built, refused late, deleted, or found at
// start as a leftover without ever stalling the server: a lag probe times a cheap request every
// ~20 ms and must stay under 100 ms.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { dataDirTree } from "../../helpers/data-dir";
import { appZip, deleteAllApps, deployZip, waitForStatus } from "../../helpers/apps";
import { startLagProbe } from "../../helpers/event-loop-lag";
import { folderBombZip } from "../../helpers/zip";

const MAX_LAG_MS = 100;
/** Room for 12,288 entries at 4 KiB each: the deep tree below fits, the bigger one does not. */
const MAX_UNCOMPRESSED_BYTES = 48 * 1024 * 1024;
const MAX_ARCHIVE_ENTRIES = 20_000;
const INDEX_HTML = { name: "index.html", data: "<h1>deep</h1>" };
/** 360 chains 30 segments deep: 10,440 folders + 361 files, ~44 MB charged. Allowed. */
const DEEP_TREE = folderBombZip(360, 30, [INDEX_HTML]);

let server: TestServer;
let key: string;

function expectError(response: { status: number; body: any }, status: number, code: string) {
  expect({ status: response.status, body: response.body }).toEqual({ status, body: { success: false, error: expect.any(String), code } });
}

function inspectEnv(zip: Uint8Array<ArrayBuffer>) {
  const form = new FormData();
  form.set("file", new File([zip], "app.zip", { type: "application/zip" }));
  return server.request("POST", "/api/apps/inspect-env", { key, body: form });
}

/** Runs `abuse` under the lag probe; returns its result and the slowest probe answer. */
async function underProbe<T>(abuse: () => Promise<T>): Promise<{ result: T; maxLagMs: number; samples: number }> {
  const probe = startLagProbe(server);
  const result = await abuse();
  const maxLagMs = await probe.stop();
  return { result, maxLagMs, samples: probe.latencies.length };
}

beforeAll(async () => {
  server = await TestServer.start({
    PLATFORM_MAX_UNCOMPRESSED_BYTES: String(MAX_UNCOMPRESSED_BYTES),
    PLATFORM_MAX_ARCHIVE_ENTRIES: String(MAX_ARCHIVE_ENTRIES),
  });
  key = (await server.createKey("folder-bomb", "folder-bomb")).key;
  // The uploads spool folder is made by the first upload; have it exist before any tree is compared.
  expect((await inspectEnv(appZip({ "index.js": "" }))).status).toBe(200);
});

afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

describe("folder bombs are refused before anything is written", () => {
  const REFUSED = [
    { what: "the recipe: 40 empty files, each 500 folders deep (83 KB)", zip: () => folderBombZip(40, 501), code: "ARCHIVE_TOO_DEEP" },
    { what: "700 chains 30 deep: 20,300 implied folders count as entries", zip: () => folderBombZip(700, 30), code: "ARCHIVE_TOO_MANY_ENTRIES" },
    { what: "500 chains 30 deep: 15,000 empty entries charged 4 KiB each", zip: () => folderBombZip(500, 30), code: "ARCHIVE_TOO_LARGE" },
  ];
  for (const { what, zip, code } of REFUSED) {
    test(`${what}: 400 ${code} on deploy and inspect-env, the server never stalls`, async () => {
      const archive = zip();
      const treeBefore = dataDirTree(server.dataDir);
      const { result, maxLagMs, samples } = await underProbe(async () => ({
        deployed: await deployZip(server, key, { name: "bomb", runtime: "node", memoryMB: "64" }, archive),
        inspected: await inspectEnv(archive),
      }));
      expectError(result.deployed, 400, code);
      expectError(result.inspected, 400, code);
      expect(dataDirTree(server.dataDir)).toEqual(treeBefore);
      expect((await server.request("GET", "/api/apps/", { key })).body.apps).toEqual([]);
      expect(samples).toBeGreaterThan(0);
      expect(maxLagMs).toBeLessThan(MAX_LAG_MS);
    }, 120_000);
  }
});

describe("a deep tree that is allowed never stalls the server", () => {
  test("inspect-env extracts and scans it, then removes it, under 100 ms of lag", async () => {
    const treeBefore = dataDirTree(server.dataDir);
    const { result, maxLagMs } = await underProbe(() => inspectEnv(DEEP_TREE));
    expect(result.status).toBe(200);
    expect(dataDirTree(server.dataDir)).toEqual(treeBefore);
    expect(maxLagMs).toBeLessThan(MAX_LAG_MS);
  }, 120_000);

  test("a deploy refused after extraction (SUBDOMAIN_TAKEN) removes the tree under 100 ms of lag", async () => {
    const holder = await deployZip(server, key, { name: "holder", runtime: "node", memoryMB: "64", subdomain: "bomb-taken" }, appZip({ "index.html": "holder" }));
    expect(holder.status).toBe(202);
    await waitForStatus(server, key, holder.body.app.id, ["running"]);
    const treeBefore = dataDirTree(server.dataDir);

    const { result, maxLagMs } = await underProbe(() =>
      deployZip(server, key, { name: "deep-late", runtime: "node", memoryMB: "64", subdomain: "bomb-taken" }, DEEP_TREE),
    );
    expectError(result, 409, "SUBDOMAIN_TAKEN");
    expect(dataDirTree(server.dataDir)).toEqual(treeBefore);
    expect(maxLagMs).toBeLessThan(MAX_LAG_MS);
  }, 180_000);

  test("deploying, building, redeploying and deleting an app with the deep tree stays under 100 ms of lag", async () => {
    const deployed = await underProbe(async () => {
      const response = await deployZip(server, key, { name: "deep-app", runtime: "node", memoryMB: "64" }, DEEP_TREE);
      expect(response.status).toBe(202);
      await waitForStatus(server, key, response.body.app.id, ["running"]);
      return response.body.app.id as string;
    });
    const appId = deployed.result;
    expect(deployed.maxLagMs).toBeLessThan(MAX_LAG_MS);
    const appDir = join(server.dataDir, "apps", appId);
    expect(existsSync(join(appDir, "source", "359", ...Array(28).fill("d"), "f"))).toBe(true);

    // A redeploy makes the new tree the source when its build starts; the old one is deleted meanwhile.
    const trashDir = join(server.dataDir, "trash");
    const redeployed = await underProbe(async () => {
      const response = await deployZip(server, key, { name: "deep-app", runtime: "node", memoryMB: "64" }, folderBombZip(300, 30, [INDEX_HTML]));
      expect(response.status).toBe(202);
      let build: any;
      for (const deadline = Date.now() + 120_000; Date.now() < deadline; await Bun.sleep(250)) {
        build = (await server.request("GET", `/api/apps/${appId}/builds/${response.body.buildId}`, { key })).body.build;
        if (build?.status === "succeeded" || build?.status === "failed") break;
      }
      for (const deadline = Date.now() + 60_000; existsSync(trashDir) && readdirSync(trashDir).length > 0 && Date.now() < deadline; ) await Bun.sleep(100);
      return build;
    });
    expect(redeployed.result.status).toBe("succeeded");
    expect(existsSync(join(appDir, "source", "359"))).toBe(false);
    expect(readdirSync(trashDir)).toEqual([]);
    expect(redeployed.maxLagMs).toBeLessThan(MAX_LAG_MS);

    // DELETE may answer before the files are gone: the probe runs until they are.
    const deleted = await underProbe(async () => {
      const response = await server.request("DELETE", `/api/apps/${appId}`, { key });
      for (const deadline = Date.now() + 60_000; existsSync(appDir) && Date.now() < deadline; ) await Bun.sleep(100);
      return response;
    });
    expect([200, 202]).toContain(deleted.result.status);
    expect(existsSync(appDir)).toBe(false);
    expect(deleted.maxLagMs).toBeLessThan(MAX_LAG_MS);
  }, 300_000);

  test("leftover trees a restart finds (uploads, trash) are removed at start under 100 ms of lag", async () => {
    await server.stop();
    const leftovers = [join(server.dataDir, "uploads", "staging-cut-short"), join(server.dataDir, "trash", "deletion-cut-short")];
    for (const leftover of leftovers) {
      for (let chain = 0; chain < 180; chain++) mkdirSync(join(leftover, String(chain), ...Array(28).fill("d")), { recursive: true });
    }
    await server.boot();
    const { maxLagMs } = await underProbe(async () => {
      for (const deadline = Date.now() + 60_000; leftovers.some(existsSync) && Date.now() < deadline; ) await Bun.sleep(100);
    });
    expect(leftovers.filter(existsSync)).toEqual([]);
    expect(maxLagMs).toBeLessThan(MAX_LAG_MS);
  }, 180_000);
});
