// Image deploys and registry credentials in the dashboard, in headless Chromium against the real
// server, the real engine and two registries on loopback (test/helpers/registry.ts), one open and
// one asking for a password: an image deployed from the deploy page (a refused reference shown
// beside its field) and followed until it serves; the app page with the image, the digest each
// build pulled, a redeploy that pulls a moved tag again and settings saved without a runtime;
// credentials added, checked (refused, then accepted), deleted in Settings > Registries; a viewer
// reads them with nothing to add, check or delete. The steps build on each other, in order.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Locator, Page } from "playwright-core";
import { viaProxy } from "../helpers/apps";
import { seriousViolations } from "../helpers/axe";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { collectPageErrors, endAppsPageTest, logInThroughPage, ownerHoldingKey } from "../helpers/dashboard-page";
import { removeImagesFrom, startRegistry, type TestRegistry } from "../helpers/registry";
import { TestServer, type CreatedKey } from "../helpers/server";

setDefaultTimeout(180_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };
const VIEWER = { email: "viewer@example.com", password: "viewer password 1" };
const REGISTRY_USER = "deployer";
const REGISTRY_PASSWORD = "Reg1stry-Passw0rd-e2e";
const SCREENSHOTS = "test/e2e/screenshots";

let open: TestRegistry;
let locked: TestRegistry;
let server: TestServer;
let chromium: TestBrowser;
let page: Page;
let key: CreatedKey;
let appId: string;
const pageErrors: string[] = [];

/** A screenshot of the page as it is now, which must have no serious or critical accessibility violation (axe-core). */
async function screenshot(step: string, onPage = page) {
  await onPage.screenshot({ path: `${SCREENSHOTS}/images-${step}.png`, fullPage: true });
  expect({ step, violations: await seriousViolations(onPage) }).toEqual({ step, violations: [] });
}

beforeAll(async () => {
  [open, locked] = await Promise.all([startRegistry(), startRegistry({ name: REGISTRY_USER, password: REGISTRY_PASSWORD })]);
  [server, chromium] = await Promise.all([TestServer.start({ PLATFORM_BUILD_REGISTRIES: `${open.host},${locked.host}` }), launchBrowser()]);
  key = await ownerHoldingKey(server, OWNER, "images page test");
  const invitation = await server.request("POST", "/api/organization/invitations", { key: key.key, body: { email: VIEWER.email, role: "viewer" } });
  expect((await server.request("POST", `/api/organization/invitations/${invitation.body.invitation.id}/accept`, { body: { password: VIEWER.password } })).status).toBeLessThan(300);
  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  collectPageErrors(page, pageErrors);
  page.on("dialog", (dialog) => dialog.accept());
}, 120_000);

afterAll(async () => {
  await endAppsPageTest(chromium, server, key);
  for (const registry of [open, locked]) {
    if (!registry) continue;
    removeImagesFrom(registry.host);
    await registry.stop();
  }
}, 120_000);

/** The refusal shown beside `input` (the alert its aria-describedby names), once it is marked invalid. */
async function fieldError(input: Locator): Promise<string> {
  await input.locator("xpath=self::*[@aria-invalid='true']").waitFor();
  const describedBy = await input.getAttribute("aria-describedby");
  return (await page.locator(`[id="${describedBy}"][role="alert"]`).textContent()) ?? "";
}

const imageForm = () => page.getByRole("form", { name: "Deploy from an image" });

