// The tail an exec keeps of stderr (src/docker/exec.ts): the last bytes whatever the chunking, and
// how many were cut before them.
import { describe, expect, test } from "bun:test";
import { ByteTail } from "../../../src/docker/exec";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("ByteTail", () => {
  test("under its limit it is the whole text", () => {
    const tail = new ByteTail(16);
    tail.push(bytes("psql: error: "));
    tail.push(bytes("bad"));
    expect(tail.text()).toBe("psql: error: bad");
    expect(tail.total).toBe(16);
  });

  test("past its limit it keeps the last bytes, across chunks of any size, and says how many were cut", () => {
    const tail = new ByteTail(8);
    for (const chunk of ["aaaa", "bbbbbbbbbbbbbbbbbbbb", "c", "dd", "", "the-end"]) tail.push(bytes(chunk));
    expect(tail.text()).toBe("[26 bytes cut]dthe-end");
    expect(tail.total).toBe(34);
  });

  test("a million one-byte chunks: the last 1024 bytes, the rest counted", () => {
    const tail = new ByteTail(1024);
    for (let index = 0; index < 1_000_000; index++) tail.push(bytes(String(index % 10)));
    expect(tail.text()).toBe(`[${1_000_000 - 1024} bytes cut]${"0123456789".repeat(103).slice(6, 1030)}`);
  });
});
