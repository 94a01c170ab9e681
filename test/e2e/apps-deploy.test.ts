// The dashboard's apps list and deploy page in headless Chromium against the real server: a static
// site ZIP deployed through the page (its env check asks for the variable the code reads), its
// build log followed until it runs, the site opened through the public proxy, the list showing it
// live, the API's message for a bad name, a deploy from a private repository on a local git
// server with env variables as .env text, and a Python app started with the command, port and
// variables given in the form. The steps build on each other, in order, on one server.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { TestServer } from "../helpers/server";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { appZip, deleteAllApps } from "../helpers/apps";
import { startGitServer, type GitServer } from "../helpers/git-server";
import { tempDir } from "../helpers/temp";
import { seriousViolations } from "../helpers/axe";
import { collectPageErrors, logInThroughPage } from "../helpers/dashboard-page";

setDefaultTimeout(180_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };
const SITE_TEXT = "Hello from the dashboard deploy";
const SCREENSHOTS = "test/e2e/screenshots";

let server: TestServer;
let git: GitServer;
let chromium: TestBrowser;
let page: Page;
let key: string;
let zipPath: string;
const pageErrors: string[] = [];

/** A screenshot of the page as it is now, which must have no serious or critical accessibility violation (axe-core). */
async function screenshot(step: string) {
  await page.screenshot({ path: `${SCREENSHOTS}/apps-deploy-${step}.png`, fullPage: true });
  expect({ step, violations: await seriousViolations(page) }).toEqual({ step, violations: [] });
}

beforeAll(async () => {
  git = await startGitServer();
  [server, chromium] = await Promise.all([TestServer.start({ PLATFORM_GIT_BASE_URL: git.baseUrl }), launchBrowser()]);
  expect((await server.request("POST", "/api/auth/setup", { body: OWNER })).status).toBe(201);
  key = (await server.createKey("cleanup")).key;
  zipPath = join(tempDir("apps-deploy-"), "site.zip");
  writeFileSync(
    zipPath,
    appZip({
      "index.html": `<!doctype html><title>Site</title><h1>${SITE_TEXT}</h1><script src="site-config.js"></script>`,
      "site-config.js": "const title = process.env.SITE_TITLE;\n",
    }),
  );
  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  collectPageErrors(page, pageErrors);
});

afterAll(async () => {
  await chromium?.close();
  if (server && key) await deleteAllApps(server, key);
  await server?.stop();
  await git?.stop();
});

async function fillAppFields(name: string) {
  const form = page.getByRole("form", { name: "Deploy from a ZIP" });
  await form.getByLabel(/^Name/).fill(name);
  await form.getByLabel("Runtime").selectOption("node");
  await form.getByLabel("Memory (MB)").fill("64");
  await form.getByLabel("ZIP file").setInputFiles(zipPath);
  return form;
}

