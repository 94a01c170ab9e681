// The audit log page names every action the server records: one added on the server without words
// in the page would show there as its raw code.
import { expect, test } from "bun:test";
import { AUDIT_ACTIONS } from "../../../src/audit/service";
import { ACTION_LABELS } from "../../../static/ui/pages/settings/audit-actions";

test("every audit action has its words in the page, and the page names no other", () => {
  expect(Object.keys(ACTION_LABELS).toSorted()).toEqual([...AUDIT_ACTIONS].toSorted());
});
