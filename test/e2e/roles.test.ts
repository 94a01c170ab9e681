// What the dashboard offers each role, in headless Chromium against the real server, app and
// database: the page shows an action only when the session lists its route (GET /api/auth/session
// `permissions`), so a viewer reads everything without meeting a button the API refuses with 403,
// and a member operates apps and databases without the owners' and admins' deletions, restores,
// schedules, invitations and audit log. The owner's side is walked by the other dashboard tests.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { BrowserContext, Page } from "playwright-core";
import { appZip, deleteAllApps, deployZip, waitForStatus } from "../helpers/apps";
import { completedBackup, runningDatabase } from "../helpers/backups";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { collectPageErrors, logInThroughPage, ownerHoldingKey, type Owner } from "../helpers/dashboard-page";
import { deleteAllDatabases, removeWorkspaceNetworks } from "../helpers/databases";
import { TestServer, type CreatedKey } from "../helpers/server";

setDefaultTimeout(180_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };
const VIEWER = { email: "viewer@example.com", password: "viewer password 1" };
const MEMBER = { email: "member@example.com", password: "member password 1" };
const APP = "roles-site";
const DATABASE = "roles-db";

let server: TestServer;
let chromium: TestBrowser;
let key: CreatedKey;
let appId: string;
let databaseId: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  [server, chromium] = await Promise.all([TestServer.start(), launchBrowser()]);
  key = await ownerHoldingKey(server, OWNER, "roles page test");
  const deployed = await deployZip(server, key.key, { name: APP, runtime: "node", memoryMB: "64" }, appZip({ "index.html": "<h1>roles</h1>", "assets/site.css": "h1 {}" }));
  expect(deployed.status).toBe(202);
  appId = deployed.body.app.id;
  const database = await runningDatabase(server, key.key, DATABASE, "postgresql");
  databaseId = database.id;
  await waitForStatus(server, key.key, appId, ["running"]);
  expect((await server.request("PUT", `/api/apps/${appId}/env`, { key: key.key, body: { envVars: { API_TOKEN: "s3cret-token" } } })).status).toBe(200);
  await completedBackup(server, key.key, databaseId);
  const schedule = await server.request("PUT", `/api/databases/${databaseId}/backup-schedule`, { key: key.key, body: { cron: "0 3 * * *", keepLast: 5 } });
  expect(schedule.status).toBe(200);
  for (const [person, role] of [[VIEWER, "viewer"], [MEMBER, "member"]] as const) {
    const invitation = await server.request("POST", "/api/organization/invitations", { key: key.key, body: { email: person.email, role } });
    const accepted = await server.request("POST", `/api/organization/invitations/${invitation.body.invitation.id}/accept`, { body: { password: person.password } });
    expect(accepted.status).toBeLessThan(300);
  }
});

afterAll(async () => {
  if (server && key) {
    await deleteAllApps(server, key.key);
    await deleteAllDatabases(server, key.key);
    removeWorkspaceNetworks(key.workspaceId);
  }
  await chromium?.close();
  await server?.stop();
});

/** A person's own browser, logged in through the page. */
async function loggedIn(person: Owner): Promise<{ context: BrowserContext; page: Page }> {
  const context = await chromium.newContext();
  const page = await context.newPage();
  collectPageErrors(page, pageErrors);
  await page.goto(`${server.baseUrl}/#/apps`);
  await logInThroughPage(page, person);
  await page.getByRole("heading", { level: 1, name: "Apps" }).waitFor();
  return { context, page };
}

const openTab = async (page: Page, navigation: string, title: string) => {
  await page.getByRole("navigation", { name: navigation }).getByRole("link", { name: title, exact: true }).click();
  await page.getByRole("region", { name: title, exact: true }).waitFor();
};

/** The messages the page shows in its alerts: a refusal of the API would be one. */
const alertsShown = async (page: Page) => (await page.getByRole("alert").allInnerTexts()).map((text) => text.trim()).filter(Boolean);

const buttonCount = (page: Page, name: string | RegExp) => page.getByRole("button", { name, exact: typeof name === "string" }).count();

