// The databases section in headless Chromium against the real server and engine (the stand-in
// PostgreSQL image): the owner logs in through the page, creates a PostgreSQL database there,
// waits for it to run, reveals its connection string, backs it up, verifies and restores the
// backup after typing the name, finds those in the operations history, uploads a dump and deletes
// that backup, sets and clears a backup schedule, changes the memory, rotates the password, and
// deletes the database.
// The steps build on each other (one database), so they run in order.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "playwright-core";
import { TestServer, type CreatedKey } from "../helpers/server";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { deleteAllDatabases, removeWorkspaceNetworks } from "../helpers/databases";
import { seriousViolations } from "../helpers/axe";
import { ownerHoldingKey, collectPageErrors, logInThroughPage, tablesScrollingSideways } from "../helpers/dashboard-page";

setDefaultTimeout(180_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };
const NAME = "orders-db";
const SCREENSHOTS = "test/e2e/screenshots/databases";

let server: TestServer;
let chromium: TestBrowser;
let page: Page;
let key: CreatedKey;
const pageErrors: string[] = [];

/** A screenshot of the page as it is now, which must have no serious or critical accessibility violation (axe-core). */
async function shoot(step: string) {
  await page.screenshot({ path: `${SCREENSHOTS}-${step}.png`, fullPage: true });
  expect({ step, violations: await seriousViolations(page) }).toEqual({ step, violations: [] });
}
const openTab = async (title: string) => {
  await page.getByRole("navigation", { name: "Database" }).getByRole("link", { name: title, exact: true }).click();
  await page.getByRole("region", { name: title, exact: true }).waitFor();
};
const backupRows = () => page.getByRole("region", { name: "Backups", exact: true }).getByRole("row");

beforeAll(async () => {
  [server, chromium] = await Promise.all([TestServer.start(), launchBrowser()]);
  key = await ownerHoldingKey(server, OWNER, "databases page test");
  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  collectPageErrors(page, pageErrors);
  // Rotating the password asks for confirmation.
  page.on("dialog", (dialog) => dialog.accept());
});

async function theDatabase() {
  const { body } = await server.request("GET", "/api/databases/", { key: key.key });
  return (await server.request("GET", `/api/databases/${body.databases[0].id}`, { key: key.key })).body.database;
}

afterAll(async () => {
  // Whatever the page managed, nothing is left behind.
  if (server && key) {
    await deleteAllDatabases(server, key.key);
    removeWorkspaceNetworks(key.workspaceId);
  }
  await chromium?.close();
  await server?.stop();
});

