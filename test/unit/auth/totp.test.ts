// TOTP (src/auth/two-factor/totp.ts) against RFC 6238's test vectors (appendix B, SHA-1), whose
// 8-digit codes end in the 6-digit ones an authenticator app shows.
import { describe, expect, test } from "bun:test";
import { base32Decode, base32Encode, matchingStep, otpauthUri, stepAt, totpAt } from "../../../src/auth/two-factor/totp";

const RFC_SECRET = new TextEncoder().encode("12345678901234567890");
const RFC_VECTORS: [number, string][] = [
  [59, "94287082"],
  [1111111109, "07081804"],
  [1111111111, "14050471"],
  [1234567890, "89005924"],
  [2000000000, "69279037"],
  [20000000000, "65353130"],
];

describe("totpAt", () => {
  for (const [seconds, code] of RFC_VECTORS) {
    test(`T=${seconds}: ${code} (8 digits), ${code.slice(2)} (6 digits)`, () => {
      expect(totpAt(RFC_SECRET, seconds * 1000, 8)).toBe(code);
      expect(totpAt(RFC_SECRET, seconds * 1000)).toBe(code.slice(2));
    });
  }
});

describe("base32", () => {
  test("RFC 4648's vectors, and back", () => {
    expect(base32Encode(new TextEncoder().encode("foobar"))).toBe("MZXW6YTBOI");
    expect(base32Encode(new TextEncoder().encode("fooba"))).toBe("MZXW6YTB");
    expect(new TextDecoder().decode(base32Decode("mzxw6ytboi"))).toBe("foobar");
    expect(base32Decode(base32Encode(RFC_SECRET))).toEqual(RFC_SECRET);
  });
});

describe("matchingStep", () => {
  const secret = base32Encode(RFC_SECRET);
  const now = 1111111111_000;
  const codeOf = (offsetSteps: number) => totpAt(RFC_SECRET, now + offsetSteps * 30_000);

  test("the current step's code and one step either side; not two", () => {
    expect(matchingStep(secret, codeOf(0), now, null)).toBe(stepAt(now));
    expect(matchingStep(secret, codeOf(-1), now, null)).toBe(stepAt(now) - 1);
    expect(matchingStep(secret, codeOf(1), now, null)).toBe(stepAt(now) + 1);
    expect(matchingStep(secret, codeOf(2), now, null)).toBeNull();
    expect(matchingStep(secret, codeOf(-2), now, null)).toBeNull();
  });

  test("a code of the step last used, or an earlier one, is not taken again", () => {
    expect(matchingStep(secret, codeOf(0), now, stepAt(now))).toBeNull();
    expect(matchingStep(secret, codeOf(-1), now, stepAt(now) - 1)).toBeNull();
    expect(matchingStep(secret, codeOf(1), now, stepAt(now))).toBe(stepAt(now) + 1);
  });

  test("anything but six digits is no code", () => {
    for (const code of ["", "12345", "1234567", "12 345", "abcdef"]) expect(matchingStep(secret, code, now, null)).toBeNull();
  });
});

test("otpauthUri names the issuer and account and carries the secret", () => {
  const uri = new URL(otpauthUri("Platform", "owner@example.com", "JBSWY3DPEHPK3PXP"));
  expect([uri.protocol, uri.host, decodeURIComponent(uri.pathname)]).toEqual(["otpauth:", "totp", "/Platform:owner@example.com"]);
  expect(Object.fromEntries(uri.searchParams)).toEqual({ secret: "JBSWY3DPEHPK3PXP", issuer: "Platform", algorithm: "SHA1", digits: "6", period: "30" });
});
