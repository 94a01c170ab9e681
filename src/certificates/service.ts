// The certificates the public proxy serves over HTTPS, by host, and the work that keeps them fresh.
//
// Which certificate a host gets (first that applies): one uploaded for it, the platform's own
// files (PLATFORM_TLS_CERT/KEY) when they cover it, one ordered by ACME (./acme.ts): `served`
// (./served.ts), of which the proxy's thread keeps a copy. The proxy's TLS listener asks it at each
// handshake (SNI), so a renewed certificate serves from the next handshake on while connections
// made before keep theirs: nothing is dropped.
//
// A check on a croner schedule, and every change of the hosts, orders what is missing and renews
// what has lived two thirds of its lifetime: one order at a time platform-wide (never two for one
// host), taken in turn from each workspace's line (./fair-queue.ts); a custom domain only while its
// DNS points here. After a failure no new order for that host name before a backoff that doubles
// each time, remembered by name: removing the domain and adding it again does not clear it.
import { Cron } from "croner";
import { eq } from "drizzle-orm";
import { readFileSync, statSync } from "node:fs";
import type { Static } from "@sinclair/typebox";
import type { Config } from "../config";
import type { PlatformDb } from "../db";
import { certificates } from "../db/schema";
import type { AcmeIssuer } from "./acme";
import type { CertificateFiles, StoredPair } from "./files";
import type { CertificateStatusSchema } from "./model";
import { FairQueue } from "./fair-queue";
import { CertificateProblem, certificateInfo, checkedPair, type CertificateInfo } from "./pem";
import { ServedCertificates, type StoredSource } from "./served";

export type CertificateStatus = Static<typeof CertificateStatusSchema>;
type CertificateRow = typeof certificates.$inferSelect;

/** The first retry after a failed order, doubled at each failure up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 5 * 60_000;
const MAX_BACKOFF_MS = 6 * 3600_000;
/**
 * After the CA said "too many" (urn:ietf:params:acme:error:rateLimited), at least this long.
 * acme-client keeps only the problem's detail, so it is told by its words.
 */
const RATE_LIMITED_BACKOFF_MS = 3600_000;
const RATE_LIMITED = /rate.?limit|too many/i;
const MAX_ERROR_LENGTH = 1000;
/** A failed host name no longer served keeps its backoff this long past the end of its wait. */
const BACKOFF_MEMORY_MS = 24 * 3600_000;

/** A host the proxy serves, and so wants a certificate for. */
export interface WantedHost {
  host: string;
  /** Whose line its orders wait in: the app's workspace, or "platform" for the platform's own names. */
  owner: string;
  /** A custom domain: ordered only while its DNS points at this server. */
  checkDns: boolean;
}

export interface CertificatesDeps {
  db: PlatformDb;
  config: Pick<Config, "tls">;
  files: CertificateFiles;
  /** Null when ACME is off (PLATFORM_ACME_EMAIL unset). */
  issuer: AcmeIssuer | null;
  /** Every host the proxy serves: app subdomains, verified custom domains, the API domain. */
  wantedHosts: () => WantedHost[];
  /** Whether `host` resolves to this server, or that cannot be told (its address is unknown). */
  pointsHere: (host: string) => Promise<boolean>;
}

/** Names no public CA signs (RFC 6761): never ordered. */
const orderable = (host: string) => host !== "localhost" && !host.endsWith(".localhost");

export class Certificates {
  /** What serves each host now. */
  readonly served = new ServedCertificates();
  /** The own certificate files' modification times when last read: a change is read again at the next check. */
  private ownModified: string | null = null;
  private readonly queue = new FairQueue<string>();
  private ordering: string | null = null;
  /** Custom domains whose DNS is being looked up before they may be queued. */
  private readonly lookingUp = new Set<string>();
  /** Custom domains whose DNS did not point here at the last check: not ordered. */
  private readonly waitingForDns = new Set<string>();
  private job: Cron | null = null;
  /**
   * Called when a certificate exists: at start, when the first one comes, and at every check after
   * (the proxy opens its HTTPS listener then, or tries again when it could not).
   */
  onAvailable: (() => void) | null = null;
  /**
   * Told of each ACME HTTP-01 challenge's answer (the key authorization) while its order waits for
   * the CA's check, and of its end (null): the proxy answers them.
   */
  onChallenge: ((token: string, keyAuthorization: string | null) => void) | null = null;

  constructor(private readonly deps: CertificatesDeps) {
    if (deps.issuer) deps.issuer.onChallenge = (token, keyAuthorization) => this.onChallenge?.(token, keyAuthorization);
  }

  /** Reads the own certificate (a bad one stops the start) and the stored ones (a bad one is logged). */
  load() {
    this.readOwn(true);
    for (const row of this.deps.db.select().from(certificates).all()) {
      const pair = this.deps.files.read(row.host);
      if (!pair) continue;
      try {
        this.served.setStored(row.host, { pair, source: row.source === "uploaded" ? "uploaded" : "acme" }, certificateInfo(pair.chainPem));
      } catch (error) {
        console.error(`[certificates] the stored certificate of ${row.host} cannot be read: ${(error as Error).message}`);
      }
    }
  }

