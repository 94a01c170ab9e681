import { describe, expect, test } from "bun:test";
import { statSync, unlinkSync } from "node:fs";
import { openSecretBox, MissingMasterKey } from "../../src/crypto/secrets";
import { tempDir } from "../helpers/temp";

describe("secret box", () => {
  test("round-trips, uses a fresh nonce each time and is bound to its associated data", () => {
    const box = openSecretBox(tempDir(), false);
    const a = box.encrypt("s3cret-canary", "app_1:DATABASE_URL");
    const b = box.encrypt("s3cret-canary", "app_1:DATABASE_URL");
    expect(a).not.toBe(b);
    expect(a).not.toContain("s3cret");
    expect(box.decrypt(a, "app_1:DATABASE_URL")).toBe("s3cret-canary");
    expect(() => box.decrypt(a, "app_2:DATABASE_URL")).toThrow();
    const tampered = a.slice(0, -4) + (a.endsWith("AAAA") ? "BBBB" : "AAAA");
    expect(() => box.decrypt(tampered, "app_1:DATABASE_URL")).toThrow();
  });

  test("the key file is created 0600 once and reused", () => {
    const dir = tempDir();
    const sealed = openSecretBox(dir, false).encrypt("x", "ad");
    expect(statSync(`${dir}/master.key`).mode & 0o777).toBe(0o600);
    expect(openSecretBox(dir, true).decrypt(sealed, "ad")).toBe("x");
  });

  test("refuses to start with encrypted data but no key file", () => {
    const dir = tempDir();
    openSecretBox(dir, false);
    unlinkSync(`${dir}/master.key`);
    expect(() => openSecretBox(dir, true)).toThrow(MissingMasterKey);
    expect(() => openSecretBox(dir, true)).toThrow(/restore master.key/);
  });
});
