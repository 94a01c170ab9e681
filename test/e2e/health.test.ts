// Health checks and the statuses they bring, in headless Chromium against the real server and
// engine: an app deployed from the ZIP form with the check's numbers set (and no path: TCP only);
// in its Health tab a refused path shown beside its field, then a path saved and the probes listed
// as they come; restarting turned off in Settings (whose hint says how the platform restarts); a
// failing /health that makes the app `unhealthy` with its last probe in the page; and a container
// that keeps exiting shown as `crash-loop` with its exit code and last output, its lifecycle
// actions still offered. The steps build on each other, in order.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "playwright-core";
import { appZip, deployZip, viaProxy, waitForStatus } from "../helpers/apps";
import { seriousViolations } from "../helpers/axe";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { collectPageErrors, endAppsPageTest, logInThroughPage, ownerHoldingKey, tablesScrollingSideways } from "../helpers/dashboard-page";
import { TestServer, type CreatedKey } from "../helpers/server";

setDefaultTimeout(180_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };
const SCREENSHOTS = "test/e2e/screenshots/health";

let server: TestServer;
let chromium: TestBrowser;
let page: Page;
let key: CreatedKey;
let probedId: string;
const pageErrors: string[] = [];

/** GET /health answers 500 after GET /sick, 200 again after GET /well. */
const probed = appZip({
  "package.json": JSON.stringify({ name: "probed", scripts: { start: "node server.js" } }),
  "server.js": `let sick = false;
require("http").createServer((req, res) => {
  if (req.url === "/sick" || req.url === "/well") { sick = req.url === "/sick"; return res.end(req.url); }
  if (req.url === "/health") return res.writeHead(sick ? 500 : 200).end("health");
  res.end("probed");
}).listen(process.env.PORT);
`,
});

/** Listens, says so, and exits with code 3 a second and a half later. */
const crashing = appZip({
  "package.json": JSON.stringify({ name: "crashing", scripts: { start: "node server.js" } }),
  "server.js": `require("http").createServer((req, res) => res.end("up")).listen(process.env.PORT);\nsetTimeout(() => { console.log("dying now"); process.exit(3); }, 1500);\n`,
});

const header = () => page.locator(".app-header");
const openTab = async (title: string) => {
  await page.getByRole("navigation", { name: "App" }).getByRole("link", { name: title, exact: true }).click();
  await page.getByRole("region", { name: title, exact: true }).waitFor();
};
const appOf = async (appId: string) => (await server.request("GET", `/api/apps/${appId}`, { key: key.key })).body.app;

/** A screenshot of the page as it is now, which must have no serious or critical accessibility violation (axe-core). */
async function shoot(step: string) {
  await page.screenshot({ path: `${SCREENSHOTS}-${step}.png`, fullPage: true });
  expect({ step, violations: await seriousViolations(page) }).toEqual({ step, violations: [] });
}

beforeAll(async () => {
  [server, chromium] = await Promise.all([TestServer.start({ PLATFORM_CRASH_LOOP_EXITS: "3", PLATFORM_CRASH_LOOP_MINUTES: "5" }), launchBrowser()]);
  key = await ownerHoldingKey(server, OWNER, "health page test");
  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  collectPageErrors(page, pageErrors);
}, 120_000);

afterAll(() => endAppsPageTest(chromium, server, key), 120_000);