  private readOwn(atStart: boolean) {
    const files = this.deps.config.tls.ownCertificate;
    if (!files) return;
    try {
      const modified = `${statSync(files.certFile).mtimeMs}/${statSync(files.keyFile).mtimeMs}`;
      if (this.ownModified === modified) return;
      const pair = { chainPem: readFileSync(files.certFile, "utf8"), keyPem: readFileSync(files.keyFile, "utf8") };
      this.served.setOwn(pair, checkedPair(pair.chainPem, pair.keyPem, null));
      this.ownModified = modified;
    } catch (error) {
      const message = `PLATFORM_TLS_CERT/PLATFORM_TLS_KEY: ${(error as Error).message}`;
      if (atStart) throw new Error(message);
      console.error(`[certificates] ${message}; the certificate read before keeps serving`);
    }
  }

  start() {
    this.job = new Cron(this.deps.config.tls.renewalSchedule, { protect: true }, () => this.check());
    this.check();
  }

  stop() {
    this.job?.stop();
    this.job = null;
  }

  private row(host: string): CertificateRow | undefined {
    return this.deps.db.select().from(certificates).where(eq(certificates.host, host)).get();
  }

  /** A certificate valid now serves `host` (plain HTTP may then redirect to HTTPS). */
  servesHttps(host: string, now = Date.now()): boolean {
    return this.served.servesHttps(host, now);
  }

  /** `eligible` false: `host` may get no certificate yet (a domain not verified): nothing is ordered for it. */
  statusOf(host: string, now = Date.now(), eligible = true): CertificateStatus {
    const row = this.row(host);
    const found = this.served.servedFor(host);
    const info = found?.info;
    const valid = info !== undefined && info.notBefore <= now && now < info.notAfter;
    const willOrder = this.deps.issuer !== null && orderable(host) && found?.source !== "platform" && found?.source !== "uploaded";
    const status = valid
      ? "issued"
      : info
        ? "expired"
        : this.ordering === host || this.queue.has(host)
          ? "pending"
          : willOrder && (!eligible || this.waitingForDns.has(host))
            ? "waiting"
            : row?.lastError
              ? "failed"
              : willOrder
                ? "pending"
                : "none";
    return {
      status,
      source: found?.source ?? (willOrder ? "acme" : null),
      issuer: info?.issuer ?? null,
      notBefore: info ? new Date(info.notBefore).toISOString() : null,
      expiresAt: info ? new Date(info.notAfter).toISOString() : null,
      renewsAt: info && found?.source === "acme" ? new Date(renewalTime(info)).toISOString() : null,
      lastError: row?.lastError ?? null,
      lastAttemptAt: row?.lastAttemptAt ? new Date(row.lastAttemptAt).toISOString() : null,
      nextAttemptAt: row?.lastError && row.nextAttemptAt ? new Date(row.nextAttemptAt).toISOString() : null,
    };
  }

  /** The hosts changed (an app or a domain came or went): order what is now missing. */
  hostsChanged() {
    this.check();
  }

  /**
   * Orders the certificates missing or due for renewal, and forgets those of hosts no longer
   * served. Also reads the own certificate files again when they changed.
   */
  check(now = Date.now()) {
    this.readOwn(false);
    if (this.served.available()) this.onAvailable?.();
    const wanted = new Map(this.deps.wantedHosts().map((entry) => [entry.host, entry]));
    for (const row of this.deps.db.select().from(certificates).all()) {
      if (!wanted.has(row.host) && (row.notAfter !== null || !backoffRemembered(row, now))) this.forget(row.host, now);
    }
    for (const host of this.waitingForDns) if (!wanted.has(host)) this.waitingForDns.delete(host);
    if (!this.deps.issuer) return;
    for (const { host, owner, checkDns } of wanted.values()) {
      if (this.queue.has(host) || this.ordering === host || this.lookingUp.has(host) || !orderable(host)) continue;
      const found = this.served.servedFor(host);
      if (found && found.source !== "acme") continue;
      if (found && now < renewalTime(found.info)) continue;
      const row = this.row(host);
      if (row?.nextAttemptAt && row.lastError && now < row.nextAttemptAt) continue;
      if (checkDns) this.queueOncePointingHere(host, owner);
      else this.queue.add(owner, host);
    }
    void this.work();
  }

  /** An order for a custom domain goes out only if the CA can reach this server by its name. */
  private queueOncePointingHere(host: string, owner: string) {
    this.lookingUp.add(host);
    void this.deps.pointsHere(host).then((pointsHere) => {
      this.lookingUp.delete(host);
      if (!this.isWanted(host)) return;
      if (!pointsHere) {
        this.waitingForDns.add(host);
        return;
      }
      this.waitingForDns.delete(host);
      this.queue.add(owner, host);
      void this.work();
    }).catch((error) => {
      this.lookingUp.delete(host);
      console.error(`[certificates] ${host}: the DNS check failed: ${errorText(error)}`);
    });
  }

