// GitHub webhook deliveries: only a body signed with the platform's secret passes, the payload is
// read from JSON or from a form's `payload` field, and a push names owner, repository and branch.
import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { deliveryHeaders, deliveryPayload, MAX_DELIVERY_BYTES, pushDelivery, readBoundedBody, validSignature } from "../../../src/webhooks/github";

const secret = "webhook-secret-for-tests";
const encode = (text: string) => new TextEncoder().encode(text);
const pushBody = encode(JSON.stringify({ ref: "refs/heads/main", repository: { name: "repo", owner: { login: "octo-org" } } }));
const sha256Hex = (key: string, body: Uint8Array) => createHmac("sha256", key).update(body).digest("hex");
const signatureHeader = (key: string, body: Uint8Array) => `sha256=${sha256Hex(key, body)}`;

describe("validSignature", () => {
  test("the body signed with the secret is accepted", () => {
    expect(validSignature(secret, pushBody, signatureHeader(secret, pushBody))).toBe(true);
  });

  test("an empty body signed with the secret is accepted", () => {
    expect(validSignature(secret, new Uint8Array(), signatureHeader(secret, new Uint8Array()))).toBe(true);
  });

  const rightHex = sha256Hex(secret, pushBody);
  for (const [what, header] of [
    ["signed with another secret", signatureHeader("another-secret", pushBody)],
    ["signed over an altered body", signatureHeader(secret, encode(JSON.stringify({ ref: "refs/heads/evil", repository: { name: "repo", owner: { login: "octo-org" } } })))],
    ["missing", null],
    ["empty", ""],
    ["only the prefix", "sha256="],
    ["the hex without its prefix", rightHex],
    ["a sha1= signature of the body", `sha1=${createHmac("sha1", secret).update(pushBody).digest("hex")}`],
    ["the right hex under a sha1= prefix", `sha1=${rightHex}`],
    ["malformed hex", `sha256=${"zz".repeat(32)}`],
    ["truncated hex", `sha256=${rightHex.slice(0, 62)}`],
    ["half the hex", `sha256=${rightHex.slice(0, 32)}`],
    ["the right hex with one digit changed", `sha256=${rightHex.slice(0, -1)}${rightHex.endsWith("0") ? "1" : "0"}`],
    ["the right hex followed by a stray non-hex character", `sha256=${rightHex}z`],
    ["the right hex followed by a stray hex digit", `sha256=${rightHex}0`],
    ["the right hex followed by an extra byte", `sha256=${rightHex}00`],
  ] as const) {
    test(`a signature ${what} is refused`, () => {
      expect(validSignature(secret, pushBody, header)).toBe(false);
    });
  }
});

