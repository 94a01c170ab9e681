// Encryption of stored secrets (app env vars, database passwords) with AES-256-GCM under a master
// key kept in the data dir (mode 0600, made on first start), and MACs under keys derived from it.
// Each value has a random nonce and is bound to where it belongs (associated data such as app id
// + variable name), so a ciphertext copied to another row does not decrypt.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const KEY_FILE = "master.key";
const VERSION = "v1";

export class MissingMasterKey extends Error {}

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error("the master key must be 32 bytes");
  }

  encrypt(plaintext: string, associatedData: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, nonce);
    cipher.setAAD(Buffer.from(associatedData));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}.${nonce.toString("base64")}.${body.toString("base64")}`;
  }

  /** HMAC-SHA256 of `message` under a key derived from the master key for `purpose` alone (signed links, states). */
  mac(purpose: string, message: string): Buffer {
    const key = Buffer.from(hkdfSync("sha256", this.key, Buffer.alloc(0), `platform mac: ${purpose}`, 32));
    return createHmac("sha256", key).update(message).digest();
  }

  decrypt(sealed: string, associatedData: string): string {
    const [version, nonce, body] = sealed.split(".");
    if (version !== VERSION || !nonce || !body) throw new Error("unknown secret format");
    const bytes = Buffer.from(body, "base64");
    const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(nonce, "base64"));
    decipher.setAAD(Buffer.from(associatedData));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString("utf8");
  }
}

/**
 * Opens the data dir's master key, creating it on first start. Refuses to invent a new key when
 * encrypted data already exists: that data would be unreadable, so the operator must restore the file.
 */
export function openSecretBox(dataDir: string, encryptedDataExists: boolean): SecretBox {
  const path = join(dataDir, KEY_FILE);
  if (existsSync(path)) return new SecretBox(Buffer.from(readFileSync(path, "utf8").trim(), "base64"));
  if (encryptedDataExists) {
    throw new MissingMasterKey(
      `${path} is missing but the database holds encrypted secrets; restore master.key from your backup ` +
        `(a new key could not decrypt them)`,
    );
  }
  const key = randomBytes(32);
  writeFileSync(path, `${key.toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  return new SecretBox(key);
}