  private isWanted(host: string): boolean {
    return this.deps.wantedHosts().some((entry) => entry.host === host);
  }

  private async work() {
    if (this.ordering !== null) return;
    for (let host = this.queue.next(); host !== undefined; host = this.queue.next()) {
      this.ordering = host;
      try {
        await this.orderFor(host);
      } catch (error) {
        // Its outcome could not be stored (a full disk): the next check tries the host again.
        console.error(`[certificates] ${host}: the order's outcome could not be saved: ${errorText(error)}`);
      } finally {
        this.ordering = null;
      }
    }
  }

  private async orderFor(host: string) {
    const startedAt = Date.now();
    const before = this.row(host);
    try {
      const pair = await this.deps.issuer!.order(host);
      const info = checkedPair(pair.chainPem, pair.keyPem, host);
      // The host may have gone, or got an uploaded certificate, while the CA worked.
      if (!this.isWanted(host) || this.served.storedSourceOf(host) === "uploaded") return;
      this.deps.files.write(host, pair);
      this.saveRow(host, { source: "acme", notBefore: info.notBefore, notAfter: info.notAfter, lastError: null, lastAttemptAt: startedAt, failures: 0, nextAttemptAt: null });
      this.put(host, pair, "acme", info);
      console.log(`[certificates] ${host}: certificate in place until ${new Date(info.notAfter).toISOString()}`);
    } catch (error) {
      const message = errorText(error);
      const failures = (before?.failures ?? 0) + 1;
      let backoff = Math.min(FIRST_BACKOFF_MS * 2 ** (failures - 1), MAX_BACKOFF_MS);
      if (RATE_LIMITED.test(message)) backoff = Math.max(backoff, RATE_LIMITED_BACKOFF_MS);
      if (!this.isWanted(host) || this.served.storedSourceOf(host) === "uploaded") return;
      this.saveRow(host, {
        source: before?.source ?? "acme",
        notBefore: before?.notBefore ?? null,
        notAfter: before?.notAfter ?? null,
        lastError: message,
        lastAttemptAt: startedAt,
        failures,
        nextAttemptAt: Date.now() + backoff,
      });
      console.warn(`[certificates] ${host}: order failed (${failures} in a row, next try in ${Math.round(backoff / 60_000)} min): ${message}`);
    }
  }

  private put(host: string, pair: StoredPair, source: StoredSource, info: CertificateInfo) {
    const first = !this.served.available();
    this.served.setStored(host, { pair, source }, info);
    if (first) this.onAvailable?.();
  }

  private saveRow(host: string, values: Omit<CertificateRow, "host" | "updatedAt">) {
    const row = { host, ...values, updatedAt: Date.now() };
    this.deps.db.insert(certificates).values(row).onConflictDoUpdate({ target: certificates.host, set: row }).run();
  }

  /**
   * `host` serves this certificate, whatever else would (a custom domain's own). Throws a
   * CertificateProblem when it does not fit the host.
   */
  upload(host: string, chainPem: string, keyPem: string): CertificateStatus {
    const info = checkedPair(chainPem, keyPem, host);
    const pair = { chainPem, keyPem };
    this.deps.files.write(host, pair);
    this.saveRow(host, { source: "uploaded", notBefore: info.notBefore, notAfter: info.notAfter, lastError: null, lastAttemptAt: null, failures: 0, nextAttemptAt: null });
    this.put(host, pair, "uploaded", info);
    return this.statusOf(host);
  }

  /** The uploaded certificate of `host` goes; ACME takes over when it is on. */
  removeUpload(host: string): boolean {
    if (this.row(host)?.source !== "uploaded") return false;
    this.forget(host);
    this.check();
    return true;
  }

  /**
   * The certificate of `host` goes (its domain or app was removed). A backoff after failed orders
   * stays with the name for a while: adding the domain again does not send a new order sooner.
   */
  forget(host: string, now = Date.now()) {
    this.queue.delete(host);
    this.waitingForDns.delete(host);
    this.served.setStored(host, null);
    this.deps.files.remove(host);
    const row = this.row(host);
    if (row && row.source !== "uploaded" && backoffRemembered(row, now)) {
      this.deps.db.update(certificates).set({ source: "acme", notBefore: null, notAfter: null, updatedAt: now }).where(eq(certificates.host, host)).run();
    } else {
      this.deps.db.delete(certificates).where(eq(certificates.host, host)).run();
    }
  }
}

/** The row holds a backoff after failures still worth keeping for its host name. */
function backoffRemembered(row: CertificateRow, now: number): boolean {
  return row.lastError !== null && row.nextAttemptAt !== null && now < row.nextAttemptAt + BACKOFF_MEMORY_MS;
}

/** Two thirds into the certificate's lifetime. */
export function renewalTime(info: Pick<CertificateInfo, "notBefore" | "notAfter">): number {
  return info.notBefore + ((info.notAfter - info.notBefore) * 2) / 3;
}

function errorText(error: unknown): string {
  const text = error instanceof CertificateProblem ? `The CA's certificate was refused: ${error.message}` : error instanceof Error ? error.message : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text;
}