describe("the databases section", () => {
  test("the owner logs in, creates a PostgreSQL database in the page and sees it running", async () => {
    await page.goto(`${server.baseUrl}/#/databases`);
    await logInThroughPage(page, OWNER);
    await page.getByRole("heading", { level: 1, name: "Databases" }).waitFor();
    await page.getByText("No databases yet.").waitFor();

    await page.getByRole("link", { name: "New database" }).click();
    await page.getByRole("heading", { level: 1, name: "New database" }).waitFor();
    // Memory over the workspace's quota (16 GB by default) is refused by the API, said in the form, and nothing is made.
    await page.getByLabel(/^Name/).fill(NAME);
    await page.getByLabel("Memory (MB)").fill("200000");
    await page.getByRole("button", { name: "Create database" }).click();
    await page.getByRole("form", { name: "New database" }).getByRole("alert").getByText(/quota|memory/i).waitFor();
    expect((await server.request("GET", "/api/databases/", { key: key.key })).body.databases).toEqual([]);
    await page.getByLabel("Memory (MB)").fill("256");
    await page.getByLabel("CPUs").fill("1.5");
    await page.getByLabel("Engine").selectOption("postgresql");
    // The credentials an existing app already uses, kept instead of generated ones.
    const credentials = page.getByRole("group", { name: "Credentials (optional)" });
    await credentials.getByLabel("User").fill("orders_app");
    await credentials.getByLabel("Password").fill("kept-Pass_123");
    await credentials.getByLabel("Database name").fill("orders");
    await page.getByRole("button", { name: "Create database" }).click();

    await page.getByRole("heading", { level: 1, name: NAME }).waitFor();
    expect((await theDatabase()).cpus).toBe(1.5);
    await page.locator(".db-heading").getByText("running", { exact: true }).waitFor({ timeout: 150_000 });
    await shoot("created");

    await page.getByRole("link", { name: "← Databases" }).click();
    const row = page.getByRole("row", { name: new RegExp(NAME) });
    await row.getByText("running").waitFor();
    expect(await row.getByText("256 MB").count()).toBe(1);
    await shoot("list");
    await row.getByRole("link", { name: NAME }).click();
    await page.getByRole("heading", { level: 1, name: NAME }).waitFor();
  });

  test("the connection string is masked until revealed, and the live stats fill in", async () => {
    const external = page.getByRole("group", { name: "External connection string" }).locator("code");
    await external.waitFor();
    expect(await external.textContent()).not.toContain("postgresql://");
    await page.getByRole("button", { name: "Reveal External connection string" }).click();
    const { body } = await server.request("GET", "/api/databases/", { key: key.key });
    const { body: one } = await server.request("GET", `/api/databases/${body.databases[0].id}`, { key: key.key });
    expect(await external.textContent()).toBe(one.database.connectionString);
    expect(one.database.connectionString).toMatch(/^postgresql:\/\/orders_app:kept-Pass_123@[^/]+\/orders$/);
    await page.getByText(/^Memory: \d/).waitFor();
    // A line is drawn once a second sample has come in.
    await page.getByRole("img", { name: "Memory over time" }).locator("polyline").waitFor({ state: "attached" });
    await shoot("overview");

    await page.setViewportSize({ width: 375, height: 800 });
    await shoot("overview-phone");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test("a backup is taken, verified, and restored after typing the database's name", async () => {
    await openTab("Backups");
    await page.getByText("No backups yet.").waitFor();
    await page.getByRole("button", { name: "Back up now" }).click();
    const manual = backupRows().filter({ hasText: "manual" });
    await manual.getByText("completed").waitFor({ timeout: 60_000 });

    await manual.getByRole("button", { name: /^Verify backup/ }).click();
    await manual.getByText(/^passed/).waitFor({ timeout: 120_000 });
    expect(await manual.getByRole("link", { name: "Download" }).getAttribute("href")).toMatch(/\/backups\/[^/]+\/download$/);

    await manual.getByRole("button", { name: /^Restore backup/ }).click();
    const confirm = page.getByRole("form", { name: "Restore backup" });
    await expect(confirm.getByRole("button", { name: "Restore backup" }).isDisabled()).resolves.toBe(true);
    await confirm.getByLabel(/to confirm/).fill(NAME);
    await confirm.getByRole("button", { name: "Restore backup" }).click();
    await page.getByText("Restore started").waitFor();
    // The restore takes a pre-restore backup first.
    await backupRows().filter({ hasText: "pre-restore" }).getByText("completed").waitFor({ timeout: 60_000 });
    await shoot("backups");
    // On a phone each backup is a card with its buttons: nothing to scroll sideways to reach them.
    await page.setViewportSize({ width: 375, height: 800 });
    expect(await tablesScrollingSideways(page)).toEqual([]);
    await manual.getByRole("button", { name: /^Restore backup/ }).waitFor();
    await shoot("backups-phone");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test("the operations history lists the create, backup, verify and restore", async () => {
    await openTab("History");
    const history = page.getByRole("region", { name: "History", exact: true });
    for (const type of ["create", "verify", "restore"]) {
      await history.getByRole("row").filter({ has: page.getByRole("cell", { name: type, exact: true }) }).getByText("succeeded").first().waitFor({ timeout: 120_000 });
    }
    await history.getByRole("cell", { name: "backup", exact: true }).first().waitFor();
    await shoot("history");
    await page.setViewportSize({ width: 375, height: 800 });
    expect(await tablesScrollingSideways(page)).toEqual([]);
    await shoot("history-phone");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test("the logs show the engine's lines, with timestamps on request", async () => {
    await openTab("Logs");
    const lines = page.getByRole("region", { name: "Log lines", exact: true });
    await lines.waitFor();
    expect((await lines.textContent())!.length).toBeGreaterThan(0);
    await page.getByLabel("Timestamps").check();
    await page.waitForFunction(() => /^\d{4}-\d{2}-\d{2}T/.test(document.querySelector("pre")?.textContent ?? ""));
    await shoot("logs");
  });

  test("the database is stopped and started again from its header", async () => {
    const heading = page.locator(".db-heading");
    await heading.getByRole("button", { name: "Stop" }).click();
    await heading.getByText("stopped", { exact: true }).waitFor({ timeout: 60_000 });
    await heading.getByRole("button", { name: "Start" }).click();
    await heading.getByText("running", { exact: true }).waitFor({ timeout: 120_000 });
    await shoot("restarted");
  });

  test("a dump downloaded from a backup is uploaded as a backup of its own", async () => {
    await openTab("Backups");
    const database = await theDatabase();
    const { body } = await server.request("GET", `/api/databases/${database.id}/backups`, { key: key.key });
    const manual = body.backups.find((backup: { type: string }) => backup.type === "manual");
    const dump = await fetch(`${server.baseUrl}/api/databases/${database.id}/backups/${manual.id}/download`, { headers: { authorization: `Bearer ${key.key}` } });
    expect(dump.status).toBe(200);
    const form = page.getByRole("form", { name: "Upload a dump" });
    await form.getByLabel("Dump file").setInputFiles({ name: "orders.sql.gz", mimeType: "application/gzip", buffer: Buffer.from(await dump.arrayBuffer()) });
    await form.getByRole("button", { name: "Upload" }).click();
    await backupRows().filter({ hasText: "uploaded" }).getByText("completed").waitFor({ timeout: 60_000 });
  });

  test("a backup is deleted from its row, after a confirmation", async () => {
    const database = await theDatabase();
    const listed = async () => (await server.request("GET", `/api/databases/${database.id}/backups`, { key: key.key })).body.backups as { type: string }[];
    const before = await listed();
    await backupRows().filter({ hasText: "uploaded" }).getByRole("button", { name: /^Delete backup of/ }).click();
    await backupRows().filter({ hasText: "uploaded" }).first().waitFor({ state: "detached" });
    const after = await listed();
    expect(after.map((backup) => backup.type)).not.toContain("uploaded");
    expect(after).toHaveLength(before.length - 1);
  });

  test("a backup schedule with a wrong cron is refused in the form, then set, shown and cleared", async () => {
    const form = page.getByRole("form", { name: "Backup schedule" });
    await form.getByLabel("When (cron, UTC)").fill("every night");
    await form.getByRole("button", { name: "Set schedule" }).click();
    await form.getByRole("alert").getByText(/\S/).waitFor();
    const { id } = await theDatabase();
    expect((await server.request("GET", `/api/databases/${id}/backup-schedule`, { key: key.key })).body.schedule).toBeNull();

    await form.getByLabel("When (cron, UTC)").fill("0 3 * * *");
    await form.getByLabel("Keep the last").fill("5");
    await form.getByLabel("Verify each scheduled backup").check();
    await form.getByRole("button", { name: "Set schedule" }).click();
    await page.getByText(/^Next run/).waitFor();
    const { schedule } = (await server.request("GET", `/api/databases/${id}/backup-schedule`, { key: key.key })).body;
    expect({ cron: schedule.cron, keepLast: schedule.keepLast, verify: schedule.verify }).toEqual({ cron: "0 3 * * *", keepLast: 5, verify: true });
    await shoot("schedule");

    await page.getByRole("button", { name: "Clear schedule" }).click();
    await page.getByText("No schedule: backups are taken only when you ask.").waitFor();
    expect((await server.request("GET", `/api/databases/${id}/backup-schedule`, { key: key.key })).body.schedule).toBeNull();
  });

  test("the memory and CPUs are changed in the settings, and a password of one's choosing changes the connection string", async () => {
    await openTab("Settings");
    expect(await page.getByLabel("CPUs").inputValue()).toBe("1.5");
    await page.getByLabel("Memory (MB)").fill("384");
    await page.getByLabel("CPUs").fill("0.5");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && (await theDatabase()).memoryMB !== 384; ) await Bun.sleep(200);
    expect(await theDatabase()).toMatchObject({ memoryMB: 384, cpus: 0.5 });
    // Emptied, the CPUs go back to the platform's default (PLATFORM_DEFAULT_CPUS, 1 here).
    await page.getByLabel("CPUs").fill("");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && (await theDatabase()).cpus !== 1; ) await Bun.sleep(200);
    expect(await theDatabase()).toMatchObject({ memoryMB: 384, cpus: 1 });

    // A password of the person's choosing, as an app elsewhere already has it.
    const before = (await theDatabase()).connectionString;
    await page.getByLabel("New password (optional)").fill("chosen-Pass_456");
    await page.getByRole("button", { name: "Rotate password" }).click();
    await page.getByText("Password rotation started").waitFor();
    for (const deadline = Date.now() + 60_000; Date.now() < deadline && (await theDatabase()).connectionString === before; ) await Bun.sleep(500);
    const after = (await theDatabase()).connectionString;
    expect(after).not.toBe(before);
    expect(after).toContain("orders_app:chosen-Pass_456@");

    // The overview shows the new one.
    await openTab("Overview");
    await page.getByRole("button", { name: "Reveal External connection string" }).click();
    const external = page.getByRole("group", { name: "External connection string" }).locator("code");
    await page.waitForFunction((expected) => document.querySelector(".secret code")?.textContent === expected, after, { timeout: 15_000 });
    expect(await external.textContent()).toBe(after);
    await page.locator(".db-heading").getByText("running", { exact: true }).waitFor({ timeout: 60_000 });
  });

  test("the database is deleted once its name is typed", async () => {
    await openTab("Settings");
    const confirm = page.getByRole("form", { name: "Delete database" });
    await confirm.getByLabel(/to confirm/).fill(NAME);
    await confirm.getByRole("button", { name: "Delete database" }).click();
    await page.getByRole("heading", { level: 1, name: "Databases" }).waitFor();
    await page.getByText("No databases yet.").waitFor({ timeout: 60_000 });
    const { body } = await server.request("GET", "/api/databases/", { key: key.key });
    expect(body.databases).toEqual([]);
    await shoot("deleted");
    expect(pageErrors).toEqual([]);
  });
});
