// One app's page in headless Chromium against the real server and engine: an app deployed through
// the API, then, through the page as its owner: the overview, an env var added (the app restarts),
// a settings change refused beside its field, stop and start, the logs with a line the app printed,
// builds, domains and traffic, and a delete confirmed by typing the name. The steps build on each
// other (one app), so they run in order.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "playwright-core";
import type { TestServer, CreatedKey } from "../helpers/server";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../helpers/apps";
import { seriousViolations } from "../helpers/axe";
import { makeCertificate } from "../helpers/certificates";
import { startServerWithDns } from "../helpers/domains";
import type { DnsServer } from "../helpers/dns-server";
import { freePort } from "../helpers/ports";
import { ownerHoldingKey, collectPageErrors, logInThroughPage, tablesScrollingSideways } from "../helpers/dashboard-page";

setDefaultTimeout(120_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };
const APP_NAME = "hello-page";
const PRINTED = "hello from the app page test";
const SCREENSHOTS = "test/e2e/screenshots/app-page";

let server: TestServer;
/** Where the domain's TXT record is published; stops with the server. */
let dns: DnsServer;
let stopServer: () => Promise<void>;
let chromium: TestBrowser;
let page: Page;
let key: CreatedKey;
let appId: string;
const pageErrors: string[] = [];

const header = () => page.locator(".app-header");
const openTab = async (title: string) => {
  await page.getByRole("navigation", { name: "App" }).getByRole("link", { name: title, exact: true }).click();
  await page.getByRole("region", { name: title, exact: true }).waitFor();
};
/** A screenshot of the page as it is now, which must have no serious or critical accessibility violation (axe-core). */
async function shoot(step: string) {
  await page.screenshot({ path: `${SCREENSHOTS}-${step}.png`, fullPage: true });
  expect({ step, violations: await seriousViolations(page) }).toEqual({ step, violations: [] });
}

beforeAll(async () => {
  // Repository apps clone from a loopback port nothing listens on: only their settings are looked at.
  [{ server, dns, stop: stopServer }, chromium] = await Promise.all([
    startServerWithDns({ PLATFORM_PUBLIC_IP: "127.0.0.1", PLATFORM_GIT_BASE_URL: `http://127.0.0.1:${freePort()}` }),
    launchBrowser(),
  ]);
  // The command line's key belongs to the workspace the owner's setup claims: the owner's own key.
  key = await ownerHoldingKey(server, OWNER, "app page test");
  const zip = appZip({
    // A Bun app: the settings form must show and keep a runtime other than the first choice.
    "package.json": JSON.stringify({ name: APP_NAME, scripts: { start: "bun server.js" } }),
    "server.js": `require("http").createServer((req, res) => (console.log("request for " + req.url), res.end("hi " + (process.env.GREETING || "")))).listen(process.env.PORT, () => console.log(${JSON.stringify(PRINTED)}));\n`,
  });
  const deployed = await deployZip(server, key.key, { name: APP_NAME, runtime: "bun", memoryMB: "128" }, zip);
  if (deployed.status !== 202) throw new Error(`deploy refused: ${JSON.stringify(deployed.body)}`);
  appId = deployed.body.app.id;
  await waitForStatus(server, key.key, appId, ["running"]);

  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  collectPageErrors(page, pageErrors);
  // Rollback and domain removal ask for confirmation.
  page.on("dialog", (dialog) => dialog.accept());
});

afterAll(async () => {
  if (server && key) await deleteAllApps(server, key.key);
  await chromium?.close();
  await stopServer?.();
});

