import { expect, test } from "bun:test";
import { redact } from "../../src/crypto/redact";

test("every occurrence is masked, the longer secret first when one holds the other", () => {
  expect(redact("pass=hunter2 again hunter2", ["hunter2"])).toBe("pass=**** again ****");
  expect(redact("token abcdef1234", ["abcd", "abcdef1234"])).toBe("token ****");
});

test("values too short to be secrets are left alone", () => {
  expect(redact("on a bus", ["a", "on"])).toBe("on a bus");
});