describe("deliveryHeaders", () => {
  const request = (headers: Record<string, string>) => new Request("http://127.0.0.1/api/webhooks/github/app_x", { method: "POST", headers });
  const signed = { "content-length": "20", "x-hub-signature-256": signatureHeader(secret, pushBody), "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "x-github-event": "push" };

  test("a delivery's headers are read without its body", () => {
    expect(deliveryHeaders(request(signed))).toEqual({ event: "push", deliveryId: signed["x-github-delivery"], signature: signed["x-hub-signature-256"] });
  });

  for (const [what, change, code] of [
    ["no Content-Length", { "content-length": "" }, "LENGTH_REQUIRED"],
    ["a Content-Length past the cap", { "content-length": String(MAX_DELIVERY_BYTES + 1) }, "PAYLOAD_TOO_LARGE"],
    ["no signature", { "x-hub-signature-256": "" }, "INVALID_SIGNATURE"],
    ["a sha1 signature", { "x-hub-signature-256": `sha1=${"a".repeat(40)}` }, "INVALID_SIGNATURE"],
    ["no delivery id", { "x-github-delivery": "" }, "VALIDATION_FAILED"],
    ["a delivery id with odd characters", { "x-github-delivery": "id;drop" }, "VALIDATION_FAILED"],
  ] as const) {
    test(`${what} is ${code}`, () => {
      const headers: Record<string, string> = { ...signed, ...change };
      for (const name of Object.keys(headers)) if (headers[name] === "") delete headers[name];
      expect(() => deliveryHeaders(request(headers))).toThrow(expect.objectContaining({ code }));
    });
  }
});

describe("readBoundedBody", () => {
  /** A request whose body is `pieces`, sent `gapMs` apart, whatever its headers say. */
  const streamed = (pieces: Uint8Array[], gapMs = 0) =>
    new Request("http://127.0.0.1/", {
      method: "POST",
      body: new ReadableStream({
        async pull(controller) {
          const piece = pieces.shift();
          if (!piece) return controller.close();
          if (gapMs) await Bun.sleep(gapMs);
          controller.enqueue(piece);
        },
      }),
    });

  test("a body within the cap is read whole", async () => {
    expect(await readBoundedBody(streamed([encode("ab"), encode("cd")]), 4)).toEqual(encode("abcd"));
  });

  test("reading stops at the cap, whatever was announced", async () => {
    let sent = 0;
    const endless = new Request("http://127.0.0.1/", {
      method: "POST",
      body: new ReadableStream({
        pull(controller) {
          sent += 1024;
          controller.enqueue(new Uint8Array(1024));
        },
      }),
    });
    await expect(readBoundedBody(endless, 10 * 1024)).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(sent).toBeLessThan(20 * 1024);
  });

  test("a body that trickles past the time limit is given up", async () => {
    const started = performance.now();
    await expect(readBoundedBody(streamed([encode("a"), encode("b"), encode("c")], 150), 100, 200)).rejects.toMatchObject({ code: "REQUEST_TIMEOUT" });
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe("deliveryPayload", () => {
  const payload = { ref: "refs/heads/main", repository: { name: "repo", owner: { login: "octo-org" } } };

  test("a JSON body", () => {
    expect(deliveryPayload(encode(JSON.stringify(payload)), "application/json")).toEqual(payload);
    expect(deliveryPayload(encode(JSON.stringify(payload)), null)).toEqual(payload);
  });

  test("a form body's payload= field", () => {
    const body = encode(new URLSearchParams({ payload: JSON.stringify(payload) }).toString());
    expect(deliveryPayload(body, "application/x-www-form-urlencoded")).toEqual(payload);
    expect(deliveryPayload(body, "Application/X-WWW-Form-URLEncoded; charset=utf-8")).toEqual(payload);
  });

  for (const [what, body, contentType] of [
    ["a JSON body that is not JSON", "{ref: main}", "application/json"],
    ["an empty body", "", "application/json"],
    ["a form without payload=", "ref=refs%2Fheads%2Fmain", "application/x-www-form-urlencoded"],
    ["a form whose payload= is not JSON", "payload=%7Bnot-json", "application/x-www-form-urlencoded"],
  ] as const) {
    test(`${what} is INVALID_JSON`, () => {
      expect(() => deliveryPayload(encode(body), contentType)).toThrow(expect.objectContaining({ code: "INVALID_JSON", status: 400 }));
    });
  }
});

describe("pushDelivery", () => {
  const push = (fields: Record<string, unknown>) => pushDelivery({ ref: "refs/heads/main", repository: { name: "repo", owner: { login: "octo-org" } }, ...fields });

  test("a push to a branch names owner, repository and branch", () => {
    expect(push({})).toEqual({ owner: "octo-org", name: "repo", repositoryId: null, installationId: null, branch: "main", deleted: false });
  });

  test("GitHub's repository id is kept as text, to tell a re-created repository of the same name apart", () => {
    expect(push({ repository: { id: 1296269, name: "repo", owner: { login: "octo-org" } } }).repositoryId).toBe("1296269");
  });

  test("a branch with slashes keeps them", () => {
    expect(push({ ref: "refs/heads/release/2.0" }).branch).toBe("release/2.0");
  });

  test("a tag or another ref has no branch", () => {
    expect(push({ ref: "refs/tags/v1.0.0" }).branch).toBeNull();
    expect(push({ ref: "refs/pull/1/head" }).branch).toBeNull();
  });

  test("a deleted branch is flagged", () => {
    expect(push({ deleted: true })).toMatchObject({ branch: "main", deleted: true });
    expect(push({ deleted: false }).deleted).toBe(false);
    expect(push({ deleted: "true" }).deleted).toBe(false);
  });

  test("the owner from owner.login, or from owner.name (as in some payload shapes)", () => {
    expect(push({ repository: { name: "repo", owner: { name: "named-owner" } } }).owner).toBe("named-owner");
    expect(push({ repository: { name: "repo", owner: { login: "login-owner", name: "Display Name" } } }).owner).toBe("login-owner");
  });

  for (const [what, payload] of [
    ["no ref", { repository: { name: "repo", owner: { login: "octo-org" } } }],
    ["a ref that is not text", { ref: 1, repository: { name: "repo", owner: { login: "octo-org" } } }],
    ["no repository", { ref: "refs/heads/main" }],
    ["no repository name", { ref: "refs/heads/main", repository: { owner: { login: "octo-org" } } }],
    ["no owner", { ref: "refs/heads/main", repository: { name: "repo" } }],
    ["an owner without login or name", { ref: "refs/heads/main", repository: { name: "repo", owner: { id: 1 } } }],
    ["an owner login that is not text", { ref: "refs/heads/main", repository: { name: "repo", owner: { login: 7 } } }],
    ["a JSON number", 5],
    ["a JSON array", []],
    ["JSON null", null],
  ] as const) {
    test(`a payload with ${what} is VALIDATION_FAILED`, () => {
      expect(() => pushDelivery(payload)).toThrow(expect.objectContaining({ code: "VALIDATION_FAILED", status: 400 }));
    });
  }
});