describe("apps list and deploy", () => {
  test("after logging in the empty list offers a deploy", async () => {
    await page.goto(server.baseUrl);
    await logInThroughPage(page, OWNER);
    await page.getByRole("heading", { level: 1, name: "Apps" }).waitFor();
    await page.getByText("No apps in this workspace yet.").waitFor();
    await page.getByRole("link", { name: "Deploy an app" }).first().click();
    await page.getByRole("heading", { level: 1, name: "Deploy an app" }).waitFor();
    expect(page.url()).toEndWith("#/apps/new");
    await screenshot("empty-deploy-form");
  });

  test("a name with capitals is refused with the API's message, next to the form", async () => {
    const form = await fillAppFields("My-Site");
    await form.getByRole("button", { name: "Deploy" }).click();
    await form.getByRole("alert").getByText("Invalid body field 'name'").waitFor();
    expect(await form.getByRole("alert").textContent()).toContain("lowercase letters");
    expect((await server.request("GET", "/api/apps/", { key })).body.apps).toEqual([]);
    await screenshot("bad-name");
  });

  test("a static site ZIP is checked, deployed with its env variable, and its build followed until it runs", async () => {
    const form = await fillAppFields("my-site");
    await form.getByRole("button", { name: "Check the ZIP" }).click();
    const variable = form.getByLabel(/SITE_TITLE/);
    await variable.waitFor();
    await form.getByText("(required)").waitFor();
    await form.getByText("Read in site-config.js:1").waitFor();
    await screenshot("env-check");

    // The required variable must be filled before the deploy goes.
    await form.getByRole("button", { name: "Deploy" }).click();
    expect(await variable.evaluate((input) => (input as HTMLInputElement).validity.valueMissing)).toBe(true);
    expect((await server.request("GET", "/api/apps/", { key })).body.apps).toEqual([]);

    await variable.fill("Dashboard site");
    // The value typed for a variable the check found wins over the same name in the .env text.
    await form.getByLabel("Environment variables (optional)").fill("SITE_TITLE=from the text");
    await form.getByRole("button", { name: "Deploy" }).click();
    await page.getByRole("heading", { level: 2, name: "Deploying my-site" }).waitFor();
    await page.getByText("my-site is running at").waitFor({ timeout: 150_000 });
    const log = page.getByRole("log", { name: "Build log" });
    await expect(log.textContent()).resolves.toMatch(/static/i);
    await screenshot("deploy-log");

    const [app] = (await server.request("GET", "/api/apps/", { key })).body.apps;
    expect(app.status).toBe("running");
    expect((await server.request("GET", `/api/apps/${app.id}/env`, { key })).body.envVars).toEqual({ SITE_TITLE: "Dashboard site" });
    expect(await page.getByRole("link", { name: "Open the app's page" }).getAttribute("href")).toBe(`#/apps/${app.id}`);

    const siteUrl = await page.getByRole("status").getByRole("link").getAttribute("href");
    expect(siteUrl).toBe(`http://my-site.localhost:${server.proxyPort}`);
    const site = await chromium.context.newPage();
    try {
      await site.goto(siteUrl!);
      await site.getByRole("heading", { name: SITE_TEXT }).waitFor();
    } finally {
      await site.close();
    }
  });

  test("the list shows the app running with its URL, and the search filters by name", async () => {
    await page.getByRole("link", { name: "← Apps" }).click();
    await page.getByRole("heading", { level: 1, name: "Apps" }).waitFor();
    const row = page.getByRole("row", { name: /my-site/ });
    await row.getByText("running").waitFor();
    await row.getByRole("link", { name: `my-site.localhost:${server.proxyPort}` }).waitFor();
    expect(await row.getByRole("link", { name: "my-site", exact: true }).getAttribute("href")).toMatch(/^#\/apps\/.+/);
    await screenshot("list");

    const search = page.getByLabel("Search apps by name");
    await search.fill("other");
    await page.getByText("0 of 1 apps match.").waitFor();
    expect(await page.getByRole("row", { name: /my-site/ }).count()).toBe(0);
    await search.fill("site");
    await row.waitFor();
    // A refresh (every few seconds) keeps the person typing in the box.
    await page.waitForResponse((response) => response.url().endsWith("/api/apps/") && response.ok());
    expect(await search.evaluate((input) => input === document.activeElement)).toBe(true);
    expect(await search.inputValue()).toBe("site");
  });

  test("at 375 px the list and the deploy form fit the screen", async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      const widthFits = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
      await page.getByRole("row", { name: /my-site/ }).waitFor();
      expect(await widthFits()).toBe(true);
      await screenshot("list-narrow");
      await page.getByRole("link", { name: "Deploy an app" }).click();
      await page.getByRole("form", { name: "Deploy from a ZIP" }).waitFor();
      expect(await widthFits()).toBe(true);
      await page.getByRole("link", { name: "From a repository" }).click();
      await page.getByRole("form", { name: "Deploy from a repository" }).getByLabel("Repository owner").waitFor();
      expect(await widthFits()).toBe(true);
      await screenshot("repository-narrow");
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  test("a private repository is deployed with its access token and followed until it runs; a bad owner is named", async () => {
    await git.createRepo("acme", "landing", { branch: "main", files: { "web/index.html": "<h1>Landing from git</h1>" }, message: "First page", private: true });
    await page.goto(`${server.baseUrl}/#/apps/new/repository`);
    const form = page.getByRole("form", { name: "Deploy from a repository" });
    await form.getByLabel(/^Name/).fill("landing");
    await form.getByLabel("Memory (MB)").fill("64");
    await form.getByLabel("Repository owner").fill("-acme");
    await form.getByLabel("Repository name").fill("landing");
    await form.getByLabel("Folder (optional)").fill("web");
    await form.getByLabel("Repository id").fill("4242");
    await form.getByLabel("Access token (optional)").fill(git.token);
    await form.getByLabel("Deploy again on every push to the branch").check();
    await form.getByLabel("Environment variables (optional)").fill("LANDING_MODE=git\nLANDING_NOTE='from the form'");
    await form.getByRole("button", { name: "Deploy" }).click();
    await form.getByRole("alert").getByText("Invalid body field 'repository.owner'").waitFor();

    await form.getByLabel("Repository owner").fill("acme");
    await form.getByRole("button", { name: "Deploy" }).click();
    await page.getByText("landing is running at").waitFor({ timeout: 150_000 });
    await expect(page.getByRole("log", { name: "Build log" }).textContent()).resolves.toContain("First page");
    await screenshot("repository-log");

    const app = (await server.request("GET", "/api/apps/", { key })).body.apps.find((listed: { name: string }) => listed.name === "landing");
    expect(app.autoDeploy).toBe(true);
    expect(app.repository).toEqual(expect.objectContaining({ id: "4242", owner: "acme", name: "landing", branch: "main", path: "web", hasAccessToken: true }));
    expect((await server.request("GET", `/api/apps/${app.id}/env`, { key })).body.envVars).toEqual({ LANDING_MODE: "git", LANDING_NOTE: "from the form" });
    const site = await chromium.context.newPage();
    try {
      await site.goto(`http://landing.localhost:${server.proxyPort}`);
      await site.getByRole("heading", { name: "Landing from git" }).waitFor();
    } finally {
      await site.close();
    }
  });

  test("a Python app the detection cannot start runs with the CPUs, start command, port and env variables given in the form", async () => {
    const pythonZip = join(tempDir("apps-deploy-"), "python.zip");
    writeFileSync(
      pythonZip,
      appZip({
        "requirements.txt": "",
        // Not main.py, app.py or server.py: without a start command the deploy fails.
        "web.py":
          "import http.server, os\n" +
          "class Handler(http.server.BaseHTTPRequestHandler):\n" +
          "    def do_GET(self):\n" +
          "        self.send_response(200); self.end_headers(); self.wfile.write(('python on ' + os.environ['PORT'] + ', ' + os.environ['GREETING']).encode())\n" +
          "http.server.ThreadingHTTPServer(('0.0.0.0', int(os.environ['PORT'])), Handler).serve_forever()\n",
      }),
    );
    await page.goto(`${server.baseUrl}/#/apps/new`);
    const form = page.getByRole("form", { name: "Deploy from a ZIP" });
    await form.getByLabel(/^Name/).fill("py-web");
    await form.getByLabel("Runtime").selectOption("python");
    await form.getByLabel("Memory (MB)").fill("128");
    await form.getByLabel("CPUs (optional)").fill("0.5");
    await form.getByLabel("Start command (optional)").fill("python web.py");
    await form.getByLabel("Port (optional)").fill("8000");
    await form.getByLabel("ZIP file").setInputFiles(pythonZip);
    // The code reads GREETING in a way the check does not see: it is given as .env text. A line
    // that is not KEY=VALUE is refused, not dropped.
    const envText = form.getByLabel("Environment variables (optional)");
    await envText.fill("# greeting\nGREETING hello");
    await form.getByRole("button", { name: "Deploy" }).click();
    await form.getByText("line 2 (GREETING hello) is not KEY=VALUE").waitFor();
    expect((await server.request("GET", "/api/apps/", { key })).body.apps.some((listed: { name: string }) => listed.name === "py-web")).toBe(false);
    await envText.fill('# greeting\nexport GREETING="hello from the form"');
    await form.getByRole("button", { name: "Deploy" }).click();
    await page.getByText("py-web is running at").waitFor({ timeout: 150_000 });
    await screenshot("python-log");

    const app = (await server.request("GET", "/api/apps/", { key })).body.apps.find((listed: { name: string }) => listed.name === "py-web");
    expect(app).toMatchObject({ runtime: "python", cpus: 0.5, startupCommand: "python web.py", exposePort: 8000, status: "running" });
    expect((await server.request("GET", `/api/apps/${app.id}/env`, { key })).body.envVars).toEqual({ GREETING: "hello from the form" });
    const site = await chromium.context.newPage();
    try {
      await site.goto(`http://py-web.localhost:${server.proxyPort}`);
      await site.getByText("python on 8000, hello from the form").waitFor();
    } finally {
      await site.close();
    }
    await page.getByRole("button", { name: "Deploy another app" }).click();
    await form.getByLabel("Start command (optional)").waitFor();
    expect(await form.getByLabel("Start command (optional)").inputValue()).toBe("");
  });

  test("a ZIP with nothing to run fails, and the page says why", async () => {
    const brokenZip = join(tempDir("apps-deploy-"), "broken.zip");
    writeFileSync(brokenZip, appZip({ "README.md": "nothing to run here" }));
    await page.goto(`${server.baseUrl}/#/apps/new`);
    const form = page.getByRole("form", { name: "Deploy from a ZIP" });
    await form.getByLabel(/^Name/).fill("broken");
    await form.getByLabel("Memory (MB)").fill("64");
    await form.getByLabel("ZIP file").setInputFiles(brokenZip);
    await form.getByRole("button", { name: "Deploy" }).click();
    const heading = page.getByRole("heading", { level: 2, name: "Deploying broken" });
    await heading.waitFor();
    expect(await heading.evaluate((element) => element === document.activeElement)).toBe(true);
    await page.getByText("The deploy did not succeed").waitFor({ timeout: 60_000 });
    await page.getByRole("status").getByText("failed", { exact: true }).waitFor();
    await expect(page.getByRole("log", { name: "Build log" }).textContent()).resolves.toContain("No package.json, index.html or entry file");
    await page.emulateMedia({ colorScheme: "dark" });
    await screenshot("failed-dark");
    await page.emulateMedia({ colorScheme: "light" });
    await page.getByRole("button", { name: "Deploy another app" }).click();
    await page.getByRole("form", { name: "Deploy from a ZIP" }).waitFor();
  });

  test("with 200 apps the list shows them all and the search narrows them at once", async () => {
    const many = await chromium.context.newPage();
    try {
      const apps = Array.from({ length: 200 }, (_, index) => ({
        id: `app_${index}`,
        name: `app-${index}`,
        runtime: "node",
        status: index % 7 === 0 ? "failed" : "running",
        statusReason: null,
        url: `http://app-${index}.localhost:${server.proxyPort}`,
        updatedAt: new Date(Date.UTC(2026, 0, 1, 0, index)).toISOString(),
      }));
      // The answer of GET /api/apps/ for a workspace of 200 apps (too many containers to start here).
      await many.route(/\/api\/apps\/$/, (route) => route.fulfill({ json: { success: true, apps, meta: { total: apps.length } } }));
      await many.goto(`${server.baseUrl}/#/apps`);
      await many.getByText("200 apps.").waitFor();
      expect(await many.getByRole("row").count()).toBe(201);
      await many.getByLabel("Search apps by name").fill("app-19");
      await many.getByText("11 of 200 apps match.").waitFor();
      expect(await many.getByRole("row").count()).toBe(12);
      await many.screenshot({ path: `${SCREENSHOTS}/apps-deploy-many.png`, fullPage: true });
    } finally {
      await many.close();
    }
  });

  test("no page threw", () => {
    expect(pageErrors).toEqual([]);
  });
});
