// Certificates and keys made with the openssl command line, for the HTTPS tests:
// self-signed ones, a CA of the test's own and leaves it signs (a chain, leaf first), and
// encrypted keys. Each lives in a temp folder of its own.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./temp";

export interface TestCa {
  certFile: string;
  keyFile: string;
  certPem: string;
}

export interface TestPair {
  /** The leaf, then the CA's certificate when a CA signed it. */
  chainPem: string;
  leafPem: string;
  keyPem: string;
  certFile: string;
  keyFile: string;
}

export interface CertificateOptions {
  /** DNS subject alternative names; none: a certificate without any. */
  names: string[];
  days?: number;
  /** Signs the leaf; without it the certificate is self-signed. */
  ca?: TestCa;
  commonName?: string;
}

const NEW_EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

async function openssl(args: string[]) {
  const child = Bun.spawn(["openssl", ...args], { stdout: "ignore", stderr: "pipe" });
  if ((await child.exited) !== 0) throw new Error(`openssl ${args.join(" ")}: ${await new Response(child.stderr).text()}`);
}

export async function makeCa(name = "Platform Test CA"): Promise<TestCa> {
  const dir = tempDir("test-ca-");
  const certFile = join(dir, "ca.crt");
  const keyFile = join(dir, "ca.key");
  await openssl(["req", "-x509", ...NEW_EC_KEY, "-days", "30", "-keyout", keyFile, "-out", certFile, "-subj", `/CN=${name}`]);
  return { certFile, keyFile, certPem: readFileSync(certFile, "utf8") };
}

export async function makeCertificate(options: CertificateOptions): Promise<TestPair> {
  const dir = tempDir("test-cert-");
  const certFile = join(dir, "leaf.crt");
  const keyFile = join(dir, "leaf.key");
  const days = String(options.days ?? 90);
  const subject = `/CN=${options.commonName ?? options.names[0] ?? "no names"}`;
  const alternativeNames = options.names.length ? `subjectAltName=${options.names.map((name) => `DNS:${name}`).join(",")}` : null;
  if (!options.ca) {
    const extension = alternativeNames ? ["-addext", alternativeNames] : [];
    await openssl(["req", "-x509", ...NEW_EC_KEY, "-days", days, "-keyout", keyFile, "-out", certFile, "-subj", subject, ...extension]);
    const leafPem = readFileSync(certFile, "utf8");
    return { chainPem: leafPem, leafPem, keyPem: readFileSync(keyFile, "utf8"), certFile, keyFile };
  }
  const requestFile = join(dir, "leaf.csr");
  await openssl(["req", "-new", ...NEW_EC_KEY, "-keyout", keyFile, "-out", requestFile, "-subj", subject]);
  const signArgs = ["x509", "-req", "-in", requestFile, "-CA", options.ca.certFile, "-CAkey", options.ca.keyFile, "-set_serial", `0x${crypto.randomUUID().replace(/-/g, "")}`];
  if (alternativeNames) {
    const extensionFile = join(dir, "leaf.ext");
    writeFileSync(extensionFile, `${alternativeNames}\n`);
    signArgs.push("-extfile", extensionFile);
  }
  await openssl([...signArgs, "-days", days, "-out", certFile]);
  const leafPem = readFileSync(certFile, "utf8");
  const chainPem = leafPem + options.ca.certPem;
  writeFileSync(certFile, chainPem);
  return { chainPem, leafPem, keyPem: readFileSync(keyFile, "utf8"), certFile, keyFile };
}

/** `keyPem` encrypted with a passphrase: PKCS#8 (ENCRYPTED PRIVATE KEY) or the traditional form (Proc-Type header). */
export async function encryptedKey(keyPem: string, form: "pkcs8" | "traditional"): Promise<string> {
  const dir = tempDir("test-key-");
  const plainFile = join(dir, "plain.key");
  const encryptedFile = join(dir, "encrypted.key");
  writeFileSync(plainFile, keyPem);
  const command = form === "pkcs8" ? ["pkey", "-aes256"] : ["ec", "-aes256"];
  await openssl([...command, "-in", plainFile, "-out", encryptedFile, "-passout", "pass:secret"]);
  return readFileSync(encryptedFile, "utf8");
}
