// Which certificate serves each host, by precedence (the first that applies): one uploaded for it,
// the platform's own files (PLATFORM_TLS_CERT/KEY) when they cover it, one ordered by ACME. The
// certificates service (./service.ts) keeps this table and decides what goes in it; the public
// proxy, on a thread of its own (src/proxy/thread.ts), keeps a copy made change by change, and asks
// it at each TLS handshake. A certificate's TLS context is made on the first handshake that needs
// it, so the copy that never serves one (the service's) never makes any.
import { createSecureContext, type SecureContext } from "node:tls";
import type { StoredPair } from "./files";
import { certificateInfo, covers, type CertificateInfo } from "./pem";

/** Where a host's own certificate came from. */
export type StoredSource = "acme" | "uploaded";

/** One change, as made in a copy of the table. PEM text crosses threads; what is read from it does not. */
export type ServedChange = { kind: "stored"; host: string; certificate: { pair: StoredPair; source: StoredSource } | null } | { kind: "own"; pair: StoredPair };

/** Names asked for whose coverage by the own certificate is remembered; any name may be asked. */
const MAX_COVERAGE_ANSWERS = 10_000;

interface Entry {
  pair: StoredPair;
  info: CertificateInfo;
  source: StoredSource | "platform";
  context: SecureContext | null;
}

export class ServedCertificates {
  private readonly stored = new Map<string, Entry & { source: StoredSource }>();
  private own: Entry | null = null;
  /** Which hosts the own certificate covers, as asked so far. */
  private readonly ownCovers = new Map<string, boolean>();
  /** Told of every change, once made. */
  onChange: ((change: ServedChange) => void) | null = null;

  /**
   * `host`'s own certificate (null: none any more). `info` is what the caller read of the chain
   * already; without it the chain is read here.
   */
  setStored(host: string, certificate: { pair: StoredPair; source: StoredSource } | null, info?: CertificateInfo) {
    if (certificate) this.stored.set(host, { ...certificate, info: info ?? certificateInfo(certificate.pair.chainPem), context: null });
    else if (!this.stored.delete(host)) return;
    this.onChange?.({ kind: "stored", host, certificate });
  }

  /** The platform's own certificate (PLATFORM_TLS_CERT/KEY), read anew. */
  setOwn(pair: StoredPair, info?: CertificateInfo) {
    this.own = { pair, info: info ?? certificateInfo(pair.chainPem), source: "platform", context: null };
    this.ownCovers.clear();
    this.onChange?.({ kind: "own", pair });
  }

  /** Makes a change told by another table's onChange. */
  apply(change: ServedChange) {
    if (change.kind === "stored") this.setStored(change.host, change.certificate);
    else this.setOwn(change.pair);
  }

  /** The changes that make an empty table this one. */
  changes(): ServedChange[] {
    const changes: ServedChange[] = [];
    if (this.own) changes.push({ kind: "own", pair: this.own.pair });
    for (const [host, { pair, source }] of this.stored) changes.push({ kind: "stored", host, certificate: { pair, source } });
    return changes;
  }

  /** Some certificate can serve (the HTTPS listener can open). */
  available(): boolean {
    return this.own !== null || this.stored.size > 0;
  }

  /** Where `host`'s own certificate came from; undefined when it has none stored. */
  storedSourceOf(host: string): StoredSource | undefined {
    return this.stored.get(host)?.source;
  }

  /** What serves `host`, by the order of precedence above. */
  servedFor(host: string): { info: CertificateInfo; source: StoredSource | "platform" } | null {
    const entry = this.entryFor(host);
    return entry && { info: entry.info, source: entry.source };
  }

  /** The certificate for a TLS handshake that asked for `serverName`; undefined: the listener's default. */
  secureContextFor(serverName: string): SecureContext | undefined {
    const entry = this.entryFor(serverName.toLowerCase().replace(/\.$/, ""));
    if (!entry) return undefined;
    entry.context ??= createSecureContext({ cert: entry.pair.chainPem, key: entry.pair.keyPem });
    return entry.context;
  }

  /** The certificate for handshakes without a known name: the own one, else any. */
  defaultPair(): StoredPair | null {
    if (this.own) return this.own.pair;
    for (const { pair } of this.stored.values()) return pair;
    return null;
  }

  /** A certificate valid now serves `host` (plain HTTP may then redirect to HTTPS). */
  servesHttps(host: string, now = Date.now()): boolean {
    const info = this.entryFor(host)?.info;
    return info !== undefined && info.notBefore <= now && now < info.notAfter;
  }

  private entryFor(host: string): Entry | null {
    const stored = this.stored.get(host);
    if (stored?.source === "uploaded") return stored;
    if (this.ownCoversHost(host)) return this.own;
    return stored ?? null;
  }

  private ownCoversHost(host: string): boolean {
    if (!this.own) return false;
    let covered = this.ownCovers.get(host);
    if (covered === undefined) {
      covered = covers(this.own.info.leaf, host);
      if (this.ownCovers.size >= MAX_COVERAGE_ANSWERS) this.ownCovers.clear();
      this.ownCovers.set(host, covered);
    }
    return covered;
  }
}
