// What src/certificates/pem.ts makes of PEM text a person uploads or a CA sends, with certificates
// made by openssl: every refusal is a CertificateProblem whose sentence says what is wrong.
import { beforeAll, describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { CertificateProblem, MAX_PEM_BYTES, certificateInfo, certificatesOf, checkedPair, covers } from "../../../src/certificates/pem";
import { encryptedKey, makeCa, makeCertificate, type TestCa, type TestPair } from "../../helpers/certificates";

const DAY_MS = 86_400_000;

let ca: TestCa;
/** a.example.test and www.example.test, signed by the CA: a chain of two. */
let signed: TestPair;
let wildcard: TestPair;
let selfSigned: TestPair;
let withoutNames: TestPair;

beforeAll(async () => {
  ca = await makeCa("Pem Test CA");
  [signed, wildcard, selfSigned, withoutNames] = await Promise.all([
    makeCertificate({ names: ["a.example.test", "WWW.Example.Test"], ca, days: 10 }),
    makeCertificate({ names: ["*.example.test"], ca }),
    makeCertificate({ names: ["self.test"] }),
    makeCertificate({ names: [], commonName: "a.example.test" }),
  ]);
});

/** The CertificateProblem `run` throws (fails the test when it throws something else or nothing). */
function problemOf(run: () => unknown): CertificateProblem {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(CertificateProblem);
    return error as CertificateProblem;
  }
  throw new Error("expected a CertificateProblem, nothing was thrown");
}

describe("certificatesOf", () => {
  test("reads a chain of two in order, leaf first", () => {
    const chain = certificatesOf(signed.chainPem);
    expect(chain).toHaveLength(2);
    expect(chain[0]!.subject).toContain("CN=a.example.test");
    expect(chain[1]!.subject).toContain("CN=Pem Test CA");
    expect(chain[0]!.checkIssued(chain[1]!)).toBe(true);
  });

  test("reads a chain with Windows line endings and text around the blocks", () => {
    const chainPem = `Leaf:\r\n${signed.leafPem.replace(/\n/g, "\r\n")}Issuer:\r\n${ca.certPem.replace(/\n/g, "\r\n")}`;
    expect(certificatesOf(chainPem).map((certificate) => certificate.fingerprint256)).toEqual([
      new X509Certificate(signed.leafPem).fingerprint256,
      new X509Certificate(ca.certPem).fingerprint256,
    ]);
  });

  test("refuses text without a certificate, empty text and a private key alone", () => {
    for (const text of ["hello, this is not a certificate", "", "   \n", signed.keyPem]) {
      expect(problemOf(() => certificatesOf(text)).message).toBe("No PEM certificate (-----BEGIN CERTIFICATE-----) was found.");
    }
  });

  test("names the certificate of the chain that is not one", () => {
    const broken = "-----BEGIN CERTIFICATE-----\nTm90IGEgY2VydGlmaWNhdGUgYXQgYWxs\n-----END CERTIFICATE-----\n";
    expect(problemOf(() => certificatesOf(broken)).message).toBe("Certificate 1 of the chain is not a valid X.509 certificate.");
    expect(problemOf(() => certificatesOf(signed.leafPem + broken)).message).toBe("Certificate 2 of the chain is not a valid X.509 certificate.");
  });

  test("refuses a text over 64 KB before reading it", () => {
    const oversized = signed.chainPem + " ".repeat(MAX_PEM_BYTES);
    expect(problemOf(() => certificatesOf(oversized)).message).toBe("The certificate is over 64 KB.");
  });
});

describe("certificateInfo", () => {
  test("gives the leaf's host names in lower case, its validity and its issuer", () => {
    const info = certificateInfo(signed.chainPem);
    expect(info.names).toEqual(["a.example.test", "www.example.test"]);
    expect(info.issuer).toContain("CN=Pem Test CA");
    expect(info.leaf.fingerprint256).toBe(new X509Certificate(signed.leafPem).fingerprint256);
    // openssl -days 10 starts now (to the second) and ends ten days later.
    expect(Math.abs(info.notBefore - Date.now())).toBeLessThan(60_000);
    expect(info.notAfter - info.notBefore).toBe(10 * DAY_MS);
  });

  test("gives no names for a certificate without subject alternative names", () => {
    expect(certificateInfo(withoutNames.chainPem).names).toEqual([]);
  });
});

describe("covers", () => {
  test("a wildcard covers one label below it, not two, and not the bare domain", () => {
    const leaf = certificateInfo(wildcard.chainPem).leaf;
    expect(covers(leaf, "a.example.test")).toBe(true);
    expect(covers(leaf, "a.b.example.test")).toBe(false);
    expect(covers(leaf, "example.test")).toBe(false);
    expect(covers(leaf, "a.example.other")).toBe(false);
  });

  test("a name covers itself only, whatever the case", () => {
    const leaf = certificateInfo(signed.chainPem).leaf;
    expect(covers(leaf, "a.example.test")).toBe(true);
    expect(covers(leaf, "www.example.test")).toBe(true);
    expect(covers(leaf, "A.Example.Test")).toBe(true);
    expect(covers(leaf, "b.example.test")).toBe(false);
  });

  test("the subject's common name alone covers nothing", () => {
    expect(covers(certificateInfo(withoutNames.chainPem).leaf, "a.example.test")).toBe(false);
  });
});