describe("an app's page", () => {
  test("the owner logs in on the app's address and sees its name, status, URL and facts", async () => {
    await page.goto(`${server.baseUrl}/#/apps/${appId}`);
    await logInThroughPage(page, OWNER);

    await page.getByRole("heading", { level: 1, name: APP_NAME }).waitFor();
    await header().getByText("running", { exact: true }).waitFor();
    const url = page.getByRole("link", { name: new RegExp(`^http://${APP_NAME}\\.localhost:${server.proxyPort}`) });
    await url.waitFor();
    expect(await page.getByRole("region", { name: "Overview", exact: true }).getByText("128 MB").count()).toBe(1);
    const tabs = page.getByRole("navigation", { name: "App" }).getByRole("link");
    expect(await tabs.allTextContents()).toEqual(["Overview", "Logs", "Builds", "Environment", "Settings", "Health", "Volumes", "Domains", "Traffic", "Files", "History"]);
    await shoot("overview");

    await page.setViewportSize({ width: 375, height: 800 });
    await page.getByRole("heading", { level: 1, name: APP_NAME }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await shoot("overview-phone");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test("an env var added and saved restarts the app, which then reads it", async () => {
    await openTab("Environment");
    await page.getByText("No variables yet.").waitFor();
    const addForm = page.getByRole("form", { name: "Add a variable" });
    await addForm.getByLabel("Name").fill("GREETING");
    await addForm.getByLabel("Value").fill("from the dashboard");
    await addForm.getByRole("button", { name: "Add" }).click();
    // Hidden until revealed.
    const value = page.getByLabel("Value of GREETING");
    expect(await value.getAttribute("type")).toBe("password");
    await page.getByRole("button", { name: "Reveal GREETING" }).click();
    expect(await value.getAttribute("type")).toBe("text");

    await page.getByLabel(".env text").fill('# pasted\nexport API_URL="https://example.test/a b"\nMODE=quiet # not part of it\nnot a variable line\n');
    await page.getByRole("button", { name: "Merge into the list" }).click();
    await page.getByText("2 variables merged from the pasted text; save to apply.").waitFor();
    await page.getByRole("alert").getByText("Skipped line 4: not KEY=VALUE.").waitFor();

    await page.getByRole("button", { name: "Save 3 changes" }).click();
    await page.getByRole("status").getByText("Saved. The app restarted to use them.").waitFor();
    const env = await server.request("GET", `/api/apps/${appId}/env`, { key: key.key });
    expect(env.body.envVars).toEqual({ GREETING: "from the dashboard", API_URL: "https://example.test/a b", MODE: "quiet" });
    await shoot("environment");

    await waitForStatus(server, key.key, appId, ["running"]);
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await Bun.sleep(250)) {
      if ((await (await viaProxy(server, APP_NAME)).text()) === "hi from the dashboard") break;
    }
    expect(await (await viaProxy(server, APP_NAME)).text()).toBe("hi from the dashboard");

    // A saved variable is removed, after a confirmation (accepted by the dialog handler); an edit
    // not saved yet survives it.
    await value.fill("edited, not saved");
    await page.getByRole("button", { name: "Remove MODE" }).click();
    await page.getByRole("status").getByText("Removed MODE. The app restarted without it.").waitFor();
    expect(await value.inputValue()).toBe("edited, not saved");
    await page.getByRole("button", { name: "Save 1 change" }).waitFor();
    await page.getByRole("button", { name: "Undo the change of GREETING" }).click();
    expect((await server.request("GET", `/api/apps/${appId}/env`, { key: key.key })).body.envVars).toEqual({ GREETING: "from the dashboard", API_URL: "https://example.test/a b" });
    await waitForStatus(server, key.key, appId, ["running"]);
  });

  test("a memory limit below the minimum is refused with the API's message beside the field", async () => {
    await openTab("Settings");
    await page.getByLabel("Memory (MB)").fill("10");
    await page.getByRole("button", { name: "Save settings" }).click();
    const memoryField = page.locator(".field", { has: page.getByLabel("Memory (MB)") });
    const message = memoryField.getByRole("alert");
    await message.waitFor();
    expect(await message.textContent()).toContain("memoryMB");
    expect(await page.getByLabel("Memory (MB)").getAttribute("aria-invalid")).toBe("true");
    const app = await server.request("GET", `/api/apps/${appId}`, { key: key.key });
    expect(app.body.app.memoryMB).toBe(128);
    await shoot("settings");
    await page.emulateMedia({ colorScheme: "dark" });
    await shoot("settings-dark");
    await page.emulateMedia({ colorScheme: "light" });
  });

  test("a valid memory limit is saved alone: the runtime shown and kept is the app's own", async () => {
    const buildsBefore = (await server.request("GET", `/api/apps/${appId}/builds`, { key: key.key })).body.builds.length;
    await openTab("Settings");
    expect(await page.getByLabel("Runtime").locator("option:checked").textContent()).toBe("Bun");
    expect(await page.getByLabel("Builder").locator("option:checked").textContent()).toBe("Automatic");
    await page.getByLabel("Memory (MB)").fill("192");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByRole("status").getByText(/^Saved\./).waitFor();
    const app = (await server.request("GET", `/api/apps/${appId}`, { key: key.key })).body.app;
    expect({ memoryMB: app.memoryMB, runtime: app.runtime }).toEqual({ memoryMB: 192, runtime: "bun" });
    expect((await server.request("GET", `/api/apps/${appId}/builds`, { key: key.key })).body.builds.length).toBe(buildsBefore);
    await waitForStatus(server, key.key, appId, ["running"]);
  });

  test("the deploy-hook URL is shown when asked for, deploys the app when called, and stops working once replaced", async () => {
    await openTab("Settings");
    const hook = page.getByRole("region", { name: "Deploy hook" });
    await hook.getByRole("button", { name: "Show the URL" }).click();
    const revealed = async () => {
      await hook.getByRole("button", { name: "Reveal Deploy-hook URL" }).click();
      return (await hook.getByRole("group", { name: "Deploy-hook URL" }).locator("code").textContent())!;
    };
    const url = await revealed();
    expect(url).toStartWith(`${server.baseUrl}/api/webhooks/deploy/${appId}/`);

    // Called from a CI, without a key: a new build of the app's kept source, which then serves.
    const called = await fetch(url, { method: "POST" });
    expect(called.status).toBe(202);
    const { deployHookRun } = (await called.json()) as { deployHookRun: { buildId: string } };
    await openTab("Builds");
    await page.getByRole("row", { name: /deploy-hook/ }).getByText("succeeded").waitFor({ timeout: 60_000 });
    expect((await server.request("GET", `/api/apps/${appId}/builds`, { key: key.key })).body.builds[0]).toMatchObject({ id: deployHookRun.buildId, trigger: "deploy-hook" });
    await waitForStatus(server, key.key, appId, ["running"]);

    // Replaced (after a confirmation, accepted by the dialog handler): the old URL is refused.
    await openTab("Settings");
    await hook.getByRole("button", { name: "Replace the URL" }).click();
    await hook.getByText("Replaced: the previous URL no longer deploys.").waitFor();
    const replacement = await revealed();
    expect(replacement).not.toBe(url);
    const refused = await fetch(url, { method: "POST" });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe("INVALID_DEPLOY_HOOK");
    await shoot("settings-deploy-hook");
  });

  test("stop, then start, from the header", async () => {
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await header().getByText("stopped", { exact: true }).waitFor({ timeout: 60_000 });
    expect((await viaProxy(server, APP_NAME)).status).not.toBe(200);

    await page.getByRole("button", { name: "Start", exact: true }).click();
    await header().getByText("running", { exact: true }).waitFor({ timeout: 60_000 });
    expect(await (await viaProxy(server, APP_NAME)).text()).toBe("hi from the dashboard");
  });

  test("the logs show the line the app printed, followed live and found by the search", async () => {
    await openTab("Logs");
    const lines = page.getByLabel("Log lines");
    await lines.getByText(PRINTED).first().waitFor();

    await page.getByRole("switch", { name: "Follow" }).check();
    await page.getByText("· following").waitFor();
    await lines.getByText(PRINTED).first().waitFor();
    // The app prints a line per request: one sent now arrives in the followed stream.
    await (await viaProxy(server, APP_NAME, "/followed-live")).text();
    await lines.getByText("request for /followed-live").waitFor({ timeout: 30_000 });

    // A restart ends the container's stream: the tab follows again, with nothing shown twice.
    const printedBefore = ((await lines.textContent()) ?? "").split(PRINTED).length - 1;
    await page.getByRole("button", { name: "Restart", exact: true }).click();
    await waitForStatus(server, key.key, appId, ["running"]);
    await page.waitForFunction(
      ([printed, before]) => (document.querySelector("pre.log-view")?.textContent ?? "").split(printed as string).length - 1 > (before as number),
      [PRINTED, printedBefore] as const,
      { timeout: 30_000 },
    );
    await (await viaProxy(server, APP_NAME, "/after-restart")).text();
    await lines.getByText("request for /after-restart").waitFor({ timeout: 30_000 });
    await page.getByText("· following").waitFor();
    const shownLines = ((await lines.textContent()) ?? "").split("\n");
    expect(shownLines.filter((line) => line === "request for /followed-live")).toHaveLength(1);
    expect(shownLines.filter((line) => line === PRINTED)).toHaveLength(printedBefore + 1);

    await page.getByLabel("Search").fill("no such words anywhere");
    await page.getByText(/^0 of \d+ lines match/).waitFor();
    await page.getByLabel("Search").fill("app page test");
    await lines.getByText(PRINTED).first().waitFor();
    await shoot("logs");
  });

  test("the builds list the deploy, its log opens, and a rollback releases it again", async () => {
    await openTab("Builds");
    const row = page.getByRole("row", { name: /upload/ });
    await row.getByText("succeeded").waitFor();
    await row.getByRole("link").click();
    await page.getByLabel("Build log").waitFor();
    expect(((await page.getByLabel("Build log").textContent()) ?? "").length).toBeGreaterThan(0);
    // A rollback to it (confirmed) releases the kept image again, as a new build entry.
    await page.getByRole("button", { name: /^Roll back to build/ }).first().click();
    await page.getByRole("row", { name: /rollback of/ }).getByText("succeeded").waitFor({ timeout: 60_000 });
    await waitForStatus(server, key.key, appId, ["running"]);
    await shoot("builds");
    // Seven columns on a phone: each build is a card, its rollback button reached without scrolling sideways.
    await page.setViewportSize({ width: 375, height: 800 });
    expect(await tablesScrollingSideways(page)).toEqual([]);
    await page.getByRole("button", { name: /^Roll back to build/ }).first().waitFor();
    await shoot("builds-phone");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test("a domain is added, proved by the TXT record it shows, given a certificate, and removed", async () => {
    await openTab("Domains");
    await page.getByRole("textbox", { name: "Domain" }).fill("www.app-page.example.test");
    await page.getByRole("button", { name: "Add domain" }).click();
    const row = page.getByRole("row", { name: /www\.app-page\.example\.test/ });
    await row.waitFor();
    // Ownership, certificate and DNS: pending until the record shown is found.
    expect(await row.locator(".badge").allTextContents()).toEqual(["pending", "none", "ok"]);
    expect(await row.getByRole("button", { name: "Own certificate for www.app-page.example.test" }).count()).toBe(0);
    const record = row.getByRole("definition");
    const [recordName, recordValue] = await record.locator("code").allTextContents();
    expect(recordName).toBe("_platform-challenge.www.app-page.example.test");
    await shoot("domain-pending");
    await page.setViewportSize({ width: 375, height: 800 });
    expect(await tablesScrollingSideways(page)).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 800 });

    await dns.addTxt(recordName!, recordValue!);
    await row.getByRole("button", { name: "Check now the TXT record of www.app-page.example.test" }).click();
    await row.getByText("verified", { exact: true }).waitFor();
    expect(await row.getByRole("definition").count()).toBe(0);

    // A certificate of the person's own: one for another name is refused with the reason, in the form.
    await page.getByRole("button", { name: "Own certificate for www.app-page.example.test" }).click();
    const form = page.getByRole("form", { name: "Upload a certificate for www.app-page.example.test" });
    const wrong = await makeCertificate({ names: ["other.example.test"] });
    await form.getByLabel("Certificate (PEM, the chain after it)").fill(wrong.chainPem);
    await form.getByLabel("Private key (PEM)").fill(wrong.keyPem);
    await form.getByRole("button", { name: "Use this certificate" }).click();
    await form.getByRole("alert").getByText(/www\.app-page\.example\.test/).waitFor();
    const own = await makeCertificate({ names: ["www.app-page.example.test"] });
    await form.getByLabel("Certificate (PEM, the chain after it)").fill(own.chainPem);
    await form.getByLabel("Private key (PEM)").fill(own.keyPem);
    await form.getByRole("button", { name: "Use this certificate" }).click();
    await row.getByRole("button", { name: "Back to automatic" }).waitFor();
    await row.getByText("issued", { exact: true }).waitFor();
    await row.getByText("your own", { exact: true }).waitFor();
    const { body } = await server.request("GET", `/api/apps/${appId}/domains`, { key: key.key });
    expect(body.domains[0].certificate).toMatchObject({ status: "issued", source: "uploaded" });
    await shoot("domains");
    await page.setViewportSize({ width: 375, height: 800 });
    expect(await tablesScrollingSideways(page)).toEqual([]);
    await shoot("domains-phone");
    await page.setViewportSize({ width: 1280, height: 800 });

    await row.getByRole("button", { name: "Back to automatic" }).click();
    await row.getByRole("button", { name: "Back to automatic" }).waitFor({ state: "detached" });
    expect((await server.request("GET", `/api/apps/${appId}/domains`, { key: key.key })).body.domains[0].certificate.source).not.toBe("uploaded");
    await page.getByRole("button", { name: "Remove www.app-page.example.test" }).click();
    await page.getByText("No custom domains yet.").waitFor();
  });

  test("traffic through the proxy shows in the numbers", async () => {
    for (let count = 0; count < 5; count++) await (await viaProxy(server, APP_NAME)).text();
    await openTab("Traffic");
    const requests = page.getByRole("row", { name: /^Requests/ });
    await requests.waitFor();
    const fiveMinutes = Number(await requests.getByRole("cell").nth(1).textContent());
    expect(fiveMinutes).toBeGreaterThanOrEqual(5);
    await page.getByText("Requests (5 min):").waitFor();
    // The charts draw a line once a second reading came.
    await page.getByRole("img", { name: "Requests (5 min) over time" }).locator("polyline").waitFor({ state: "attached", timeout: 15_000 });
    await shoot("traffic");
  });

  test("a new version whose build hangs is canceled from the Builds tab, and the app keeps serving the old one", async () => {
    const slow = appZip({
      "package.json": JSON.stringify({ name: APP_NAME, scripts: { build: "sleep 600", start: "bun server.js" } }),
      "server.js": "require('http').createServer((req, res) => res.end('new version')).listen(process.env.PORT);\n",
    });
    const deployed = await deployZip(server, key.key, { name: APP_NAME, runtime: "bun", memoryMB: "128" }, slow);
    expect(deployed.status).toBe(202);
    const buildId: string = deployed.body.buildId;
    await openTab("Builds");
    const row = page.getByRole("row", { name: new RegExp(buildId) });
    await row.getByText("building").waitFor({ timeout: 60_000 });
    // Confirmed by the dialog handler.
    await row.getByRole("button", { name: `Cancel build ${buildId}` }).click();
    await row.getByText("canceled").waitFor();
    expect(await row.getByRole("button", { name: `Cancel build ${buildId}` }).count()).toBe(0);
    const build = (await server.request("GET", `/api/apps/${appId}/builds/${buildId}`, { key: key.key })).body.build;
    expect(build).toMatchObject({ status: "canceled", error: "canceled by a user" });
    expect(await (await viaProxy(server, APP_NAME)).text()).toStartWith("hi ");
  });

  test("delete asks for the name, then goes back to the apps and the app is gone", async () => {
    await page.getByRole("button", { name: "Delete…" }).click();
    const confirm = page.getByRole("button", { name: "Delete app" });
    expect(await confirm.isDisabled()).toBe(true);
    await page.getByLabel(/to confirm/).fill("not-the-name");
    expect(await confirm.isDisabled()).toBe(true);
    await page.getByLabel(/to confirm/).fill(APP_NAME);
    await shoot("delete");
    await confirm.click();
    await page.waitForURL(/#\/apps$/);
    expect((await server.request("GET", `/api/apps/${appId}`, { key: key.key })).status).toBe(404);
    expect(pageErrors).toEqual([]);
  });
});

describe("a repository app's page", () => {
  test("its settings show the app's GitHub webhook when asked for, and replace its secret", async () => {
    const deployed = await server.request("POST", "/api/apps/deploy-from-repo", {
      key: key.key,
      body: { name: "from-git", runtime: "node", memoryMB: 64, autoDeploy: true, repository: { id: "1", owner: "acme", name: "site", branch: "main" } },
    });
    const repositoryAppId = deployed.body.app.id;
    await page.goto(`${server.baseUrl}/#/apps/${repositoryAppId}`);
    await openTab("Settings");
    const webhook = page.getByRole("region", { name: "GitHub webhook" });
    await webhook.getByRole("button", { name: "Show the webhook" }).click();
    const shown = async (label: string) => {
      await webhook.getByRole("button", { name: `Reveal ${label}` }).click();
      return (await webhook.getByRole("group", { name: label }).locator("code").textContent())!;
    };
    const fromApi = async () => (await server.request("GET", `/api/apps/${repositoryAppId}/webhook`, { key: key.key })).body.webhook;
    expect(await shown("Payload URL")).toBe(`${server.baseUrl}/api/webhooks/github/${repositoryAppId}`);
    const secret = await shown("Webhook secret");
    expect(secret).toBe((await fromApi()).secret);

    await webhook.getByRole("button", { name: "Replace the secret" }).click();
    await webhook.getByText("Replaced: set the new secret in the repository's webhook on GitHub.").waitFor();
    const replacement = await shown("Webhook secret");
    expect(replacement).not.toBe(secret);
    expect(replacement).toBe((await fromApi()).secret);
    await shoot("settings-github-webhook");
    expect(pageErrors).toEqual([]);
  });
});