describe("health checks in the dashboard", () => {
  test("the ZIP form sends the check's folded numbers; without a path the check is TCP only", async () => {
    await page.goto(`${server.baseUrl}/#/apps/new`);
    await logInThroughPage(page, OWNER);
    const form = page.getByRole("form", { name: "Deploy from a ZIP" });
    await form.getByLabel(/^Name/).fill("probed");
    await form.getByLabel("Runtime").selectOption("node");
    await form.getByLabel("Memory (MB)").fill("96");
    await form.getByLabel("ZIP file").setInputFiles({ name: "probed.zip", mimeType: "application/zip", buffer: Buffer.from(probed) });
    expect(await form.getByLabel("Interval (seconds)").isVisible()).toBe(false);
    await form.getByText("Interval, timeout and thresholds").click();
    await form.getByLabel("Interval (seconds)").fill("1");
    await form.getByLabel("Unhealthy after (failures in a row)").fill("2");
    await shoot("deploy-form");
    await form.getByRole("button", { name: "Deploy" }).click();
    await page.getByRole("status").getByText("probed is running").waitFor({ timeout: 120_000 });
    probedId = (await server.request("GET", "/api/apps/", { key: key.key })).body.apps.find((app: any) => app.name === "probed").id;
    expect((await appOf(probedId)).healthCheck).toEqual({ path: null, intervalSeconds: 1, timeoutSeconds: 5, healthyThreshold: 1, unhealthyThreshold: 2, startPeriodSeconds: 60 });
  });

  test("a health path set in the Health tab is saved, and the probes are listed as they come", async () => {
    await page.goto(`${server.baseUrl}/#/apps/${probedId}/health`);
    const tab = page.getByRole("region", { name: "Health", exact: true });
    await tab.getByText(/^TCP only: a connect to the app's port, every 1 s/).waitFor();
    const path = tab.getByLabel("Path", { exact: true });
    expect(await path.inputValue()).toBe("");
    // A path the API refuses is shown beside the field (the settings route names only
    // `healthCheck`: the one field changed is the one at fault), and nothing is saved.
    await path.fill("health");
    await tab.getByRole("button", { name: "Save the health check" }).click();
    const refusal = tab.locator(".field", { has: page.getByLabel("Path", { exact: true }) }).getByRole("alert");
    expect(await refusal.textContent()).toStartWith("Invalid body field 'healthCheck");
    expect(await path.getAttribute("aria-invalid")).toBe("true");
    expect((await appOf(probedId)).healthCheck.path).toBeNull();
    await path.fill("/health");
    await tab.getByRole("button", { name: "Save the health check" }).click();
    await tab.getByRole("status").getByText("Saved. The next probe and release use it.").waitFor();
    expect((await appOf(probedId)).healthCheck).toMatchObject({ path: "/health", intervalSeconds: 1, unhealthyThreshold: 2 });
    // Read back from the server, not from what was typed.
    await page.reload();
    expect(await tab.getByLabel("Path", { exact: true }).inputValue()).toBe("/health");
    await tab.getByText(/^GET \/health, passing on a 2xx or 3xx, every 1 s/).waitFor();

    // The page reads the probes again while it is open: HTTP 200 answers of the path show up.
    const probes = page.getByRole("table", { name: "Recent probes" });
    await probes.getByRole("row").filter({ hasText: "HTTP 200" }).first().waitFor({ timeout: 30_000 });
    expect(await probes.getByRole("columnheader").allTextContents()).toEqual(["When", "Result", "HTTP status or error", "Latency"]);
    expect(await probes.getByRole("row").filter({ hasText: "pass" }).count()).toBeGreaterThan(0);
    expect(await tablesScrollingSideways(page)).toEqual([]);
    await shoot("tab");
  });

  test("with restarting off (its hint says the platform restarts with backoff), a failing /health makes the app unhealthy with its last probe shown", async () => {
    await openTab("Settings");
    const restart = page.getByLabel(/^Restart when it crashes or turns unhealthy/);
    await page.getByText("the platform restarts it with backoff: 2 s, then 4 s, 8 s… up to a ceiling").waitFor();
    expect(await page.getByText("applied in place").count()).toBe(0);
    await restart.uncheck();
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByRole("status").getByText(/^Saved\./).waitFor();
    expect((await appOf(probedId)).autoRestart).toBe(false);

    await openTab("Health");
    expect(await (await viaProxy(server, "probed", "/sick")).text()).toBe("/sick");
    await header().getByText("unhealthy", { exact: true }).waitFor({ timeout: 30_000 });
    const badgeColour = await header().locator(".badge").evaluate((badge) => getComputedStyle(badge).backgroundColor);
    expect(badgeColour).not.toBe("rgba(0, 0, 0, 0)");
    await page.locator(".status-callout").getByText(/GET \/health: HTTP 500 after \d+ ms/).waitFor();
    await page.locator(".status-callout").getByText("The app fails its health check.").waitFor();

    const facts = page.getByRole("region", { name: "Last probe" });
    await facts.getByText("fail", { exact: true }).waitFor({ timeout: 15_000 });
    await facts.getByText("HTTP 500", { exact: true }).waitFor();
    await facts.getByText(/^\d+ ms$/).waitFor();
    const probes = page.getByRole("table", { name: "Recent probes" });
    await probes.getByRole("row").filter({ hasText: "HTTP 500" }).first().waitFor();
    expect(await probes.getByRole("row").filter({ hasText: "fail" }).count()).toBeGreaterThanOrEqual(2);
    expect(await probes.getByRole("row").filter({ hasText: "HTTP 200" }).count()).toBeGreaterThan(0);

    // The lifecycle stays offered while it is unhealthy.
    const actions = page.getByRole("group", { name: "App actions" });
    for (const action of ["Start", "Stop", "Restart"]) expect(await actions.getByRole("button", { name: action, exact: true }).isEnabled()).toBe(true);
    await shoot("unhealthy");
    await page.emulateMedia({ colorScheme: "dark" });
    await shoot("unhealthy-dark");
    await page.emulateMedia({ colorScheme: "light" });

    await viaProxy(server, "probed", "/well");
    await header().getByText("running", { exact: true }).waitFor({ timeout: 30_000 });
    expect(await page.locator(".status-callout").count()).toBe(0);
  });

  test("a container that keeps exiting shows crash-loop with its exit code and last output, and can be stopped", async () => {
    const deployed = await deployZip(server, key.key, { name: "crashing", runtime: "node", memoryMB: "96" }, crashing);
    expect(deployed.status).toBe(202);
    const appId = deployed.body.app.id;
    await waitForStatus(server, key.key, appId, ["crash-loop", "failed"], 120_000);
    await page.goto(`${server.baseUrl}/#/apps/${appId}`);
    await header().getByText("crash-loop", { exact: true }).waitFor();
    const callout = page.locator(".status-callout");
    await callout.getByText("The app keeps crashing.").waitFor();
    await callout.getByText(/last with code 3/).waitFor();
    const output = callout.getByRole("region", { name: "Last output" });
    expect(await output.evaluate((element) => element.tagName)).toBe("PRE");
    expect(await output.textContent()).toContain("dying now");
    await shoot("crash-loop");

    const actions = page.getByRole("group", { name: "App actions" });
    for (const action of ["Start", "Restart"]) expect(await actions.getByRole("button", { name: action, exact: true }).isEnabled()).toBe(true);
    await actions.getByRole("button", { name: "Stop", exact: true }).click();
    await header().getByText("stopped", { exact: true }).waitFor({ timeout: 60_000 });
    expect(await callout.count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
