// The nesting count of request bodies (src/http/body-guard.ts): exact on JSON however the bytes
// arrive, blind to brackets inside strings, and adding a form field's name to its value's depth.
import { expect, test } from "bun:test";
import { MAX_BODY_DEPTH, NestingScanner, fieldTooDeep } from "../../../src/http/body-guard";

const bytes = (text: string) => new TextEncoder().encode(text);
const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

test("counts levels of arrays and objects, up to the limit and not past it", () => {
  expect(new NestingScanner(3).feed(bytes('{"a":[{"b":1}],"c":[]}'))).toBe(true);
  expect(new NestingScanner(3).feed(bytes('{"a":[{"b":[1]}]}'))).toBe(false);
  // Siblings do not add up: depth is how far in, not how many.
  expect(new NestingScanner(1).feed(bytes(nested(1).repeat(1000)))).toBe(true);
});

test("brackets inside strings, escaped quotes included, are not levels", () => {
  expect(new NestingScanner(1).feed(bytes(`["[[[{{{", "\\"[[[", "\\\\"]`))).toBe(true);
  expect(new NestingScanner(1).feed(bytes(`["\\\\", [1]]`))).toBe(false);
});

test("the count carries over from one piece of the body to the next, even inside a string or an escape", () => {
  const scanner = new NestingScanner(2);
  for (const piece of ['[["a\\', '"[[[', '"]', "]"]) expect(scanner.feed(bytes(piece))).toBe(true);
  const deep = new NestingScanner(2);
  expect(deep.feed(bytes("[["))).toBe(true);
  expect(deep.feed(bytes("["))).toBe(false);
});

test("a form field counts as level 1, its name's `.` and `[` add levels, and only JSON text adds its own", () => {
  expect(fieldTooDeep("actions", nested(MAX_BODY_DEPTH - 1))).toBe(false);
  expect(fieldTooDeep("actions", ` ${nested(MAX_BODY_DEPTH)}`)).toBe(true);
  expect(fieldTooDeep("repository[owner]", nested(MAX_BODY_DEPTH - 2))).toBe(false);
  expect(fieldTooDeep("a.b", nested(MAX_BODY_DEPTH - 1))).toBe(true);
  expect(fieldTooDeep("a".concat(".a".repeat(MAX_BODY_DEPTH)), "1")).toBe(true);
  // Text that is not JSON of an array or object, a source file say, holds no levels.
  expect(fieldTooDeep("content", `x = ${"{".repeat(100)}`)).toBe(false);
});
