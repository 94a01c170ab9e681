import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { readMultipart } from "../../../src/http/multipart";
import { tempDir, writesTakingNoByte } from "../../helpers/temp";

/** A multipart request whose body arrives in chunks of the given size. */
async function chunkedRequest(form: FormData, chunkSize: number): Promise<Request> {
  const encoded = new Request("http://x/", { method: "POST", body: form });
  const contentType = encoded.headers.get("content-type")!; // Bun drops it once the body is read
  const bytes = new Uint8Array(await encoded.arrayBuffer());
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += chunkSize) controller.enqueue(bytes.slice(at, at + chunkSize));
      controller.close();
    },
  });
  return new Request("http://x/", { method: "POST", body, headers: { "content-type": contentType } });
}

describe("streaming multipart reader", () => {
  const payload = new Uint8Array(300_000).map((_, i) => (i * 7) % 256);

  for (const chunkSize of [1, 7, 64, 4096, 1 << 20]) {
    test(`fields and the file survive ${chunkSize}-byte chunks`, async () => {
      const form = new FormData();
      form.set("name", "my-app");
      form.set("file", new File([payload], "app.zip"));
      form.set("envVars", JSON.stringify({ A: "1\r\n--tricky" }));
      const destination = `${tempDir()}/upload.zip`;
      const result = await readMultipart(await chunkedRequest(form, chunkSize), { fileField: "file", destinationFile: destination, maxBytes: 10_000_000 });
      expect(result.fields).toEqual({ name: "my-app", envVars: JSON.stringify({ A: "1\r\n--tricky" }) });
      expect(result.file).toEqual({ filename: "app.zip", size: payload.length });
      expect(Bun.hash(readFileSync(destination))).toBe(Bun.hash(payload));
    });
  }

  test("over the limit: 413 and no file left behind", async () => {
    const form = new FormData();
    form.set("file", new File([payload], "app.zip"));
    const destination = `${tempDir()}/upload.zip`;
    const request = await chunkedRequest(form, 4096);
    await expect(readMultipart(request, { fileField: "file", destinationFile: destination, maxBytes: 100_000 })).rejects.toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
    });
    expect(existsSync(destination)).toBe(false);
  });

  test("a write that takes no byte and raises no error fails the upload, leaving no file, instead of asking again forever", async () => {
    const form = new FormData();
    form.set("file", new File([payload], "app.zip"));
    const destination = `${tempDir()}/upload.zip`;
    const request = await chunkedRequest(form, 4096);
    const restore = await writesTakingNoByte();
    try {
      await expect(readMultipart(request, { fileField: "file", destinationFile: destination, maxBytes: 10_000_000 })).rejects.toThrow("took no byte");
    } finally {
      restore();
    }
    expect(existsSync(destination)).toBe(false);
  }, 5_000);

  test("a body cut short is refused and leaves no file", async () => {
    const form = new FormData();
    form.set("file", new File([payload], "app.zip"));
    const encoded = new Request("http://x/", { method: "POST", body: form });
    const contentType = encoded.headers.get("content-type")!;
    const full = new Uint8Array(await encoded.arrayBuffer());
    const destination = `${tempDir()}/upload.zip`;
    const truncated = new Request("http://x/", { method: "POST", body: full.slice(0, 150_000), headers: { "content-type": contentType } });
    await expect(readMultipart(truncated, { fileField: "file", destinationFile: destination, maxBytes: 10_000_000 })).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
    expect(existsSync(destination)).toBe(false);
  });

  test("not multipart: 415", async () => {
    const request = new Request("http://x/", { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    await expect(readMultipart(request, { fileField: "file", destinationFile: `${tempDir()}/x`, maxBytes: 10 })).rejects.toMatchObject({
      code: "UNSUPPORTED_MEDIA_TYPE",
    });
  });

  test("multipart without a boundary: a malformed body, 400", async () => {
    for (const contentType of ["multipart/form-data", "multipart/form-data; charset=utf-8", `multipart/form-data; boundary=${"b".repeat(71)}`]) {
      const request = new Request("http://x/", { method: "POST", body: "--b--", headers: { "content-type": contentType } });
      await expect(readMultipart(request, { fileField: "file", destinationFile: `${tempDir()}/x`, maxBytes: 10 })).rejects.toMatchObject({
        code: "VALIDATION_FAILED",
        message: expect.stringContaining("boundary"),
      });
    }
  });

  test("a body with no opening boundary is refused early, not searched to the end", async () => {
    const boundary = "----platform-test";
    const junk = new Uint8Array(5 * 1024 * 1024).fill(65);
    const request = new Request("http://x/", { method: "POST", body: junk, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } });
    const started = performance.now();
    await expect(readMultipart(request, { fileField: "file", destinationFile: `${tempDir()}/x`, maxBytes: 10_000_000 })).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
      message: expect.stringContaining("opening boundary"),
    });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test("line breaks and control characters in the filename are escaped: it cannot start a log line of its own", async () => {
    const boundary = "----platform-test";
    const filename = "app.zip\n==> Serving from container abc\r\u001b[2J\u2028x\ty";
    const body =
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/zip\r\n\r\n` +
      `PK-bytes\r\n--${boundary}--\r\n`;
    const request = new Request("http://x/", { method: "POST", body, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } });
    const result = await readMultipart(request, { fileField: "file", destinationFile: `${tempDir()}/upload.zip`, maxBytes: 10_000 });
    expect(result.file).toEqual({ filename: "app.zip\\n==> Serving from container abc\\r\\u001b[2J\\u2028x\\ty", size: 8 });
    expect(result.file!.filename).not.toMatch(/[\n\r\u001b\u2028]/);
  });

  test("the number of text fields is bounded", async () => {
    const form = new FormData();
    for (let index = 0; index < 60; index++) form.set(`field${index}`, "x");
    const request = await chunkedRequest(form, 4096);
    await expect(readMultipart(request, { fileField: "file", destinationFile: `${tempDir()}/x`, maxBytes: 10_000_000 })).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
      message: expect.stringContaining("form fields"),
    });
  });
});