describe("a viewer", () => {
  let context: BrowserContext;
  let page: Page;
  beforeAll(async () => {
    ({ context, page } = await loggedIn(VIEWER));
  });
  afterAll(() => context?.close());

  test("reads the apps and an app's page, and is offered no deploy, lifecycle action or change", async () => {
    await page.getByRole("link", { name: APP, exact: true }).waitFor();
    expect(await page.getByRole("link", { name: "Deploy an app" }).count()).toBe(0);

    await page.getByRole("link", { name: APP, exact: true }).click();
    await page.getByRole("heading", { level: 1, name: APP }).waitFor();
    await page.getByText("running", { exact: true }).first().waitFor();
    expect(await page.getByRole("group", { name: "App actions" }).count()).toBe(0);
    for (const name of ["Start", "Stop", "Restart", "Redeploy", "Delete…"]) expect(await buttonCount(page, name)).toBe(0);

    await openTab(page, "App", "Builds");
    await page.getByRole("region", { name: "Builds" }).getByRole("row").nth(1).waitFor();
    expect(await page.getByRole("columnheader", { name: "Actions" }).count()).toBe(0);
    expect(await buttonCount(page, /^Roll back/)).toBe(0);

    await openTab(page, "App", "Environment");
    await page.getByRole("list", { name: "Environment variables" }).getByText("API_TOKEN").waitFor();
    await page.getByText("Your role in this workspace (viewer) can read the variables' names").waitFor();
    expect(await page.getByLabel("Value of API_TOKEN").count()).toBe(0);
    expect(await page.getByRole("form", { name: "Add a variable" }).count()).toBe(0);
    expect(await buttonCount(page, /^Save/)).toBe(0);

    await openTab(page, "App", "Settings");
    await page.getByText("Your role in this workspace (viewer) can read these settings, not change them.").waitFor();
    await expect(page.getByLabel("Name", { exact: true }).inputValue()).resolves.toBe(APP);
    expect(await page.getByLabel("Name", { exact: true }).isDisabled()).toBe(true);
    expect(await page.getByLabel("Memory (MB)").isDisabled()).toBe(true);
    expect(await buttonCount(page, "Save settings")).toBe(0);
    expect(await page.getByRole("heading", { name: "Deploy hook" }).count()).toBe(0);

    await openTab(page, "App", "Health");
    await page.getByText("Your role in this workspace (viewer) can read the health check, not change it.").waitFor();
    expect(await page.getByLabel("Path", { exact: true }).isDisabled()).toBe(true);
    expect(await buttonCount(page, "Save the health check")).toBe(0);
    expect(await buttonCount(page, "Back to the defaults")).toBe(0);

    await openTab(page, "App", "Domains");
    await page.getByText("No custom domains yet.").waitFor();
    expect(await page.getByRole("form", { name: "Add a domain" }).count()).toBe(0);

    expect(await alertsShown(page)).toEqual([]);
  });

  test("lists the app's files and folders, opens no file, and is offered no download, edit or redeploy", async () => {
    await openTab(page, "App", "Files");
    await page.getByRole("heading", { name: "Root folder" }).waitFor();
    await page.getByText("Your role in this workspace (viewer) can list the app's files, not open or change them").waitFor();
    await page.getByRole("cell", { name: "index.html" }).waitFor();
    expect(await page.getByRole("link", { name: "index.html" }).count()).toBe(0);
    for (const name of ["Download as ZIP"]) expect(await page.getByRole("link", { name }).count()).toBe(0);
    for (const name of ["Redeploy with these files", /^Rename/, /^Delete/, "Create file", "Create folder"]) expect(await buttonCount(page, name)).toBe(0);
    await page.getByRole("link", { name: "assets/" }).click();
    await page.getByRole("heading", { name: "Folder assets" }).waitFor();
    await page.getByRole("cell", { name: "site.css" }).waitFor();
    expect(await alertsShown(page)).toEqual([]);
  });

  test("gets a sentence, not a form, at the deploy page's address", async () => {
    await page.goto(`${server.baseUrl}/#/apps/new`);
    await page.getByText("Your role in this workspace (viewer) can read the workspace's apps, not deploy them.").waitFor();
    expect(await page.getByRole("form").count()).toBe(0);
  });

  test("reads a database, its backups and schedule, and is offered no action, setting or creation", async () => {
    await page.goto(`${server.baseUrl}/#/databases`);
    await page.getByRole("link", { name: DATABASE, exact: true }).waitFor();
    expect(await page.getByRole("link", { name: "New database" }).count()).toBe(0);
    await page.getByRole("link", { name: DATABASE, exact: true }).click();
    await page.getByRole("heading", { level: 1, name: DATABASE }).waitFor();
    expect(await buttonCount(page, "Stop")).toBe(0);
    expect(await page.getByRole("navigation", { name: "Database" }).getByRole("link", { name: "Settings" }).count()).toBe(0);

    await openTab(page, "Database", "Backups");
    await page.getByRole("region", { name: "Backups", exact: true }).getByRole("row").nth(1).getByText("completed").waitFor();
    await page.getByText("Runs at 0 3 * * * (UTC), keeps the last 5.").waitFor();
    expect(await buttonCount(page, "Back up now")).toBe(0);
    for (const name of [/^Verify/, /^Restore/, "Upload", /^Set schedule|^Save schedule/, "Clear schedule"]) expect(await buttonCount(page, name)).toBe(0);
    expect(await page.getByRole("link", { name: "Download" }).count()).toBe(0);
    expect(await alertsShown(page)).toEqual([]);
  });

  test("in Settings: its own keys, the members without role controls, and no invitations or audit log", async () => {
    await page.goto(`${server.baseUrl}/#/settings/members`);
    await page.getByRole("cell", { name: OWNER.email }).waitFor();
    expect(await page.getByLabel(`Role of ${OWNER.email}`).count()).toBe(0);
    expect(await page.getByRole("heading", { name: "Invitations" }).count()).toBe(0);
    expect(await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: "Audit log" }).count()).toBe(0);
    expect(await alertsShown(page)).toEqual([]);

    await openTab(page, "Settings", "Developer");
    await page.getByRole("form", { name: "New key" }).waitFor();
    expect(await page.getByRole("heading", { name: "All keys in this workspace" }).count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});

describe("a member", () => {
  let context: BrowserContext;
  let page: Page;
  beforeAll(async () => {
    ({ context, page } = await loggedIn(MEMBER));
  });
  afterAll(() => context?.close());

  test("operates the app: its actions, variables, settings and files are offered", async () => {
    await page.getByRole("link", { name: "Deploy an app" }).waitFor();
    await page.goto(`${server.baseUrl}/#/apps/${appId}/env`);
    await page.getByLabel("Value of API_TOKEN").waitFor();
    for (const name of ["Start", "Stop", "Restart", "Redeploy", "Delete…"]) expect(await buttonCount(page, name)).toBe(1);
    await openTab(page, "App", "Settings");
    await page.getByRole("button", { name: "Save settings" }).waitFor();
    expect(await page.getByLabel("Name", { exact: true }).isDisabled()).toBe(false);
    await page.getByRole("heading", { name: "Deploy hook" }).waitFor();
    await openTab(page, "App", "Health");
    await page.getByRole("button", { name: "Save the health check" }).waitFor();
    expect(await page.getByLabel("Path", { exact: true }).isDisabled()).toBe(false);
    await openTab(page, "App", "Files");
    await page.getByRole("link", { name: "index.html" }).waitFor();
    await page.getByRole("link", { name: "Download as ZIP" }).waitFor();
  });

  test("backs up and verifies, but is offered no restore, schedule change or database deletion", async () => {
    await page.goto(`${server.baseUrl}/#/databases/${databaseId}/backups`);
    await page.getByRole("button", { name: "Back up now" }).waitFor();
    const firstBackup = page.getByRole("region", { name: "Backups", exact: true }).getByRole("row").nth(1);
    await firstBackup.getByRole("button", { name: /^Verify/ }).waitFor();
    await firstBackup.getByRole("link", { name: "Download" }).waitFor();
    expect(await firstBackup.getByRole("button", { name: /^Restore/ }).count()).toBe(0);
    expect(await firstBackup.getByRole("button", { name: /^Delete backup/ }).count()).toBe(0);
    await page.getByText("Runs at 0 3 * * * (UTC), keeps the last 5.").waitFor();
    for (const name of [/^Set schedule|^Save schedule/, "Clear schedule"]) expect(await buttonCount(page, name)).toBe(0);
    await page.getByRole("button", { name: "Stop" }).waitFor();

    await openTab(page, "Database", "Settings");
    await page.getByRole("form", { name: "Database settings" }).waitFor();
    await page.getByRole("button", { name: "Rotate password" }).waitFor();
    expect(await page.getByRole("heading", { name: "Delete" }).count()).toBe(0);
    expect(await buttonCount(page, "Delete database")).toBe(0);
    expect(await alertsShown(page)).toEqual([]);
  });

  test("in Settings: no invitations and no audit log", async () => {
    await page.goto(`${server.baseUrl}/#/settings/members`);
    await page.getByRole("cell", { name: OWNER.email }).waitFor();
    expect(await page.getByRole("heading", { name: "Invitations" }).count()).toBe(0);
    expect(await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: "Audit log" }).count()).toBe(0);
    expect(await alertsShown(page)).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
