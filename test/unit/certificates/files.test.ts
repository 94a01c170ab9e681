// The certificate files of src/certificates/files.ts in a temp data dir: only the platform's user
// reads them, a replaced file is never seen half written, and a host name never leaves the folder.
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CertificateFiles } from "../../../src/certificates/files";
import { tempDir } from "../../helpers/temp";

const modeOf = (path: string) => statSync(path).mode & 0o777;

const pair = (label: string) => ({ chainPem: `chain of ${label}`, keyPem: `key of ${label}` });

describe("the certificates folder", () => {
  test("is made readable by the platform's user only", () => {
    const files = new CertificateFiles(tempDir());
    expect(modeOf(files.dir)).toBe(0o700);
  });

  test("is closed again when it was opened to others", () => {
    const dataDir = tempDir();
    mkdirSync(join(dataDir, "certificates"), { mode: 0o755 });
    chmodSync(join(dataDir, "certificates"), 0o755);
    expect(modeOf(new CertificateFiles(dataDir).dir)).toBe(0o700);
  });
});

describe("a host's pair", () => {
  test("is written as <host>.crt and <host>.key, readable by the platform's user only, and read back", () => {
    const files = new CertificateFiles(tempDir());
    files.write("a.example.test", pair("a"));
    expect(readdirSync(files.dir).sort()).toEqual(["a.example.test.crt", "a.example.test.key"]);
    expect(modeOf(join(files.dir, "a.example.test.crt"))).toBe(0o600);
    expect(modeOf(join(files.dir, "a.example.test.key"))).toBe(0o600);
    expect(files.read("a.example.test")).toEqual(pair("a"));
  });

  test("stays readable by the platform's user only when replaced over a file open to others", () => {
    const files = new CertificateFiles(tempDir());
    writeFileSync(join(files.dir, "a.example.test.key"), "old key", { mode: 0o644 });
    files.write("a.example.test", pair("new"));
    expect(modeOf(join(files.dir, "a.example.test.key"))).toBe(0o600);
    expect(files.read("a.example.test")).toEqual(pair("new"));
  });

  test("of a host never written, or with one of its two files missing, is null", () => {
    const files = new CertificateFiles(tempDir());
    expect(files.read("missing.example.test")).toBeNull();
    writeFileSync(join(files.dir, "half.example.test.key"), "a key without its chain", { mode: 0o600 });
    expect(files.read("half.example.test")).toBeNull();
  });

  test("is gone after remove, and removing it again is no error", () => {
    const files = new CertificateFiles(tempDir());
    files.write("a.example.test", pair("a"));
    files.write("b.example.test", pair("b"));
    files.remove("a.example.test");
    files.remove("a.example.test");
    expect(files.read("a.example.test")).toBeNull();
    expect(files.read("b.example.test")).toEqual(pair("b"));
    expect(readdirSync(files.dir).sort()).toEqual(["b.example.test.crt", "b.example.test.key"]);
  });

  test("that cannot be written leaves no temporary file behind", () => {
    const files = new CertificateFiles(tempDir());
    // A folder in the key's place: the rename fails after the temporary file was written.
    mkdirSync(join(files.dir, "a.example.test.key", "inside"), { recursive: true });
    expect(() => files.write("a.example.test", pair("a"))).toThrow();
    expect(readdirSync(files.dir)).toEqual(["a.example.test.key"]);
  });

  test("replaced while another process reads it is read whole, old or new, never half", async () => {
    const dataDir = tempDir();
    const files = new CertificateFiles(dataDir);
    // Large enough that writing one takes many system calls: a file written in place would be seen part way.
    const old = { chainPem: "O".repeat(4 << 20), keyPem: "o" };
    const replacement = { chainPem: "N".repeat(4 << 20), keyPem: "n" };
    files.write("a.example.test", old);

    const readerFile = join(dataDir, "reader.ts");
    const stopFile = join(dataDir, "stop");
    writeFileSync(
      readerFile,
      `import { existsSync, readFileSync } from "node:fs";
      const [file, stopFile, size] = process.argv.slice(2);
      const seen = { old: 0, new: 0, other: 0 };
      process.stdout.write("reading\\n");
      while (!existsSync(stopFile)) {
        let text = "";
        try { text = readFileSync(file, "utf8"); } catch {}
        if (text.length === Number(size) && !text.includes("N")) seen.old++;
        else if (text.length === Number(size) && !text.includes("O")) seen.new++;
        else seen.other++;
      }
      console.log(JSON.stringify(seen));`,
    );
    const reader = Bun.spawn([process.execPath, readerFile, join(files.dir, "a.example.test.crt"), stopFile, String(old.chainPem.length)], { stdout: "pipe" });
    const output = reader.stdout.getReader();
    await output.read(); // "reading": the reader is in its loop

    const writingUntil = Date.now() + 1500;
    for (let round = 0; Date.now() < writingUntil; round++) {
      files.write("a.example.test", round % 2 ? old : replacement);
      await Bun.sleep(1);
    }
    writeFileSync(stopFile, "");
    let report = "";
    for (let chunk = await output.read(); !chunk.done; chunk = await output.read()) report += new TextDecoder().decode(chunk.value);
    await reader.exited;
    const seen = JSON.parse(report) as { old: number; new: number; other: number };

    expect(seen.other).toBe(0);
    // Both versions were read: the reads did happen between the writes.
    expect(seen.old).toBeGreaterThan(0);
    expect(seen.new).toBeGreaterThan(0);
    expect(readdirSync(files.dir).sort()).toEqual(["a.example.test.crt", "a.example.test.key"]);
  });
});