describe("deploy from an image", () => {
  test("the deploy page offers an image, points to the registry credentials, and shows a refused image beside its field", async () => {
    await page.goto(`${server.baseUrl}/#/apps/new`);
    await logInThroughPage(page, OWNER);
    await page.getByRole("heading", { level: 1, name: "Deploy an app" }).waitFor();
    await page.getByRole("navigation", { name: "Deploy from" }).getByRole("link", { name: "From an image" }).click();
    expect(page.url()).toEndWith("#/apps/new/image");
    const form = imageForm();
    expect(await form.getByRole("link", { name: "Settings › Registries" }).getAttribute("href")).toBe("#/settings/registries");
    // An image deploy has no runtime to choose.
    expect(await form.getByLabel("Runtime").count()).toBe(0);

    await form.getByLabel(/^Name/).fill("img-site");
    await form.getByLabel("Memory (MB)").fill("64");
    await form.getByLabel(/^Port/).fill("8080");
    const image = form.getByLabel(/^Image/);
    for (const [reference, refusal] of [
      [`${open.host}/Web/Site:1`, "Invalid body field 'image'"],
      // A loopback registry the administrator did not list: refused before any pull.
      ["127.0.0.2:5999/web/site:1", "by its IP address"],
    ]) {
      await image.fill(reference!);
      await form.getByRole("button", { name: "Deploy" }).click();
      expect(await fieldError(image)).toContain(refusal!);
      expect(await image.evaluate((input) => input === document.activeElement)).toBe(true);
    }
    expect((await server.request("GET", "/api/apps/", { key: key.key })).body.apps).toEqual([]);
    await screenshot("refused-image");
  });

  test("an image deployed from the form is pulled, followed in the build log and served through the proxy", async () => {
    await open.pushWebImage("web/site", "1.0", { text: "first image" });
    const form = imageForm();
    await form.getByLabel(/^Image/).fill(`${open.host}/web/site:1.0`);
    await form.getByLabel("Environment variables (optional)").fill("GREETING=hello");
    // The release waits for GET / to answer, as the JSON body's healthCheck asks.
    await form.getByLabel("Health check path").fill("/");
    await form.getByRole("button", { name: "Deploy" }).click();
    await page.getByRole("heading", { level: 2, name: "Deploying img-site" }).waitFor();
    await page.getByText("img-site is running at").waitFor({ timeout: 150_000 });
    await expect(page.getByRole("log", { name: "Build log" }).textContent()).resolves.toContain(`Pulling ${open.host}/web/site:1.0`);
    await screenshot("deploy-log");

    const [app] = (await server.request("GET", "/api/apps/", { key: key.key })).body.apps;
    appId = app.id;
    expect(app).toMatchObject({ status: "running", runtime: "image", image: `${open.host}/web/site:1.0`, exposePort: 8080, healthCheck: { path: "/", intervalSeconds: 10 } });
    expect((await server.request("GET", `/api/apps/${appId}/env`, { key: key.key })).body.envVars).toEqual({ GREETING: "hello" });
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("first image");
  });

  test("the app page shows the image and each build's digest; a redeploy pulls the moved tag again", async () => {
    await page.getByRole("link", { name: "Open the app's page" }).click();
    await page.getByRole("heading", { level: 1, name: "img-site" }).waitFor();
    const facts = page.getByRole("region", { name: "Overview" });
    await facts.getByText(`${open.host}/web/site:1.0`, { exact: true }).waitFor();
    await facts.getByText("runs as the image's own user").waitFor();

    const moved = await open.pushWebImage("web/site", "1.0", { text: "moved tag" });
    await page.getByRole("button", { name: "Redeploy (pulls the image again)" }).click();
    await page.getByRole("navigation", { name: "App" }).getByRole("link", { name: "Builds" }).click();
    const builds = page.getByRole("table", { name: "Builds, newest first" });
    await builds.getByRole("columnheader", { name: "Digest pulled" }).waitFor();
    const newest = builds.getByRole("row").nth(1);
    await newest.getByText(moved.slice(0, "sha256:".length + 12), { exact: true }).waitFor({ timeout: 120_000 });
    await newest.getByText("succeeded").waitFor({ timeout: 120_000 });
    // Each build shows the digest it pulled: two builds, two digests.
    const digests = await builds.locator("tbody code[title]").allTextContents();
    expect(digests).toHaveLength(2);
    expect(new Set(digests).size).toBe(2);
    for (const digest of digests) expect(digest).toMatch(/^sha256:[0-9a-f]{12}$/);
    const app = (await server.request("GET", `/api/apps/${appId}`, { key: key.key })).body.app;
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await Bun.sleep(250)) {
      if ((await (await viaProxy(server, app.subdomain)).text()) === "moved tag") break;
    }
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("moved tag");
    await screenshot("builds");
  });

  test("an image app's settings have no runtime or builder and save", async () => {
    await page.getByRole("navigation", { name: "App" }).getByRole("link", { name: "Settings" }).click();
    const form = page.getByRole("form", { name: "App settings" });
    await form.getByLabel("Memory (MB)").waitFor();
    expect(await form.getByLabel("Runtime").count()).toBe(0);
    expect(await form.getByLabel("Builder").count()).toBe(0);
    await form.getByLabel("Memory (MB)").fill("96");
    await form.getByRole("button", { name: "Save settings" }).click();
    await form.getByText(/^Saved\./).waitFor({ timeout: 60_000 });
    expect((await server.request("GET", `/api/apps/${appId}`, { key: key.key })).body.app).toMatchObject({ runtime: "image", memoryMB: 96 });
  });
});

