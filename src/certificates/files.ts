// Where certificates live: `<data dir>/certificates/<host>.crt` (the chain) and `<host>.key`, and
// the ACME account key beside them. Only the platform's user can read them (0600, folder 0700).
// A file is replaced by a rename, so a reader sees the old one or the new one, never half of one.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** What a host name may look like by the time it gets here (src/apps/domains/names.ts checked it). */
const FILE_SAFE_HOST = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/;

export interface StoredPair {
  chainPem: string;
  keyPem: string;
}

export class CertificateFiles {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = join(dataDir, "certificates");
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700);
  }

  private pathOf(host: string, extension: "crt" | "key"): string {
    if (!FILE_SAFE_HOST.test(host)) throw new Error(`not a host name fit for a file name: ${JSON.stringify(host)}`);
    return join(this.dir, `${host}.${extension}`);
  }

  private writePrivate(path: string, text: string) {
    const temporary = `${path}.${process.pid}.tmp`;
    try {
      writeFileSync(temporary, text, { mode: 0o600 });
      renameSync(temporary, path);
    } catch (error) {
      // A full disk leaves a partial file behind: it would take the little space there is.
      rmSync(temporary, { force: true });
      throw error;
    }
  }

  read(host: string): StoredPair | null {
    const chainFile = this.pathOf(host, "crt");
    const keyFile = this.pathOf(host, "key");
    if (!existsSync(chainFile) || !existsSync(keyFile)) return null;
    return { chainPem: readFileSync(chainFile, "utf8"), keyPem: readFileSync(keyFile, "utf8") };
  }

  /** The key first: a chain is never on disk without its key. */
  write(host: string, pair: StoredPair) {
    this.writePrivate(this.pathOf(host, "key"), pair.keyPem);
    this.writePrivate(this.pathOf(host, "crt"), pair.chainPem);
  }

  /** Nothing can be stored under a name that is not file-safe: nothing to remove then. */
  remove(host: string) {
    if (!FILE_SAFE_HOST.test(host)) return;
    rmSync(this.pathOf(host, "crt"), { force: true });
    rmSync(this.pathOf(host, "key"), { force: true });
  }

  /** The ACME account's key, made by `create` the first time. */
  accountKey(create: () => Promise<string>): Promise<string> {
    const path = join(this.dir, "acme-account.key");
    if (existsSync(path)) return Promise.resolve(readFileSync(path, "utf8"));
    return create().then((pem) => {
      this.writePrivate(path, pem);
      return pem;
    });
  }
}
