// Headless Chromium for the dashboard's end-to-end tests: the system /usr/bin/chromium driven
// by playwright-core (which cannot download browsers here), on a fresh temp profile per launch.
import { existsSync } from "node:fs";
import { chromium, type Browser, type BrowserContext } from "playwright-core";
import { tempDir } from "./temp";

export const CHROMIUM_PATH = process.env.PLATFORM_TEST_CHROMIUM ?? "/usr/bin/chromium";

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const ACTION_TIMEOUT_MS = 10_000;

export interface TestBrowser {
  /** The first context, on the fresh profile. */
  context: BrowserContext;
  browser: Browser;
  /** Another context with its own cookies and storage: a second person at another computer. */
  newContext(): Promise<BrowserContext>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM_PATH}. The dashboard tests need it: run ` +
        "`apt-get update && apt-get install -y chromium` (or set PLATFORM_TEST_CHROMIUM to another binary).",
    );
  }
  // Playwright refuses --user-data-dir in args; a persistent context is how it takes a profile dir.
  const context = await chromium.launchPersistentContext(tempDir("platform-chromium-"), {
    executablePath: CHROMIUM_PATH,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
  });
  // Fail a missing element well before the test's own timeout, so the locator is in the error.
  context.setDefaultTimeout(ACTION_TIMEOUT_MS);
  const browser = context.browser()!;
  return {
    context,
    browser,
    newContext: async () => {
      const fresh = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      fresh.setDefaultTimeout(ACTION_TIMEOUT_MS);
      return fresh;
    },
    close: () => context.close(),
  };
}
