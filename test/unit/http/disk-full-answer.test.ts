// The 507 a full disk answers (src/http/errors.ts): "nothing of it was kept" only where the code
// that failed knows it. The global handler (src/http/server.ts) answers for handlers of several
// writes that stopped part way (a deploy that inserted its app row), so it never says so.
import { expect, test } from "bun:test";
import { diskFull, rethrowDiskFull } from "../../../src/http/errors";

const full = Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });

test("the answer of the global handler names the request and does not claim nothing was kept", () => {
  const answer = diskFull("what POST /api/apps writes");
  expect(answer.code).toBe("INSUFFICIENT_STORAGE");
  expect(answer.message).toContain("what POST /api/apps writes could not be written");
  expect(answer.message).not.toContain("nothing of it was kept");
  expect(answer.message).toContain("may have been kept");
});

test("one write that leaves nothing when it fails says so", () => {
  expect(() => rethrowDiskFull("the uploaded archive")(full)).toThrow("the uploaded archive could not be written, and nothing of it was kept");
  expect(diskFull("the uploaded dump", { nothingKept: true }).message).toContain("nothing of it was kept");
});
