// Certificates made with openssl for tests: self-signed, so each is its own trust anchor.
import { spawn } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./temp";

export interface TestCertificate {
  certFile: string;
  keyFile: string;
  certPem: string;
  keyPem: string;
}

/** A self-signed ECDSA certificate for `names` (wildcards allowed), valid for two days. */
export async function selfSignedCertificate(names: string[]): Promise<TestCertificate> {
  const dir = tempDir("cert-");
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  const child = spawn(
    [
      "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
      "-keyout", keyFile, "-out", certFile, "-subj", `/CN=${names[0]}`, "-addext", `subjectAltName=${names.map((name) => `DNS:${name}`).join(",")}`,
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
  if ((await child.exited) !== 0) throw new Error(`openssl: ${await new Response(child.stderr).text()}`);
  return { certFile, keyFile, certPem: readFileSync(certFile, "utf8"), keyPem: readFileSync(keyFile, "utf8") };
}
