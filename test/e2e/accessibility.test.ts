// Accessibility of the dashboard in headless Chromium: axe-core finds no serious or critical
// problem on the logged-out pages, the shell, the Volumes page and every Settings tab, on a desktop and on a 375 px
// phone; the keyboard reaches the header and navigation with a visible focus ring; the dark theme
// follows the system. Other sections' pages are checked too, and their findings logged, not failed.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "playwright-core";
import { TestServer } from "../helpers/server";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { seriousViolations } from "../helpers/axe";
import { tablesScrollingSideways } from "../helpers/dashboard-page";
import { createDatabase, deleteAllDatabases, removeWorkspaceNetworks } from "../helpers/databases";

setDefaultTimeout(90_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 740 };
const SETTINGS_TABS = [
  { tab: "Developer", heading: "API keys" },
  { tab: "Account", heading: "Two-factor sign-in" },
  { tab: "Members", heading: "Members" },
  { tab: "Audit log", heading: "Audit log" },
  { tab: "Registries", heading: "Registries" },
  { tab: "Platform", heading: "Platform" },
];

let server: TestServer;
let chromium: TestBrowser;
let page: Page;
/** An API key of the owner's workspace, made once the owner exists; for cleaning up. */
let ownerKey: { key: string; workspaceId: string } | null = null;

const screenshot = (step: string) => page.screenshot({ path: `test/e2e/screenshots/accessibility-${step}.png`, fullPage: true });

/** axe-core's serious and critical findings on the page, at both sizes; ends at desktop size. */
async function violationsAtBothSizes(name: string): Promise<string[]> {
  const found: string[] = [];
  for (const size of [PHONE, DESKTOP]) {
    await page.setViewportSize(size);
    if (size === PHONE) await screenshot(`${name}-phone`);
    for (const violation of await seriousViolations(page)) found.push(`${size.width}px: ${violation}`);
  }
  return found;
}

/** Nothing sticks out sideways: a 375 px page needs no horizontal scrolling of the whole page. */
async function pageWidth() {
  return page.evaluate(() => document.documentElement.scrollWidth);
}

/** Each cell of a data table on a phone, as "label: value" the way it is shown. */
async function phoneCells(caption: string): Promise<string[]> {
  return page.evaluate((wanted) => {
    const table = [...document.querySelectorAll("table")].find((candidate) => candidate.querySelector("caption")?.textContent === wanted);
    return [...(table?.querySelectorAll("tbody td") ?? [])].map((cell) => {
      const label = getComputedStyle(cell, "::before").content.replace(/^"|"$/g, "");
      return `${label === "none" ? "" : label}: ${cell.textContent?.trim()}`;
    });
  }, caption);
}

async function openSection(section: string) {
  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: section }).click();
  await page.getByRole("heading", { level: 1, name: section }).waitFor();
}

beforeAll(async () => {
  [server, chromium] = await Promise.all([TestServer.start(), launchBrowser()]);
  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
});

afterAll(async () => {
  if (ownerKey) {
    await deleteAllDatabases(server, ownerKey.key);
    removeWorkspaceNetworks(ownerKey.workspaceId);
  }
  await chromium?.close();
  await server?.stop();
});

