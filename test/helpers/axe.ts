// Accessibility checks of a dashboard page with axe-core, run inside the page itself.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const REPORTED_IMPACTS = new Set(["serious", "critical"]);
const TARGETS_SHOWN = 3;

interface FoundViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * One line per serious or critical axe-core violation on the page as it is now:
 * "<rule id> (<impact>): <help> at <first targets>". Empty when the page passes.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  // The dashboard's CSP (default-src 'self') blocks an inline <script>, so addScriptTag({ content })
  // fails; evaluating the source through the debugger protocol is not subject to the CSP.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  const violations: FoundViolation[] = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document): Promise<{ violations: AxeViolation[] }> } }).axe;
    type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] };
    const result = await axe.run(document);
    return result.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      targets: violation.nodes.map((node) => node.target.map(String).join(" ")),
    }));
  });
  return violations
    .filter((violation) => REPORTED_IMPACTS.has(violation.impact ?? ""))
    .map((violation) => {
      const more = violation.targets.length > TARGETS_SHOWN ? ` (+${violation.targets.length - TARGETS_SHOWN} more)` : "";
      return `${violation.id} (${violation.impact}): ${violation.help} at ${violation.targets.slice(0, TARGETS_SHOWN).join(", ")}${more}`;
    });
}
