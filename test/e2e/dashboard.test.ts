// The built-in dashboard in headless Chromium against the real server: owner setup, API keys in
// Settings > Developer, logout and login, invitations, the audit log, and deleting a second
// workspace switched to in the header; the setup's key or one-time token when the browser is not
// on the machine itself. The steps build on each other (one owner), so they run in order on one
// server.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "playwright-core";
import { TestServer } from "../helpers/server";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { sessionCookieOf } from "../helpers/auth-matrix";

setDefaultTimeout(60_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };
const INVITEE = { email: "dev@example.com", password: "invitee password" };

let server: TestServer;
let chromium: TestBrowser;
let page: Page;
/** Uncaught exceptions and console errors (CSP violations among them) of every page. */
const pageErrors: string[] = [];

function watch(watched: Page) {
  watched.on("pageerror", (error) => pageErrors.push(`pageerror: ${error.message}`));
  watched.on("console", (message) => {
    // The browser logs every non-2xx fetch; the dashboard expects some (401 while logged out).
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) pageErrors.push(message.text());
  });
  // Revoking a key asks for confirmation.
  watched.on("dialog", (dialog) => dialog.accept());
}

const header = () => page.getByRole("banner");

/** Resolves when the page's PUT /api/api-keys/{id} has succeeded. */
const keyUpdate = () =>
  page.waitForResponse((response) => response.request().method() === "PUT" && response.url().includes("/api/api-keys/") && response.ok());

async function openSettingsTab(tab: string) {
  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Settings" }).click();
  await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: tab }).click();
  await page.getByRole("heading", { level: 2, name: tab === "Developer" ? "API keys" : tab }).waitFor();
}

beforeAll(async () => {
  [server, chromium] = await Promise.all([TestServer.start(), launchBrowser()]);
  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  watch(page);
});

afterAll(async () => {
  await chromium?.close();
  await server?.stop();
});

