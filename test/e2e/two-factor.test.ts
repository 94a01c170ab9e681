// Two-factor sign-in in the dashboard, in headless Chromium against the real server: the owner
// turns it on in Settings > Account (the password asked again, key shown as text, a first code,
// recovery codes shown once), logs out, and logs in again with the code the test computes as an
// authenticator app would.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "playwright-core";
import { TestServer } from "../helpers/server";
import { launchBrowser, type TestBrowser } from "../helpers/browser";
import { base32Decode, hotp, stepAt } from "../../src/auth/two-factor/totp";

setDefaultTimeout(60_000);

const OWNER = { email: "owner@example.com", password: "correct horse battery" };

let server: TestServer;
let chromium: TestBrowser;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  [server, chromium] = await Promise.all([TestServer.start(), launchBrowser()]);
  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  page.on("pageerror", (error) => pageErrors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    // 401 answers (logged out, the code asked for) are logged by the browser as failed loads.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) pageErrors.push(message.text());
  });
});

afterAll(async () => {
  await chromium?.close();
  await server?.stop();
});

test("enrol in Settings > Account, log out, log in with the app's code", async () => {
  await page.goto(server.baseUrl);
  await page.getByRole("heading", { name: "Create the owner account" }).waitFor();
  await page.getByLabel("Email").fill(OWNER.email);
  await page.getByLabel("Password").fill(OWNER.password);
  await page.getByRole("button", { name: "Create owner account" }).click();
  await page.getByRole("heading", { level: 1, name: "Apps" }).waitFor();

  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Settings" }).click();
  await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: "Account" }).click();
  await page.getByRole("heading", { level: 2, name: "Two-factor sign-in" }).waitFor();
  await page.getByLabel("Your password").fill(OWNER.password);
  await page.getByRole("button", { name: "Set up two-factor sign-in" }).click();
  const secret = (await page.getByTestId("totp-secret").textContent())!;
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  expect(await page.getByTestId("totp-uri").textContent()).toContain(`secret=${secret}`);

  // As the authenticator app: the code of this 30-second step.
  const enrolStep = stepAt(Date.now());
  await page.getByLabel("Code from the app").fill(hotp(base32Decode(secret), enrolStep));
  await page.getByRole("button", { name: "Turn on" }).click();
  const shownCodes = page.getByTestId("recovery-codes");
  await shownCodes.waitFor();
  expect((await shownCodes.textContent())!.split("\n")).toHaveLength(10);
  await page.getByRole("button", { name: "Done" }).click();
  await page.getByText("On. 10 of 10 recovery codes left.").waitFor();
  expect(await page.getByTestId("recovery-codes").count()).toBe(0);

  await page.getByRole("banner").getByRole("button", { name: "Log out" }).click();
  await page.getByRole("heading", { name: "Log in" }).waitFor();
  await page.getByLabel("Email").fill(OWNER.email);
  await page.getByLabel("Password").fill(OWNER.password);
  await page.getByRole("button", { name: "Log in" }).click();
  const codeField = page.getByLabel("Authentication code");
  await codeField.waitFor();
  // The enrolment's code is spent: the next step's (or the current one, once time has moved on).
  const loginStep = Math.max(enrolStep + 1, stepAt(Date.now()));
  await codeField.fill(hotp(base32Decode(secret), loginStep));
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("banner").getByText(OWNER.email).waitFor();
  // Back where the person was: the account page, two-factor sign-in on.
  await page.getByText("On. 10 of 10 recovery codes left.").waitFor();
  expect(pageErrors).toEqual([]);
});