describe("Settings > Registries", () => {
  const credentialsTable = () => page.getByRole("table", { name: "Registry credentials" });
  const addForm = () => page.getByRole("form", { name: "Add registry credentials" });

  async function addCredentials(password: string) {
    const form = addForm();
    await form.getByLabel("Registry host").fill(locked.host);
    await form.getByLabel("Username").fill(REGISTRY_USER);
    await form.getByLabel("Password or token").fill(password);
    await form.getByRole("button", { name: "Add" }).click();
    await credentialsTable().getByRole("row", { name: new RegExp(locked.host) }).waitFor();
    // The form is emptied: the password is nowhere on the page.
    expect(await form.getByLabel("Password or token").inputValue()).toBe("");
    expect(await page.content()).not.toContain(password);
  }

  async function deleteCredentials() {
    await page.getByRole("button", { name: `Delete the credentials for ${locked.host}` }).click();
    await page.getByText("No registry credentials yet").waitFor();
  }

  test("credentials with a wrong password are added, checked as refused, and deleted", async () => {
    await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Settings" }).click();
    await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: "Registries" }).click();
    await page.getByRole("heading", { level: 2, name: "Registries" }).waitFor();
    await page.getByText("No registry credentials yet").waitFor();
    await addCredentials("wrong-password");
    const row = credentialsTable().getByRole("row", { name: new RegExp(locked.host) });
    await row.getByText(REGISTRY_USER, { exact: true }).waitFor();
    await row.getByText("Not checked").waitFor();
    await row.getByRole("button", { name: `Check the login to ${locked.host}` }).click();
    await row.getByText("refused", { exact: true }).waitFor({ timeout: 60_000 });
    await screenshot("registry-refused");
    await deleteCredentials();
    expect((await server.request("GET", "/api/registries/", { key: key.key })).body.registries).toEqual([]);
  });

  test("the right password is checked as accepted; a second entry for the host is refused beside it", async () => {
    await addCredentials(REGISTRY_PASSWORD);
    const row = credentialsTable().getByRole("row", { name: new RegExp(locked.host) });
    await row.getByRole("button", { name: `Check the login to ${locked.host}` }).click();
    await row.getByText("accepted", { exact: true }).waitFor({ timeout: 60_000 });

    const form = addForm();
    await form.getByLabel("Registry host").fill(locked.host);
    await form.getByLabel("Username").fill(REGISTRY_USER);
    await form.getByLabel("Password or token").fill("another-one");
    await form.getByRole("button", { name: "Add" }).click();
    expect(await fieldError(form.getByLabel("Registry host"))).toContain(`credentials for ${locked.host} already`);
    await screenshot("registry-accepted");
  });

  test("a viewer reads the credentials with nothing to add, check or delete", async () => {
    const context = await chromium.newContext();
    try {
      const viewerPage = await context.newPage();
      collectPageErrors(viewerPage, pageErrors);
      await viewerPage.goto(`${server.baseUrl}/#/settings/registries`);
      await logInThroughPage(viewerPage, VIEWER);
      await viewerPage.getByRole("heading", { level: 2, name: "Registries" }).waitFor();
      await viewerPage.getByRole("table", { name: "Registry credentials" }).getByText(locked.host).waitFor();
      await viewerPage.getByText("Your role in this workspace (viewer) can see which registries have credentials").waitFor();
      expect(await viewerPage.getByRole("form", { name: "Add registry credentials" }).count()).toBe(0);
      for (const name of ["Add", /^Check/, /^Delete/]) expect(await viewerPage.getByRole("button", { name }).count()).toBe(0);
      await screenshot("registries-viewer", viewerPage);
    } finally {
      await context.close();
    }
  });

  test("the owner deletes the credentials; the page had no error", async () => {
    await deleteCredentials();
    expect((await server.request("GET", "/api/registries/", { key: key.key })).body.registries).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
