// Volumes in the dashboard, in headless Chromium against the real server and engine: an app
// deployed from the ZIP form with a volume row; its Volumes tab with the volume's measured size and
// release strategy; a backup made, verified and restored from the page (the confirmation says the
// app is stopped and started again), the data written after it gone and the data before it back;
// the app deleted keeping its volume, shown detached on the Volumes page (a viewer there sees it
// without any attach, delete or backup action), attached to another app which then reads the data;
// a second volume added and detached in that app's Volumes tab, then deleted from its page; and
// that app deleted with "also delete its volumes", which leaves none. The steps build on each
// other, in order.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { BrowserContext, Page } from "playwright-core";
import { appZip, deployZip, viaProxy, waitForStatus } from "../helpers/apps";
import { seriousViolations } from "../helpers/axe";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { collectPageErrors, logInThroughPage, ownerHoldingKey, tablesScrollingSideways } from "../helpers/dashboard-page";
import { removeWorkspaceNetworks } from "../helpers/databases";
import { TestServer, type CreatedKey } from "../helpers/server";

setDefaultTimeout(180_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };
const VIEWER = { email: "viewer@example.com", password: "viewer password 1" };
const SCREENSHOTS = "test/e2e/screenshots/volumes";

let server: TestServer;
let chromium: TestBrowser;
let page: Page;
let key: CreatedKey;
let notesId: string;
let volumeId: string;
let readerId: string;
const pageErrors: string[] = [];

/** GET /write?text= appends a line to /app/data/notes; every answer is the file as it is. */
const notesApp = appZip({
  "package.json": JSON.stringify({ name: "notes", scripts: { start: "node server.js" } }),
  "server.js": `const fs = require("fs");
const file = "/app/data/notes";
require("http").createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname === "/write") fs.appendFileSync(file, url.searchParams.get("text") + "\\n");
  let notes = "";
  try { notes = fs.readFileSync(file, "utf8"); } catch {}
  res.end(notes);
}).listen(process.env.PORT);
`,
});

const api = (method: string, path: string, body?: unknown) => server.request(method, path, { key: key.key, body });
const notesOf = async (subdomain: string, path = "/") => {
  const answer = await viaProxy(server, subdomain, path);
  expect(answer.status).toBe(200);
  return answer.text();
};
const openTab = async (title: string) => {
  await page.getByRole("navigation", { name: "App" }).getByRole("link", { name: title, exact: true }).click();
  await page.getByRole("region", { name: title, exact: true }).waitFor();
};

/** A screenshot of the page as it is now, which must have no serious or critical accessibility violation (axe-core). */
async function shoot(on: Page, step: string) {
  await on.screenshot({ path: `${SCREENSHOTS}-${step}.png`, fullPage: true });
  expect({ step, violations: await seriousViolations(on) }).toEqual({ step, violations: [] });
}

beforeAll(async () => {
  [server, chromium] = await Promise.all([TestServer.start({ PLATFORM_VOLUME_SIZE_REFRESH_SECONDS: "0" }), launchBrowser()]);
  key = await ownerHoldingKey(server, OWNER, "volumes page test");
  const invitation = await api("POST", "/api/organization/invitations", { email: VIEWER.email, role: "viewer" });
  const accepted = await server.request("POST", `/api/organization/invitations/${invitation.body.invitation.id}/accept`, { body: { password: VIEWER.password } });
  expect(accepted.status).toBeLessThan(300);
  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  collectPageErrors(page, pageErrors);
}, 120_000);

afterAll(async () => {
  await chromium?.close();
  if (server && key) {
    for (const app of (await api("GET", "/api/apps/")).body.apps ?? []) await api("DELETE", `/api/apps/${app.id}?deleteVolumes=true`);
    for (let attempt = 0; attempt < 240 && ((await api("GET", "/api/apps/")).body.apps ?? []).length > 0; attempt++) await Bun.sleep(250);
    for (const volume of (await api("GET", "/api/volumes/")).body.volumes ?? []) await api("DELETE", `/api/volumes/${volume.id}`);
    removeWorkspaceNetworks(key.workspaceId);
  }
  await server?.stop();
}, 120_000);