describe("a host name that is no file name", () => {
  const hostile = ["../x", "../../etc/passwd", "a/b", "x", "A.COM", "", ".example.test", "a.example.test/", "a..b", "a.example.test\0.key"];

  test.each(hostile)("%p is refused by read and write, removing it does nothing, and nothing is written", (host) => {
    const dataDir = tempDir();
    const files = new CertificateFiles(dataDir);
    expect(() => files.read(host)).toThrow("not a host name fit for a file name");
    expect(() => files.write(host, pair("hostile"))).toThrow("not a host name fit for a file name");
    // Nothing can have been stored under it: forgetting such a host (PLATFORM_DOMAIN changed) must not fail.
    files.remove(host);
    expect(readdirSync(files.dir)).toEqual([]);
    expect(readdirSync(dataDir)).toEqual(["certificates"]);
  });

  test("removing a hostile name leaves a file of that name outside the folder alone", () => {
    const dataDir = tempDir();
    const files = new CertificateFiles(dataDir);
    writeFileSync(join(dataDir, "x.crt"), "not the platform's to remove");
    files.remove("../x");
    expect(existsSync(join(dataDir, "x.crt"))).toBe(true);
  });
});

describe("the ACME account key", () => {
  test("is made once, kept readable by the platform's user only, and the same afterwards", async () => {
    const dataDir = tempDir();
    const files = new CertificateFiles(dataDir);
    let made = 0;
    const create = async () => `account key ${++made}`;

    expect(await files.accountKey(create)).toBe("account key 1");
    expect(await files.accountKey(create)).toBe("account key 1");
    // After a restart too.
    expect(await new CertificateFiles(dataDir).accountKey(create)).toBe("account key 1");
    expect(made).toBe(1);
    expect(modeOf(join(files.dir, "acme-account.key"))).toBe(0o600);
  });

  test("is not stored when making it failed, and made at the next call", async () => {
    const files = new CertificateFiles(tempDir());
    await expect(files.accountKey(async () => Promise.reject(new Error("no entropy")))).rejects.toThrow("no entropy");
    expect(readdirSync(files.dir)).toEqual([]);
    expect(await files.accountKey(async () => "account key")).toBe("account key");
  });
});
