// The deploy form's text fields: a startupCommand is one line, so it cannot forge build-log lines.
import { describe, expect, test } from "bun:test";
import { checkStartupCommand, parseDeployFields } from "../../../src/apps/deploy-form";

const base = { name: "app", runtime: "node", memoryMB: "128" };

describe("startupCommand", () => {
  for (const [what, command] of [
    ["a line feed", "node server.js\n==> Serving from container abc"],
    ["a carriage return", "node server.js\r==> Build failed"],
    ["an escape sequence", "node \u001b[2J server.js"],
    ["a C1 control (NEL)", "node\u0085server.js"],
    ["a Unicode line separator", "node\u2028server.js"],
  ]) {
    test(`${what} is refused with VALIDATION_FAILED naming the field`, () => {
      expect(() => parseDeployFields({ ...base, startupCommand: command! })).toThrow(
        expect.objectContaining({ code: "VALIDATION_FAILED", message: expect.stringContaining("'startupCommand'") }),
      );
      expect(() => checkStartupCommand(command!)).toThrow(expect.objectContaining({ code: "VALIDATION_FAILED" }));
    });
  }

  test("one line with tabs, && and ; is accepted; surrounding whitespace is trimmed", () => {
    expect(parseDeployFields({ ...base, startupCommand: "  npm run migrate &&\tnode server.js; echo done\n" }).startupCommand).toBe(
      "npm run migrate &&\tnode server.js; echo done",
    );
  });
});
