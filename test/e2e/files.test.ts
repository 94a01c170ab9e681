// An app's file manager in headless Chromium against the real server and engine: the owner logs in,
// browses the deployed tree, edits server.js in the page and redeploys with the files (the app then
// answers with the new text), creates and renames files, and bulk renames with a conflict settled
// per row. The steps build on each other (one app), so they run in order.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "playwright-core";
import { strFromU8, unzipSync } from "fflate";
import { TestServer, type CreatedKey } from "../helpers/server";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../helpers/apps";
import { seriousViolations } from "../helpers/axe";
import { ownerHoldingKey, collectPageErrors, logInThroughPage } from "../helpers/dashboard-page";

setDefaultTimeout(150_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };
const APP_NAME = "files-page";
const SCREENSHOTS = "test/e2e/screenshots/files";
const serverSource = (greeting: string) => `require("http").createServer((req, res) => res.end(${JSON.stringify(greeting)})).listen(process.env.PORT);\n`;

let server: TestServer;
let chromium: TestBrowser;
let page: Page;
let key: CreatedKey;
let appId: string;
const pageErrors: string[] = [];

/** A screenshot of the page as it is now, which must have no serious or critical accessibility violation (axe-core). */
async function shoot(step: string) {
  await page.screenshot({ path: `${SCREENSHOTS}-${step}.png`, fullPage: true });
  expect({ step, violations: await seriousViolations(page) }).toEqual({ step, violations: [] });
}
const listing = () => page.locator("table.files-listing");
const names = async () => (await listing().locator("tbody tr td:first-child").allTextContents()).map((name) => name.trim());
/** Waits for a folder's heading and then its listing (a spinner shows while it loads). */
async function opened(heading: string) {
  await page.getByRole("heading", { name: heading }).waitFor();
  await listing().waitFor();
}

beforeAll(async () => {
  [server, chromium] = await Promise.all([TestServer.start(), launchBrowser()]);
  key = await ownerHoldingKey(server, OWNER, "files page test");
  const zip = appZip({
    "package.json": JSON.stringify({ name: APP_NAME, main: "server.js" }),
    "server.js": serverSource("first version"),
    "notes/a.txt": "a",
    "notes/b.txt": "b",
    "notes/a.md": "already here",
  });
  const deployed = await deployZip(server, key.key, { name: APP_NAME, runtime: "node", memoryMB: "128" }, zip);
  if (deployed.status !== 202) throw new Error(`deploy refused: ${JSON.stringify(deployed.body)}`);
  appId = deployed.body.app.id;
  await waitForStatus(server, key.key, appId, ["running"]);

  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  collectPageErrors(page, pageErrors);
});

afterAll(async () => {
  if (server && key) await deleteAllApps(server, key.key);
  await chromium?.close();
  await server?.stop();
});

