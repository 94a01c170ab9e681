// What the dashboard's end-to-end tests share: an owner who holds the workspace's key, a watch on
// the page for what must never happen (uncaught exceptions, console errors such as CSP refusals),
// the tables a reader would have to scroll sideways, and the end of a test that deployed apps.
import type { Page } from "playwright-core";
import { deleteAllApps } from "./apps";
import type { TestBrowser } from "./browser";
import { removeWorkspaceNetworks } from "./databases";
import type { CreatedKey, TestServer } from "./server";

export interface Owner {
  email: string;
  password: string;
}

/**
 * The owner of a fresh server, made by the setup with a key from the command line: the setup then
 * hands the key's workspace to the owner, so the key deploys what the owner sees in the page.
 */
export async function ownerHoldingKey(server: TestServer, owner: Owner, keyName: string): Promise<CreatedKey> {
  const key = await server.createKey(keyName);
  const setup = await server.request("POST", "/api/auth/setup", { body: owner, key: key.key });
  if (setup.status !== 201) throw new Error(`setup refused: ${JSON.stringify(setup.body)}`);
  return key;
}

/**
 * Collects the page's uncaught exceptions and console errors into `errors`. The browser logs every
 * non-2xx answer as "Failed to load resource"; the dashboard expects some (401 while logged out).
 */
export function collectPageErrors(page: Page, errors: string[]) {
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) errors.push(message.text());
  });
}

/** Logs in through the login form the page shows. */
export async function logInThroughPage(page: Page, owner: Owner) {
  await page.getByLabel("Email").fill(owner.email);
  await page.getByLabel("Password").fill(owner.password);
  await page.getByRole("button", { name: "Log in" }).click();
}

/** The tables on the page that are read by scrolling sideways inside their frame, by caption. */
export function tablesScrollingSideways(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>(".table-wrap")]
      .filter((frame) => frame.scrollWidth > frame.clientWidth + 1)
      .map((frame) => frame.querySelector("caption")?.textContent ?? frame.outerHTML.slice(0, 80)),
  );
}

/** Closes the browser, deletes the key's apps (and their workspace's networks) and stops the server; each only if it was made. */
export async function endAppsPageTest(chromium: TestBrowser | undefined, server: TestServer | undefined, key: CreatedKey | undefined) {
  await chromium?.close();
  if (server && key) {
    await deleteAllApps(server, key.key, 60_000);
    removeWorkspaceNetworks(key.workspaceId);
  }
  await server?.stop();
}