describe("checkedPair", () => {
  test("accepts a certificate with its key for a host it names, and says what it holds", () => {
    const info = checkedPair(signed.chainPem, signed.keyPem, "a.example.test");
    expect(info.names).toEqual(["a.example.test", "www.example.test"]);
    expect(checkedPair(wildcard.chainPem, wildcard.keyPem, "anything.example.test").names).toEqual(["*.example.test"]);
  });

  test("without a host, checks only the key and the expiry", () => {
    expect(checkedPair(selfSigned.chainPem, selfSigned.keyPem, null).names).toEqual(["self.test"]);
  });

  test("refuses a key that is not the certificate's", () => {
    const problem = problemOf(() => checkedPair(signed.chainPem, selfSigned.keyPem, "a.example.test"));
    expect(problem.message).toBe("The private key does not belong to the certificate (the first one of the chain).");
  });

  test("refuses a chain whose first certificate is not the leaf", () => {
    const issuerFirst = ca.certPem + signed.leafPem;
    expect(problemOf(() => checkedPair(issuerFirst, signed.keyPem, "a.example.test")).message).toBe(
      "The private key does not belong to the certificate (the first one of the chain).",
    );
  });

  test("refuses a certificate that does not name the host, and says what it names", () => {
    expect(problemOf(() => checkedPair(signed.chainPem, signed.keyPem, "b.example.test")).message).toBe(
      "The certificate is not valid for b.example.test: it names a.example.test, www.example.test.",
    );
    expect(problemOf(() => checkedPair(wildcard.chainPem, wildcard.keyPem, "a.b.example.test")).message).toBe(
      "The certificate is not valid for a.b.example.test: it names *.example.test.",
    );
    expect(problemOf(() => checkedPair(wildcard.chainPem, wildcard.keyPem, "example.test")).message).toBe(
      "The certificate is not valid for example.test: it names *.example.test.",
    );
    expect(problemOf(() => checkedPair(withoutNames.chainPem, withoutNames.keyPem, "a.example.test")).message).toBe(
      "The certificate is not valid for a.example.test: it names no host names.",
    );
  });

  test("refuses a certificate that has expired, giving the date", () => {
    const { notAfter } = certificateInfo(signed.chainPem);
    expect(checkedPair(signed.chainPem, signed.keyPem, "a.example.test", notAfter - 1000).notAfter).toBe(notAfter);
    for (const now of [notAfter, notAfter + DAY_MS]) {
      expect(problemOf(() => checkedPair(signed.chainPem, signed.keyPem, "a.example.test", now)).message).toBe(
        `The certificate expired on ${new Date(notAfter).toISOString()}.`,
      );
    }
  });

  test("refuses a certificate that is not valid yet, giving the date", () => {
    const { notBefore } = certificateInfo(signed.chainPem);
    expect(checkedPair(signed.chainPem, signed.keyPem, "a.example.test", notBefore).notBefore).toBe(notBefore);
    expect(problemOf(() => checkedPair(signed.chainPem, signed.keyPem, "a.example.test", notBefore - 1000)).message).toBe(
      `The certificate is not valid before ${new Date(notBefore).toISOString()}.`,
    );
  });

  test("refuses an encrypted key, saying it must be decrypted", async () => {
    for (const form of ["pkcs8", "traditional"] as const) {
      const keyPem = await encryptedKey(signed.keyPem, form);
      expect(problemOf(() => checkedPair(signed.chainPem, keyPem, "a.example.test")).message).toBe(
        "The private key cannot be read (an encrypted key must be decrypted first).",
      );
    }
  });

  test("refuses a missing, garbled or oversized key", () => {
    const noKey = "No unencrypted PEM private key (-----BEGIN PRIVATE KEY-----) was found.";
    for (const keyPem of ["", "secret", signed.leafPem]) {
      expect(problemOf(() => checkedPair(signed.chainPem, keyPem, "a.example.test")).message).toBe(noKey);
    }
    const garbled = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n";
    expect(problemOf(() => checkedPair(signed.chainPem, garbled, "a.example.test")).message).toBe(
      "The private key cannot be read (an encrypted key must be decrypted first).",
    );
    const oversized = signed.keyPem + "\n".repeat(MAX_PEM_BYTES);
    expect(problemOf(() => checkedPair(signed.chainPem, oversized, "a.example.test")).message).toBe("The private key is over 64 KB.");
  });

  test("refuses a certificate that is not PEM before looking at the key", () => {
    expect(problemOf(() => checkedPair("garbage", "garbage", "a.example.test")).message).toBe("No PEM certificate (-----BEGIN CERTIFICATE-----) was found.");
  });
});