describe("dashboard", () => {
  test("the first visit offers the owner setup and lands on the dashboard", async () => {
    await page.goto(server.baseUrl);
    await page.getByRole("heading", { name: "Create the owner account" }).waitFor();
    await page.getByLabel("Email").fill(OWNER.email);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Create owner account" }).click();

    await header().getByText(OWNER.email).waitFor();
    await page.getByRole("heading", { level: 1, name: "Apps" }).waitFor();
    const sections = page.getByRole("navigation", { name: "Sections" }).getByRole("link");
    expect(await sections.allTextContents()).toEqual(["Apps", "Databases", "Volumes", "Settings"]);
    expect(await page.getByLabel("Workspace").inputValue()).toBeTruthy();
  });

  test("a key created in the Developer tab is shown once, works, can be disabled, and is revoked", async () => {
    await openSettingsTab("Developer");
    await page.getByLabel("Name").fill("ci deploy");
    await page.getByLabel("Expires in (days)").fill("30");
    await page.getByRole("button", { name: "Create key" }).click();

    const shownKey = page.getByTestId("new-key");
    await shownKey.waitFor();
    const key = (await shownKey.textContent())!;
    expect(key).toMatch(/^svc_[A-Za-z0-9]{32,}$/);
    await page.getByText("won't be shown again").waitFor();
    const row = page.getByRole("table", { name: "API keys" }).getByRole("row", { name: /ci deploy/ });
    await row.waitFor();
    // As the owner, the key is also among all the workspace's keys, under the owner's email.
    await page.getByRole("table", { name: "All keys in this workspace" }).getByRole("row", { name: /owner@example\.com.*ci deploy/ }).waitFor();

    const listed = await server.request("GET", "/api/api-keys/", { key });
    expect(listed.status).toBe(200);
    expect(listed.body.keys.map((k: any) => k.name)).toEqual(["ci deploy"]);
    expect(listed.body.keys[0].expiresAt).not.toBeNull();

    await page.screenshot({ path: "/tmp/dashboard.png", fullPage: true });

    // Shown once: after "Done" and a reload the full key is nowhere on the page.
    await page.getByRole("button", { name: "Done" }).click();
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(key);

    const toggle = page.getByRole("switch", { name: "Enable ci deploy" });
    await Promise.all([keyUpdate(), toggle.uncheck()]);
    expect((await server.request("GET", "/api/api-keys/", { key })).status).toBe(401);
    await Promise.all([keyUpdate(), toggle.check()]);
    expect((await server.request("GET", "/api/api-keys/", { key })).status).toBe(200);

    const allKeys = page.getByRole("table", { name: "All keys in this workspace" });
    await page.getByRole("button", { name: "Revoke ci deploy" }).click();
    await page.getByText("No API keys yet.").waitFor();
    const revoked = await server.request("GET", "/api/api-keys/", { key });
    expect(revoked.status).toBe(401);
    expect(revoked.body.success).toBe(false);
    // Revoked in one list, gone from the other: from the owner's own list, and back.
    await allKeys.getByRole("row", { name: /ci deploy/ }).waitFor({ state: "detached" });
    await page.getByLabel("Name").fill("laptop");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByRole("table", { name: "API keys" }).getByRole("row", { name: /laptop/ }).waitFor();
    await allKeys.getByRole("button", { name: "Revoke owner@example.com's laptop" }).click();
    await page.getByText("No API keys yet.").waitFor();
  });

  test("after logging out the login form shows, a wrong password is refused, the right one logs in", async () => {
    await header().getByRole("button", { name: "Log out" }).click();
    await page.getByRole("heading", { name: "Log in" }).waitFor();
    await page.reload();
    await page.getByRole("heading", { name: "Log in" }).waitFor();

    await page.getByLabel("Email").fill(OWNER.email);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("alert").getByText("Wrong email or password").waitFor();

    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Log in" }).click();
    await header().getByText(OWNER.email).waitFor();
  });

  test("an invitee opens the invite link in another browser, accepts with a password and lands in the workspace", async () => {
    await openSettingsTab("Members");
    await page.getByRole("row", { name: new RegExp(OWNER.email) }).waitFor();
    await page.getByLabel("Email").fill(INVITEE.email);
    await page.getByRole("form", { name: "Invite a member" }).getByLabel("Role").selectOption("member");
    await page.getByRole("button", { name: "Invite", exact: true }).click();
    const linkField = page.getByLabel(`Invite link for ${INVITEE.email}`);
    await linkField.waitFor();
    const link = await linkField.inputValue();
    expect(link).toMatch(new RegExp(`^${server.baseUrl}/#/invite/.+`));

    const inviteeContext = await chromium.newContext();
    try {
      const inviteePage = await inviteeContext.newPage();
      watch(inviteePage);
      await inviteePage.goto(link);
      // The page says what the invitation is for before anything is typed.
      await inviteePage.getByRole("heading", { name: "Join default" }).waitFor();
      await inviteePage.getByText(`${INVITEE.email} was invited to default as member.`).waitFor();
      await inviteePage.getByLabel("Password").fill(INVITEE.password);
      await inviteePage.getByRole("button", { name: "Accept invitation" }).click();
      await inviteePage.getByRole("banner").getByText(INVITEE.email).waitFor();
      await inviteePage.getByRole("heading", { level: 1, name: "Apps" }).waitFor();
      expect(inviteePage.url()).toEndWith("#/apps");
    } finally {
      await inviteeContext.close();
    }

    await page.reload();
    await page.getByRole("row", { name: new RegExp(INVITEE.email) }).first().waitFor();
    await page.getByRole("row", { name: /accepted/ }).waitFor();
  });

  test("a member's key is listed among all the workspace's keys, and the owner revokes it there", async () => {
    // The invitee makes a key with their own session, as the Developer tab would.
    const login = await fetch(`${server.baseUrl}/api/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(INVITEE) });
    expect(login.status).toBe(200);
    const cookie = sessionCookieOf(login);
    const made = await fetch(`${server.baseUrl}/api/api-keys/`, {
      method: "POST",
      headers: { cookie, origin: server.baseUrl, "content-type": "application/json" },
      body: JSON.stringify({ name: "dev laptop" }),
    });
    expect(made.status).toBe(201);
    const inviteeKey = ((await made.json()) as { key: string }).key;
    const appsWith = (key: string) => fetch(`${server.baseUrl}/api/apps/`, { headers: { authorization: `Bearer ${key}` } }).then((response) => response.status);
    expect(await appsWith(inviteeKey)).toBe(200);

    await openSettingsTab("Developer");
    const all = page.getByRole("table", { name: "All keys in this workspace" });
    const row = all.getByRole("row", { name: /dev@example\.com.*dev laptop/ });
    await row.waitFor();
    // The owner's own list holds only the owner's keys.
    expect(await page.getByRole("table", { name: "API keys" }).getByText("dev laptop").count()).toBe(0);
    await row.getByRole("button", { name: "Revoke dev@example.com's dev laptop" }).click();
    await row.waitFor({ state: "detached" });
    expect(await appsWith(inviteeKey)).toBe(401);
  });

  test("the owner makes the invitee a viewer, may not demote the last owner, and removes the invitee", async () => {
    await openSettingsTab("Members");
    await page.getByLabel(`Role of ${INVITEE.email}`).selectOption("viewer");
    await page.waitForResponse((response) => response.request().method() === "PATCH" && response.url().includes("/api/organization/members/") && response.ok());
    await page.reload();
    await page.getByRole("heading", { level: 2, name: "Members" }).waitFor();
    await expect(page.getByLabel(`Role of ${INVITEE.email}`).inputValue()).resolves.toBe("viewer");

    // Refused with the API's reason, and the select shows the role kept.
    await page.getByLabel(`Role of ${OWNER.email}`).selectOption("admin");
    await page.getByText("The workspace's last owner cannot be demoted").waitFor();
    await expect(page.getByLabel(`Role of ${OWNER.email}`).inputValue()).resolves.toBe("owner");

    // Removed after a confirmation (accepted by the dialog handler). Read back with the page's own session.
    const roles = async () => {
      const { members } = (await (await page.request.get(`${server.baseUrl}/api/organization/members`)).json()) as { members: { email: string; role: string }[] };
      return Object.fromEntries(members.map((member) => [member.email, member.role]));
    };
    expect(await roles()).toEqual({ [OWNER.email]: "owner", [INVITEE.email]: "viewer" });
    await page.getByRole("button", { name: `Remove ${INVITEE.email}` }).click();
    await page.getByLabel(`Role of ${INVITEE.email}`).waitFor({ state: "detached" });
    expect(await roles()).toEqual({ [OWNER.email]: "owner" });
  });

  test("the audit log tab lists the key's creation and revocation", async () => {
    await openSettingsTab("Audit log");
    const log = page.getByRole("table", { name: "Audit log" });
    await log.getByRole("row", { name: /API key created/ }).first().waitFor();
    await log.getByRole("row", { name: /API key revoked/ }).first().waitFor();
    await log.getByRole("row", { name: /Invitation accepted/ }).waitFor();
    // The owner revoked all three: their own two keys, and the invitee's among all the workspace's keys.
    const revocations = await log.getByRole("row", { name: /API key revoked/ }).allTextContents();
    expect(revocations.length).toBe(3);
    for (const revocation of revocations) expect(revocation).toContain(OWNER.email);
  });

  test("the owner's only workspace is not offered for deletion; a second one, switched to in the header, is deleted once named", async () => {
    await openSettingsTab("Members");
    await page.getByRole("heading", { level: 2, name: "Delete the workspace" }).waitFor();
    await page.getByText("default is your only workspace").waitFor();
    expect(await page.getByRole("form", { name: "Delete workspace" }).count()).toBe(0);

    // A second workspace, made on the command line and claimed by the same account.
    const staging = await server.createKey("staging key", "staging");
    const claimed = await server.request("POST", "/api/auth/claim", { key: staging.key, body: OWNER });
    expect(claimed.status).toBeLessThan(300);
    await page.reload();
    await header().getByLabel("Workspace").selectOption({ label: "staging" });
    const confirm = page.getByRole("form", { name: "Delete workspace" });
    await confirm.getByLabel("Type staging to confirm").fill("staging");
    await confirm.getByRole("button", { name: "Delete workspace" }).click();

    // Back in the workspace left, which is the only one now.
    await page.getByRole("heading", { level: 1, name: "Apps" }).waitFor();
    const session = (await (await page.request.get(`${server.baseUrl}/api/auth/session`)).json()) as { activeOrganizationId: string; organizations: { name: string }[] };
    expect(session.organizations.map((organization) => organization.name)).toEqual(["default"]);
    await expect(header().getByLabel("Workspace").inputValue()).resolves.toBe(session.activeOrganizationId);
    expect(await header().getByLabel("Workspace").locator("option").allTextContents()).toEqual(["default"]);
    expect((await server.request("GET", "/api/apps/", { key: staging.key })).status).toBe(401);
  });

  test("no page threw or hit the content security policy", () => {
    expect(pageErrors).toEqual([]);
  });
});

describe("a headless install whose first key came from the command line", () => {
  test("the setup form asks for that key, refuses another and claims the owner with it", async () => {
    const headless = await TestServer.start();
    const context = await chromium.newContext();
    try {
      const cli = await headless.createKey("headless");
      const setupPage = await context.newPage();
      watch(setupPage);
      await setupPage.goto(headless.baseUrl);
      await setupPage.getByRole("heading", { name: "Create the owner account" }).waitFor();
      const keyField = setupPage.getByLabel("API key (from platform keys create)");
      await keyField.fill(`svc_${"W1x2Y3z4A5".repeat(4)}`);
      await setupPage.getByLabel("Email").fill(OWNER.email);
      await setupPage.getByLabel("Password").fill(OWNER.password);
      await setupPage.getByRole("button", { name: "Create owner account" }).click();
      await setupPage.getByRole("alert").getByText(/platform keys create/).waitFor();

      // The command prints a JSON line; pasting it whole works.
      await keyField.fill(JSON.stringify(cli));
      await setupPage.getByRole("button", { name: "Create owner account" }).click();
      await setupPage.getByRole("banner").getByText(OWNER.email).waitFor();
      const session = await headless.request("GET", "/api/auth/session", { key: cli.key });
      expect(session.body.user.email).toBe(OWNER.email);
      expect(pageErrors).toEqual([]);
    } finally {
      await context.close();
      await headless.stop();
    }
  });
});

describe("a fresh install reached through a front proxy", () => {
  test("the setup form asks for the printed one-time token, and the printed link fills it in", async () => {
    // The browser connects from 127.0.0.1, which here is a trusted proxy: it is not the machine itself.
    const proxied = await TestServer.start({ PLATFORM_TRUSTED_PROXIES: "127.0.0.1" });
    const context = await chromium.newContext();
    try {
      // Printed right after the "listening" line, which may have arrived alone.
      let token: string | undefined;
      for (let waited = 0; !token && waited < 5000; waited += 50) {
        token = /\?setup=([A-Za-z0-9]+)/.exec(proxied.output)?.[1];
        if (!token) await Bun.sleep(50);
      }
      expect(token).toBeTruthy();
      const setupPage = await context.newPage();
      watch(setupPage);
      await setupPage.goto(proxied.baseUrl);
      await setupPage.getByRole("heading", { name: "Create the owner account" }).waitFor();
      await setupPage.getByLabel("Setup token").fill("not-the-token");
      await setupPage.getByLabel("Email").fill(OWNER.email);
      await setupPage.getByLabel("Password").fill(OWNER.password);
      await setupPage.getByRole("button", { name: "Create owner account" }).click();
      await setupPage.getByRole("alert").getByText(/setup token/).waitFor();

      await setupPage.goto(`${proxied.baseUrl}/?setup=${token}`);
      expect(await setupPage.getByLabel("Setup token").inputValue()).toBe(token!);
      await setupPage.getByLabel("Email").fill(OWNER.email);
      await setupPage.getByLabel("Password").fill(OWNER.password);
      await setupPage.getByRole("button", { name: "Create owner account" }).click();
      await setupPage.getByRole("banner").getByText(OWNER.email).waitFor();
      // The spent token does not stay in the address bar.
      expect(new URL(setupPage.url()).search).toBe("");
      expect(pageErrors).toEqual([]);
    } finally {
      await context.close();
      await proxied.stop();
    }
  });
});