describe("an app's file manager", () => {
  test("the owner logs in and browses the tree, folders first with sizes", async () => {
    await page.goto(`${server.baseUrl}/#/apps/${appId}/files`);
    await logInThroughPage(page, OWNER);

    await opened("Root folder");
    expect(await names()).toEqual(["notes/", "package.json", "server.js"]);
    const serverRow = listing().getByRole("row", { name: /server\.js/ });
    expect(await serverRow.textContent()).toContain(`${serverSource("first version").length} B`);

    await listing().getByRole("link", { name: "notes/" }).click();
    await opened("Folder notes");
    expect(await names()).toEqual(["a.md", "a.txt", "b.txt"]);
    await page.getByRole("navigation", { name: "Folder path" }).getByRole("link", { name: "Files" }).click();
    await opened("Root folder");
    await shoot("tree");
  });

  test("the whole tree downloads as a ZIP of the app's files", async () => {
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download as ZIP" }).click()]);
    expect(download.suggestedFilename()).toBe(`${APP_NAME}.zip`);
    const entries = unzipSync(new Uint8Array(await Bun.file((await download.path())!).arrayBuffer()));
    expect(Object.keys(entries).filter((name) => !name.endsWith("/")).sort()).toEqual(["notes/a.md", "notes/a.txt", "notes/b.txt", "package.json", "server.js"]);
    expect(strFromU8(entries["server.js"]!)).toBe(serverSource("first version"));
  });

  test("a file edited in the page and redeployed with the files is what the app serves", async () => {
    await listing().getByRole("link", { name: "server.js" }).click();
    const content = page.getByLabel("Content of server.js");
    await content.waitFor();
    expect(await content.inputValue()).toBe(serverSource("first version"));
    await content.fill(serverSource("edited in the dashboard"));
    await page.getByRole("status").getByText("Unsaved changes").waitFor();

    // Leaving with unsaved changes asks first; dismissing keeps the editor open.
    page.once("dialog", (dialog) => dialog.dismiss());
    await page.getByRole("link", { name: "Back to the folder" }).click();
    expect(await content.inputValue()).toBe(serverSource("edited in the dashboard"));

    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").getByText("Saved", { exact: true }).waitFor();
    const saved = await server.request("GET", `/api/apps/${appId}/fs/file?path=server.js`, { key: key.key });
    expect(saved.body.file.content).toBe(serverSource("edited in the dashboard"));

    await page.getByRole("button", { name: "Redeploy with these files" }).click();
    const buildLink = page.getByRole("status").getByRole("link");
    await buildLink.waitFor();
    const buildId = (await buildLink.textContent())!.trim();
    expect(await buildLink.getAttribute("href")).toBe(`#/apps/${appId}/builds/${buildId}`);
    await shoot("edited");

    let answer = "";
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; await Bun.sleep(500)) {
      answer = await (await viaProxy(server, APP_NAME)).text().catch(() => "");
      if (answer === "edited in the dashboard") break;
    }
    expect(answer).toBe("edited in the dashboard");
  });

  test("a file created, renamed and deleted in the page", async () => {
    await page.getByRole("link", { name: "Back to the folder" }).click();
    await opened("Root folder");
    await page.getByLabel("New file name").fill("draft.txt");
    await page.getByRole("button", { name: "Create file" }).click();
    await listing().getByRole("link", { name: "draft.txt" }).waitFor();

    await page.getByRole("button", { name: "Rename draft.txt" }).click();
    await page.getByLabel("New name").fill("final.txt");
    await page.getByRole("form", { name: "Rename draft.txt" }).getByRole("button", { name: "Rename" }).click();
    await listing().getByRole("link", { name: "final.txt" }).waitFor();

    await page.getByRole("button", { name: "Rename final.txt" }).click();
    await page.getByLabel("New name").fill("server.js");
    await page.getByRole("form", { name: "Rename final.txt" }).getByRole("button", { name: "Rename" }).click();
    await page.getByRole("form", { name: "Rename final.txt" }).getByRole("alert").filter({ hasText: /./ }).waitFor();
    await page.getByRole("button", { name: "Cancel" }).click();

    await page.getByRole("button", { name: "Delete final.txt" }).click();
    await page.getByRole("button", { name: "Yes, delete final.txt" }).click();
    await listing().getByRole("link", { name: "final.txt" }).waitFor({ state: "detached" });
    expect(await names()).toEqual(["notes/", "package.json", "server.js"]);
    await shoot("created-renamed-deleted");
  });

  test("a bulk rename previews a conflict, and the row set to rename gets a free name", async () => {
    await listing().getByRole("link", { name: "notes/" }).click();
    await opened("Folder notes");
    const form = page.getByRole("form", { name: "Bulk rename" });
    await form.getByLabel("Find").fill(".txt");
    await form.getByLabel("Replace with").fill(".md");
    await form.getByRole("button", { name: "Preview" }).click();
    await page.getByText("2 planned, 1 with a conflict.").waitFor();
    await shoot("bulk-preview");

    // Nothing changed yet.
    expect(await names()).toEqual(["a.md", "a.txt", "b.txt"]);
    await page.getByLabel("What to do with notes/a.txt").selectOption("rename");
    await page.getByRole("button", { name: "Apply the renames" }).click();
    await page.getByText("Done: 2 renamed, 0 overwritten, 0 skipped, 0 failed.").waitFor();
    await listing().getByRole("link", { name: "a (1).md" }).waitFor();
    expect(await names()).toEqual(["a (1).md", "a.md", "b.md"]);
    const kept = await server.request("GET", `/api/apps/${appId}/fs/file?path=notes/a.md`, { key: key.key });
    expect(kept.body.file.content).toBe("already here");
    await shoot("bulk-applied");

    await page.setViewportSize({ width: 375, height: 800 });
    await page.getByRole("heading", { name: "Folder notes" }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await shoot("phone");
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(pageErrors).toEqual([]);
  });

  test("the History tab puts the edits and the builds on one timeline, each edit with its author", async () => {
    await page.getByRole("navigation", { name: "App" }).getByRole("link", { name: "History" }).click();
    const history = page.getByRole("table", { name: "History" });
    await history.getByRole("row").nth(1).waitFor();
    const rows = (await history.getByRole("row").allTextContents()).slice(1);
    const at = (pattern: RegExp) => rows.findIndex((row) => pattern.test(row));
    // Newest first: the bulk rename, the renames and deletion, the redeploy, the save it was made from, the first deploy.
    const order = [/Bulk rename.*notes\/a\.txt/, /Deleted.*final\.txt/, /Renamed or moved.*draft\.txt → final\.txt/, /File created.*draft\.txt/, /Build .*redeploy/, /File saved.*server\.js/, /Build .*upload/].map(at);
    expect(order).not.toContain(-1);
    expect(order).toEqual(order.toSorted((a, b) => a - b));
    expect(rows[order[5]!]).toContain(OWNER.email);
    await shoot("history");
  });
});