describe("volumes in the dashboard", () => {
  test("the ZIP form deploys an app with a volume row, and the app keeps its data there", async () => {
    await page.goto(`${server.baseUrl}/#/apps/new`);
    await logInThroughPage(page, OWNER);
    const form = page.getByRole("form", { name: "Deploy from a ZIP" });
    await form.getByLabel(/^Name/).fill("notes");
    await form.getByLabel("Runtime").selectOption("node");
    await form.getByLabel("Memory (MB)").fill("128");
    await form.getByLabel("ZIP file").setInputFiles({ name: "notes.zip", mimeType: "application/zip", buffer: Buffer.from(notesApp) });
    const volumes = form.getByRole("group", { name: "Volumes (optional)" });
    // A row added and removed again sends nothing; the one left is the app's volume.
    await volumes.getByRole("button", { name: "Add a volume" }).click();
    await volumes.getByRole("button", { name: "Remove volume 1" }).click();
    expect(await volumes.getByLabel("Volume 1 name").count()).toBe(0);
    await volumes.getByRole("button", { name: "Add a volume" }).click();
    await volumes.getByLabel("Volume 1 name").fill("notes");
    await volumes.getByLabel("Volume 1 mount path").fill("/app/data");
    await shoot(page, "deploy-form");
    await form.getByRole("button", { name: "Deploy" }).click();
    await page.getByRole("heading", { name: "Build log" }).waitFor();
    notesId = (await api("GET", "/api/apps/")).body.apps.find((candidate: any) => candidate.name === "notes").id;
    // Through the API, so that a failed build says why (the machine may be slow: npm runs in the build).
    const app = await waitForStatus(server, key.key, notesId, ["running", "failed"], 170_000);
    expect({ status: app.status, statusReason: app.statusReason }).toMatchObject({ status: "running" });
    await page.getByRole("status").getByText("notes is running").waitFor();
    volumeId = app.volumes[0].id;
    expect(app.volumes).toMatchObject([{ id: expect.stringMatching(/^vol_/), name: "notes", mountPath: "/app/data" }]);
    expect(app.releaseStrategy).toBe("stop-first");
    expect(await notesOf(app.subdomain, "/write?text=before")).toBe("before\n");
  });

  test("the Volumes tab lists the volume with its measured size and the release strategy", async () => {
    await page.goto(`${server.baseUrl}/#/apps/${notesId}`);
    await openTab("Volumes");
    const table = page.getByRole("table", { name: "Volumes" });
    const row = table.getByRole("row").filter({ hasText: "notes" });
    await row.getByText("/app/data").waitFor();
    expect(await table.getByRole("columnheader").allTextContents()).toEqual(["Name", "Mount path", "Size", ""]);
    // The engine measured it: bytes, not the dash of a volume never measured.
    await row.getByText(/^\d+(\.\d)? (B|KB)$/).waitFor({ timeout: 15_000 });
    const measured = (await api("GET", `/api/volumes/${volumeId}`)).body.volume.sizeBytes;
    expect(measured).toBeGreaterThan(0);
    const form = page.getByRole("form", { name: "Volumes and release" });
    expect(await form.getByLabel("Volume 1 name").inputValue()).toBe("notes");
    expect(await form.getByLabel("Volume 1 name").getAttribute("readonly")).not.toBeNull();
    expect(await form.getByLabel("Release strategy").inputValue()).toBe("stop-first");
    expect(await tablesScrollingSideways(page)).toEqual([]);
    await shoot(page, "tab");

    // The strategy is a setting of its own: start first saved, then back to the default.
    await form.getByLabel("Release strategy").selectOption("start-first");
    await form.getByRole("button", { name: "Save volumes" }).click();
    await page.getByRole("status").getByText(/^Saved\./).waitFor();
    expect((await api("GET", `/api/apps/${notesId}`)).body.app.releaseStrategy).toBe("start-first");
    await page.getByRole("form", { name: "Volumes and release" }).getByRole("button", { name: "Default release strategy" }).click();
    await page.getByRole("status").getByText("Back to the default release strategy.").waitFor();
    expect((await api("GET", `/api/apps/${notesId}`)).body.app.releaseStrategy).toBe("stop-first");
    expect((await api("GET", `/api/apps/${notesId}`)).body.app.volumes.map((volume: any) => volume.id)).toEqual([volumeId]);
  });

  test("a backup is made and verified from the page, and a restore brings back the data of its time", async () => {
    await page.getByRole("link", { name: "Backups of notes" }).click();
    await page.getByRole("heading", { name: /^Volume notes/ }).waitFor();
    await page.getByRole("button", { name: "Back up now" }).click();
    const backups = page.getByRole("table", { name: "Backups" });
    const row = backups.getByRole("row").filter({ hasText: "manual" });
    await row.getByText("completed", { exact: true }).waitFor({ timeout: 60_000 });
    const [backup] = (await api("GET", `/api/volumes/${volumeId}/backups`)).body.backups;
    expect(backup.status).toBe("completed");
    expect(await backups.getByRole("columnheader").allTextContents()).toEqual(["Taken", "Type", "Status", "Size", "SHA-256", "Verified", ""]);
    await row.getByTitle(backup.sha256).waitFor();
    expect(await row.getByRole("link", { name: "Download" }).getAttribute("href")).toBe(`/api/volumes/${volumeId}/backups/${backup.id}/download`);

    await row.getByRole("button", { name: `Verify backup of ${backup.createdAt}` }).click();
    await row.getByText(/^passed/).waitFor({ timeout: 30_000 });
    expect(await row.getByText(/^passed/).getAttribute("title")).toMatch(/^1 files \(7 B\), \d+ folders/);
    await shoot(page, "backups");

    const app = (await api("GET", `/api/apps/${notesId}`)).body.app;
    expect(await notesOf(app.subdomain, "/write?text=after")).toBe("before\nafter\n");
    await row.getByRole("button", { name: `Restore backup of ${backup.createdAt}` }).click();
    const confirmation = page.getByRole("form", { name: "Restore backup" });
    await confirmation.getByText("The app notes is stopped, the volume's content is replaced by this backup (a pre-restore backup of the current content is taken first), and the app is started again (a stopped app stays stopped).").waitFor();
    expect(await confirmation.getByRole("button", { name: "Restore backup" }).isDisabled()).toBe(true);
    await confirmation.getByRole("textbox").fill("notes");
    await confirmation.getByRole("button", { name: "Restore backup" }).click();
    await page.getByRole("status").getByText("Restore started: notes is stopped, restored and started again.").waitFor();
    await page.getByRole("table", { name: "Restores" }).getByText("succeeded", { exact: true }).waitFor({ timeout: 90_000 });
    await waitForStatus(server, key.key, notesId, ["running"]);
    expect(await notesOf(app.subdomain)).toBe("before\n");
    await backups.getByRole("row").filter({ hasText: "pre-restore" }).getByText("completed", { exact: true }).waitFor();
  });

  test("the app deleted without its volumes leaves the volume detached on the Volumes page", async () => {
    await page.getByRole("group", { name: "App actions" }).getByRole("button", { name: "Delete…" }).click();
    const choice = page.getByLabel(/^Also delete its volumes \(notes\)/);
    expect(await choice.isChecked()).toBe(false);
    const dialog = page.getByRole("form", { name: "Delete app" });
    await dialog.getByRole("textbox").fill("notes");
    await dialog.getByRole("button", { name: "Delete app" }).click();
    await page.getByRole("heading", { level: 1, name: "Apps" }).waitFor();
    for (let attempt = 0; attempt < 240 && (await api("GET", `/api/apps/${notesId}`)).status !== 404; attempt++) await Bun.sleep(250);

    await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Volumes" }).click();
    await page.getByRole("heading", { level: 1, name: "Volumes" }).waitFor();
    const table = page.getByRole("table", { name: "Volumes" });
    const row = table.getByRole("row").filter({ hasText: "notes" });
    await row.getByText("detached", { exact: true }).waitFor({ timeout: 15_000 });
    expect(await table.getByRole("columnheader").allTextContents()).toEqual(["Name", "App", "Mount path", "Machine", "Size"]);
    await row.getByText("local", { exact: true }).waitFor();
    await row.getByText(/^\d+(\.\d)? (B|KB)$/).waitFor();
    expect(await tablesScrollingSideways(page)).toEqual([]);
    await shoot(page, "list-detached");
  });

  test("a viewer reads the detached volume and its backups, and is offered no attach, delete, backup or restore", async () => {
    const context: BrowserContext = await chromium.newContext();
    try {
      const viewer = await context.newPage();
      collectPageErrors(viewer, pageErrors);
      await viewer.goto(`${server.baseUrl}/#/volumes`);
      await logInThroughPage(viewer, VIEWER);
      await viewer.getByRole("table", { name: "Volumes" }).getByRole("link", { name: "notes" }).click();
      await viewer.getByRole("heading", { level: 1, name: "notes" }).waitFor();
      await viewer.getByRole("table", { name: "Backups" }).getByText("pre-restore").waitFor();
      expect(await viewer.getByRole("form").count()).toBe(0);
      for (const name of [/^Back up/, /^Verify/, /^Restore/, /^Delete/, "Attach", "Clear schedule"]) expect(await viewer.getByRole("button", { name }).count()).toBe(0);
      expect(await viewer.getByRole("link", { name: "Download" }).count()).toBe(0);
      expect((await viewer.getByRole("alert").allInnerTexts()).filter((text) => text.trim())).toEqual([]);
      await shoot(viewer, "viewer-volume");
    } finally {
      await context.close();
    }
  });

  test("the detached volume attached to another app from its page, which then reads the data", async () => {
    const deployed = await deployZip(server, key.key, { name: "reader", runtime: "node", memoryMB: "128" }, notesApp);
    expect(deployed.status).toBe(202);
    readerId = deployed.body.app.id;
    await waitForStatus(server, key.key, readerId, ["running"]);

    await page.getByRole("table", { name: "Volumes" }).getByRole("link", { name: "notes" }).click();
    await page.getByRole("heading", { level: 1, name: "notes" }).waitFor();
    const form = page.getByRole("form", { name: "Attach to an app" });
    await form.getByRole("combobox").selectOption({ label: "reader" });
    expect(await form.getByLabel("Mount path").inputValue()).toBe("/app/data");
    await shoot(page, "volume-detached");
    await form.getByRole("button", { name: "Attach" }).click();
    await page.getByRole("status").getByText("Attached to reader, which restarts with it.").waitFor();
    await page.getByRole("link", { name: "reader" }).first().waitFor();
    expect(await page.getByRole("form", { name: "Delete volume" }).count()).toBe(0);

    const reader = await waitForStatus(server, key.key, readerId, ["running"]);
    expect(reader.volumes.map((volume: any) => volume.id)).toEqual([volumeId]);
    let notes = "";
    for (let attempt = 0; attempt < 120 && notes !== "before\n"; attempt++, await Bun.sleep(250)) notes = await (await viaProxy(server, reader.subdomain)).text();
    expect(notes).toBe("before\n");
  });

  test("a viewer reads the app's volumes without the buttons that change them", async () => {
    const context: BrowserContext = await chromium.newContext();
    try {
      const viewer = await context.newPage();
      collectPageErrors(viewer, pageErrors);
      await viewer.goto(`${server.baseUrl}/#/apps/${readerId}/volumes`);
      await logInThroughPage(viewer, VIEWER);
      await viewer.getByRole("table", { name: "Volumes" }).getByText("/app/data").waitFor();
      await viewer.getByText("Your role in this workspace (viewer) can read the volumes, not change them.").waitFor();
      for (const name of [/^Detach/, "Add a volume", "Save volumes", "Default release strategy"]) expect(await viewer.getByRole("button", { name }).count()).toBe(0);
      expect(await viewer.getByLabel("Release strategy").isDisabled()).toBe(true);
    } finally {
      await context.close();
    }
  });

  test("a volume added and detached in the app's Volumes tab; the detached one deleted from its page once its name is typed", async () => {
    await page.goto(`${server.baseUrl}/#/apps/${readerId}/volumes`);
    const form = page.getByRole("form", { name: "Volumes and release" });
    await form.getByLabel("Volume 1 name").waitFor();
    await form.getByRole("button", { name: "Add a volume" }).click();
    await form.getByLabel("Volume 2 name").fill("cache");
    await form.getByLabel("Volume 2 mount path").fill("/app/cache");
    await form.getByRole("button", { name: "Save volumes" }).click();
    await page.getByRole("status").getByText("Saved. The app restarted with its volumes.").waitFor({ timeout: 60_000 });
    await page.getByRole("table", { name: "Volumes" }).getByText("/app/cache").waitFor();
    const twoVolumes = (await api("GET", `/api/apps/${readerId}`)).body.app.volumes;
    expect(twoVolumes.map(({ name, mountPath }: any) => ({ name, mountPath }))).toEqual([
      { name: "notes", mountPath: "/app/data" },
      { name: "cache", mountPath: "/app/cache" },
    ]);
    const cacheId = twoVolumes[1].id;

    await page.getByRole("form", { name: "Volumes and release" }).getByRole("button", { name: "Detach cache" }).click();
    await page.getByRole("form", { name: "Volumes and release" }).getByRole("button", { name: "Save volumes" }).click();
    await page.getByRole("status").getByText("Saved. The app restarted with its volumes.").waitFor({ timeout: 60_000 });
    expect((await api("GET", `/api/apps/${readerId}`)).body.app.volumes.map((volume: any) => volume.name)).toEqual(["notes"]);
    expect((await api("GET", `/api/volumes/${cacheId}`)).body.volume).toMatchObject({ detached: true, appId: null });
    await waitForStatus(server, key.key, readerId, ["running"]);

    await page.goto(`${server.baseUrl}/#/volumes/${cacheId}`);
    const confirmation = page.getByRole("form", { name: "Delete volume" });
    await confirmation.getByText("The volume cache, all its data and its backups (files and remote copies) are deleted.", { exact: false }).waitFor();
    expect(await confirmation.getByRole("button", { name: "Delete volume" }).isDisabled()).toBe(true);
    await confirmation.getByRole("textbox").fill("cach");
    expect(await confirmation.getByRole("button", { name: "Delete volume" }).isDisabled()).toBe(true);
    await confirmation.getByRole("textbox").fill("cache");
    await confirmation.getByRole("button", { name: "Delete volume" }).click();
    await page.getByRole("heading", { level: 1, name: "Volumes" }).waitFor();
    expect((await api("GET", `/api/volumes/${cacheId}`)).status).toBe(404);
    await page.getByRole("table", { name: "Volumes" }).getByRole("link", { name: "notes" }).waitFor();
    expect(await page.getByRole("table", { name: "Volumes" }).getByRole("link", { name: "cache" }).count()).toBe(0);
  });

  test("the app deleted with its volumes leaves none", async () => {
    await page.goto(`${server.baseUrl}/#/apps/${readerId}`);
    await page.getByRole("group", { name: "App actions" }).getByRole("button", { name: "Delete…" }).click();
    await page.getByLabel(/^Also delete its volumes \(notes\)/).check();
    const dialog = page.getByRole("form", { name: "Delete app" });
    await dialog.getByRole("textbox").fill("reader");
    await dialog.getByRole("button", { name: "Delete app" }).click();
    await page.getByRole("heading", { level: 1, name: "Apps" }).waitFor();
    for (let attempt = 0; attempt < 240 && (await api("GET", "/api/volumes/")).body.volumes.length > 0; attempt++) await Bun.sleep(250);
    expect((await api("GET", "/api/volumes/")).body.volumes).toEqual([]);
    await page.goto(`${server.baseUrl}/#/volumes`);
    await page.getByText("No volumes yet. An app gets one at deploy or in its Volumes tab.").waitFor();
    expect(pageErrors).toEqual([]);
  });
});