describe("accessibility", () => {
  test("the owner setup and the login form have no serious problem, on a desktop or a phone", async () => {
    await page.goto(server.baseUrl);
    await page.getByRole("heading", { name: "Create the owner account" }).waitFor();
    expect(await violationsAtBothSizes("setup")).toEqual([]);

    await page.getByLabel("Email").fill(OWNER.email);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Create owner account" }).click();
    await page.getByRole("banner").getByText(OWNER.email).waitFor();

    await page.getByRole("banner").getByRole("button", { name: "Log out" }).click();
    await page.getByRole("heading", { name: "Log in" }).waitFor();
    expect(await violationsAtBothSizes("login")).toEqual([]);

    await page.getByLabel("Email").fill(OWNER.email);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("heading", { level: 1, name: "Apps" }).waitFor();
  });

  test("every Settings tab has no serious problem and fits a phone's width", async () => {
    await openSection("Settings");
    for (const { tab, heading } of SETTINGS_TABS) {
      await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: tab }).click();
      await page.getByRole("heading", { level: 2, name: heading }).waitFor();
      // Tables and lists load after the heading; check the page as a person reads it.
      await page.waitForFunction(() => !document.querySelector(".spinner"));
      const slug = tab.toLowerCase().replace(/ /g, "-");
      expect(await violationsAtBothSizes(`settings-${slug}`)).toEqual([]);
      await page.setViewportSize(PHONE);
      expect(await pageWidth()).toBeLessThanOrEqual(PHONE.width);
      expect(await tablesScrollingSideways(page)).toEqual([]);
      await page.setViewportSize(DESKTOP);
    }
  });

  test("the Volumes page has no serious problem and fits a phone's width", async () => {
    await openSection("Volumes");
    await page.getByText("No volumes yet. An app gets one at deploy or in its Volumes tab.").waitFor();
    expect(await violationsAtBothSizes("volumes")).toEqual([]);
    await page.setViewportSize(PHONE);
    expect(await pageWidth()).toBeLessThanOrEqual(PHONE.width);
    await page.setViewportSize(DESKTOP);
  });

  test("on a phone a table's rows are cards: every value is shown under its column's name", async () => {
    await page.goto(`${server.baseUrl}/#/settings/audit-log`);
    await page.getByRole("heading", { level: 2, name: "Audit log" }).waitFor();
    const auditLog = page.getByRole("table", { name: "Audit log" });
    await auditLog.getByRole("row").nth(1).waitFor();
    await page.setViewportSize(PHONE);
    const cells = await phoneCells("Audit log");
    expect(cells).toContain(`Actor: ${OWNER.email}`);
    expect(cells.filter((cell) => cell.startsWith("Time: ")).length).toBeGreaterThanOrEqual(2);
    // Each date stays on one line, beside its label.
    const timeHeights = await auditLog.locator("td time").evaluateAll((times) => times.map((time) => time.getBoundingClientRect().height));
    for (const height of timeHeights) expect(height).toBeLessThan(30);
    // Screen readers still get a table with its column headers.
    await auditLog.getByRole("columnheader", { name: "Actor" }).waitFor();
    await screenshot("audit-log-cards-phone");
    await page.setViewportSize(DESKTOP);
    // On a desktop the same table keeps its columns: no label is drawn in a cell.
    expect((await phoneCells("Audit log")).every((cell) => cell.startsWith(": "))).toBe(true);
  });

  test("the Platform tab shows the engine, the free disk space, the version and the upload limits", async () => {
    await openSection("Settings");
    await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: "Platform" }).click();
    const machines = page.getByRole("table", { name: "Machines" });
    await machines.getByRole("row", { name: /local/ }).getByText("online").waitFor();
    const config = (await (await fetch(`${server.baseUrl}/api/platform/config`)).json()) as { data?: { version: string }; version?: string };
    const version = config.data?.version ?? config.version!;
    await page.getByText(version, { exact: true }).waitFor();
    await page.getByText("Largest upload").waitFor();
    await page.getByText("Free space").waitFor();
    await page.getByRole("table", { name: "Platform events" }).or(page.getByText("No events since the platform started.")).waitFor();
    await page.getByRole("heading", { level: 3, name: "Unknown containers" }).waitFor();
    await screenshot("platform-desktop");
  });

  test("Tab moves through the header and the navigation with a visible focus ring", async () => {
    for (const size of [DESKTOP, PHONE]) {
      await page.setViewportSize(size);
      // A fresh load, so the keyboard starts at the top of the document.
      await page.goto(`${server.baseUrl}/#/apps`);
      await page.reload();
      await page.getByRole("heading", { level: 1, name: "Apps" }).waitFor();
      const reached: string[] = [];
      for (let press = 0; press < 8; press++) {
        await page.keyboard.press("Tab");
        const focused = await page.evaluate(() => {
          const element = document.activeElement as HTMLElement;
          const style = getComputedStyle(element);
          return {
            name: element.getAttribute("aria-label") || element.textContent?.trim() || element.tagName,
            inChrome: !!element.closest("header, nav"),
            ring: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 1,
          };
        });
        if (!focused.inChrome) break;
        expect(focused.ring).toBe(true);
        reached.push(focused.name);
        if (focused.name === "Settings") await screenshot(`keyboard-focus-${size.width}`);
      }
      for (const section of ["Apps", "Databases", "Volumes", "Settings"]) expect(reached).toContain(section);
      expect(reached).toContain("Log out");
    }
    await page.setViewportSize(DESKTOP);
  });

  test("the shell has no serious problem; other sections' findings are listed", async () => {
    const others: string[] = [];
    for (const section of ["Apps", "Databases"]) {
      await page.goto(`${server.baseUrl}/#/${section.toLowerCase()}`);
      await page.getByRole("heading", { level: 1, name: section }).waitFor();
      await page.waitForLoadState("networkidle");
      for (const violation of await violationsAtBothSizes(section.toLowerCase())) others.push(`${section}: ${violation}`);
    }
    ownerKey = await server.createKey("accessibility");
    const { database } = await createDatabase(server, ownerKey.key, { name: "a11y-cache", engine: "redis", memoryMB: 256 });
    await page.goto(`${server.baseUrl}/#/databases`);
    await page.getByRole("link", { name: "a11y-cache" }).click();
    await page.getByRole("heading", { level: 1, name: database.name }).waitFor();
    await page.waitForLoadState("networkidle");
    for (const violation of await violationsAtBothSizes("database")) others.push(`Database page: ${violation}`);

    if (others.length) console.log(`Findings on other sections' pages:\n${others.join("\n")}`);
    const shellOnly = others.filter((line) => /\b(header|nav|\.topbar|\.sidebar)\b/.test(line));
    expect(shellOnly).toEqual([]);
  });

  test("in dark mode the page turns dark and still has no serious problem", async () => {
    await page.emulateMedia({ colorScheme: "dark" });
    await page.goto(`${server.baseUrl}/#/settings/platform`);
    await page.getByRole("heading", { level: 2, name: "Platform" }).waitFor();
    await page.getByRole("table", { name: "Machines" }).waitFor();
    const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const [red, green, blue] = background.match(/\d+/g)!.map(Number);
    expect(red! + green! + blue!).toBeLessThan(3 * 64);
    expect(await violationsAtBothSizes("dark-platform")).toEqual([]);
    await page.goto(`${server.baseUrl}/#/settings/developer`);
    await page.getByRole("heading", { level: 2, name: "API keys" }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot("dark-developer");
    await page.emulateMedia({ colorScheme: "light" });
  });
});
