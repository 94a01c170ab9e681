// Orders certificates from an ACME CA (Let's Encrypt by default) with acme-client, proving each host
// by HTTP-01: the CA fetches http://<host>/.well-known/acme-challenge/<token> and the public proxy
// answers it (src/proxy/client-connection.ts) with what `onChallenge` told it. acme-client is
// loaded on the first order: a platform without ACME does not carry it in memory.
import type { Client } from "acme-client";
import { Agent } from "node:https";
import { readFileSync } from "node:fs";
import type { TlsSettings } from "../config";
import type { CertificateFiles, StoredPair } from "./files";

/** The longest one request to the CA may take. */
const REQUEST_TIMEOUT_MS = 30_000;

export class AcmeIssuer {
  private client: Promise<Client> | null = null;
  /**
   * Told of each challenge's key authorization before the CA is asked to check it, and of its end
   * (null): what the proxy answers at CHALLENGE_PATH_PREFIX + token meanwhile.
   */
  onChallenge: ((token: string, keyAuthorization: string | null) => void) | null = null;

  constructor(
    private readonly settings: NonNullable<TlsSettings["acme"]>,
    private readonly files: CertificateFiles,
  ) {}

  /** The account, registered once per process (an existing account is found again by its key). */
  private account(): Promise<Client> {
    this.client ??= (async () => {
      const acme = await import("acme-client");
      // A CA that stops answering must not hold the queue of orders (one at a time) forever.
      acme.axios.defaults.timeout = REQUEST_TIMEOUT_MS;
      if (this.settings.caFile) {
        // A private CA's directory (step-ca, Pebble): its HTTPS certificate is trusted through this file.
        (acme.axios.defaults as { httpsAgent?: Agent }).httpsAgent = new Agent({ ca: readFileSync(this.settings.caFile, "utf8") });
      }
      const accountKey = await this.files.accountKey(async () => (await acme.crypto.createPrivateEcdsaKey()).toString());
      const client = new acme.Client({ directoryUrl: this.settings.directoryUrl, accountKey });
      await client.createAccount({ termsOfServiceAgreed: true, contact: [`mailto:${this.settings.email}`] });
      return client;
    })().catch((error) => {
      this.client = null;
      throw error;
    });
    return this.client;
  }

  /** A new certificate for `host` with a new key. Throws the CA's problem as the error message. */
  async order(host: string): Promise<StoredPair> {
    const client = await this.account();
    const acme = await import("acme-client");
    const [key, csr] = await acme.crypto.createCsr({ commonName: host, altNames: [host] }, await acme.crypto.createPrivateEcdsaKey());
    const chainPem = await client.auto({
      csr,
      challengePriority: ["http-01"],
      // acme-client would fetch the challenge itself first, through the system's DNS: the CA's check is the one that counts.
      skipChallengeVerification: true,
      challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
        this.onChallenge?.(challenge.token, keyAuthorization);
      },
      challengeRemoveFn: async (_authz, challenge) => {
        this.onChallenge?.(challenge.token, null);
      },
    });
    return { chainPem, keyPem: key.toString() };
  }
}
