// An app's own domains (custom domains): host names it answers at through the public proxy besides
// its subdomain. A domain added is a claim of the app's workspace, `pending` until the workspace's
// TXT record is found (./verification.ts): only then does the proxy route it (to the app's
// subdomain, src/proxy/routes.ts, so it follows whatever container serves the app, with the app's
// limits and traffic) and may it get a certificate. Several workspaces may claim one name; one claim
// at a time holds it (is verified). A holder keeps the name while its record is published: another
// workspace's claim takes the name over only when a lookup finds that workspace's token and not the
// holder's (a name that changed owners, or a claim from before proofs existed, which never had a
// record); the holder's claim is then `lost`. Every claim is looked up again in the background,
// workspaces taking turns, so a verified one shows whether its record is still there. A verified
// domain removed stays reserved to its workspace for PLATFORM_DOMAIN_RESERVATION_HOURS, so that
// nobody else takes it while its DNS still points here. Each domain shows its certificate and
// whether its DNS points here; a certificate may be uploaded for a verified one in place of the one
// ACME orders.
import { Cron } from "croner";
import { and, asc, count, eq, gt, isNotNull, lte, ne } from "drizzle-orm";
import { domainToUnicode } from "node:url";
import type { Static } from "@sinclair/typebox";
import { appDomains, apps, domainReservations } from "../../db/schema";
import { newId } from "../../crypto/tokens";
import { ApiError } from "../../http/errors";
import type { AppRow, AppsContext } from "../deployer";
import type { PublicAddresses } from "../view";
import type { DnsChecker } from "../../certificates/dns-check";
import type { WantedHost } from "../../certificates/service";
import { CertificateProblem } from "../../certificates/pem";
import { FairQueue } from "../../certificates/fair-queue";
import { normalizedDomain } from "./names";
import { challengeProblem, challengeRecordName, holdsToken, issueVerificationToken, verificationTokenOf } from "./verification";
import type { AppDomainSchema } from "./model";

export const MAX_DOMAINS_PER_APP = 50;
/** The longest name DNS allows (RFC 1035), the verification record's included. */
const MAX_DNS_NAME_LENGTH = 253;

type DomainRow = typeof appDomains.$inferSelect;
type DomainView = Static<typeof AppDomainSchema>;

const isVerified = (row: DomainRow) => row.verifiedAt !== null;

export class AppDomains {
  private job: Cron | null = null;
  /** The background check runs once at a time. */
  private checking: Promise<void> | null = null;

  private get certificates() {
    return this.ctx.certificates;
  }

  private get settings() {
    return this.ctx.config.customDomains;
  }

  constructor(
    private readonly ctx: AppsContext,
    /** The workspace's app, or NOT_FOUND (AppsService.get). */
    private readonly getApp: (workspaceId: string, appId: string) => AppRow,
    /** URLs and certificates of hosts. */
    private readonly addresses: PublicAddresses,
    /** The DNS check of custom domains (src/certificates/dns-check.ts), and their TXT lookups. */
    private readonly dns: DnsChecker,
  ) {}

  /** Every app's verified domains into the proxy's table (at start). */
  routeAll() {
    const rows = this.ctx.db
      .select({ domain: appDomains.domain, subdomain: apps.subdomain })
      .from(appDomains)
      .innerJoin(apps, eq(apps.id, appDomains.appId))
      .where(isNotNull(appDomains.verifiedAt))
      .all();
    for (const { domain, subdomain } of rows) if (subdomain) this.ctx.proxyRoutes.setDomain(domain, subdomain);
  }

  /** Looks up the TXT record of every claim on PLATFORM_DOMAIN_CHECK_SCHEDULE. */
  start() {
    this.job = new Cron(this.settings.checkSchedule, { protect: true }, () => this.checkClaims());
  }

  stop() {
    this.job?.stop();
    this.job = null;
  }

  /**
   * Every host name an app answers at and so wants a certificate for: subdomains and verified own
   * domains (apps being deleted left out), each in its workspace's line of orders.
   */
  wantedHosts(): WantedHost[] {
    const live = ne(apps.status, "deleting");
    const subdomains = this.ctx.db
      .select({ subdomain: apps.subdomain, workspaceId: apps.workspaceId })
      .from(apps)
      .where(and(live, isNotNull(apps.subdomain)))
      .all();
    const domains = this.ctx.db
      .select({ domain: appDomains.domain, workspaceId: appDomains.workspaceId })
      .from(appDomains)
      .innerJoin(apps, eq(apps.id, appDomains.appId))
      .where(and(live, isNotNull(appDomains.verifiedAt)))
      .all();
    return [
      ...subdomains.map(({ subdomain, workspaceId }) => ({ host: `${subdomain}.${this.ctx.config.domain}`, owner: workspaceId, checkDns: false })),
      ...domains.map(({ domain, workspaceId }) => ({ host: domain, owner: workspaceId, checkDns: true })),
    ];
  }

  /** The verified claim of another workspace on `domain`, if any. */
  private holderElsewhere(workspaceId: string, domain: string): DomainRow | undefined {
    return this.ctx.db
      .select()
      .from(appDomains)
      .where(and(eq(appDomains.domain, domain), isNotNull(appDomains.verifiedAt), ne(appDomains.workspaceId, workspaceId)))
      .get();
  }

  /** Until when another workspace keeps `domain` reserved (it removed it lately), if it does. */
  private reservedElsewhere(workspaceId: string, domain: string, now = Date.now()): number | null {
    const reservation = this.ctx.db
      .select({ reservedUntil: domainReservations.reservedUntil })
      .from(domainReservations)
      .where(and(eq(domainReservations.domain, domain), ne(domainReservations.workspaceId, workspaceId), gt(domainReservations.reservedUntil, now)))
      .get();
    return reservation?.reservedUntil ?? null;
  }

  private verificationOf(row: DomainRow): DomainView["verification"] {
    const token = verificationTokenOf(this.ctx.db, row.workspaceId);
    if (token === null) throw new Error(`workspace ${row.workspaceId} has a domain claim but no verification token`);
    let status: DomainView["verification"]["status"] = "verified";
    let standing: string | null = null;
    if (!isVerified(row)) {
      const reservedUntil = this.reservedElsewhere(row.workspaceId, row.domain);
      status = row.lostAt !== null ? "lost" : "pending";
      if (reservedUntil !== null) standing = reservedMessage(row.domain, reservedUntil);
      else if (row.lostAt !== null) standing = lostMessage(row.domain, row.lostAt);
      else if (this.holderElsewhere(row.workspaceId, row.domain)) standing = heldMessage(row.domain);
    }
    return {
      status,
      record: { type: "TXT", name: challengeRecordName(row.domain), value: token },
      recordPresent: row.recordPresent,
      verifiedAt: row.verifiedAt === null ? null : new Date(row.verifiedAt).toISOString(),
      checkedAt: row.checkedAt === null ? null : new Date(row.checkedAt).toISOString(),
      message: [standing, row.checkProblem].filter((part) => part !== null).join(" ") || null,
    };
  }

  /** What a claim shows of the certificate of a name another workspace holds: nothing of the holder's. */
  private noCertificate(): DomainView["certificate"] {
    const nothing = { source: null, issuer: null, notBefore: null, expiresAt: null, renewsAt: null, lastError: null, lastAttemptAt: null, nextAttemptAt: null };
    return { status: this.ctx.config.tls.acme ? "waiting" : "none", ...nothing };
  }

  async view(row: DomainRow): Promise<DomainView> {
    return {
      id: row.id,
      appId: row.appId,
      domain: row.domain,
      unicodeDomain: domainToUnicode(row.domain),
      url: this.addresses.urlOf(row.domain),
      verification: this.verificationOf(row),
      certificate: isVerified(row) || !this.holderElsewhere(row.workspaceId, row.domain) ? this.certificates.statusOf(row.domain, Date.now(), isVerified(row)) : this.noCertificate(),
      dns: await this.dns.check(row.domain),
      createdAt: new Date(row.createdAt).toISOString(),
    };
  }

  private rowsOf(appId: string): DomainRow[] {
    return this.ctx.db.select().from(appDomains).where(eq(appDomains.appId, appId)).orderBy(appDomains.createdAt).all();
  }

  list(workspaceId: string, appId: string) {
    return Promise.all(this.rowsOf(this.getApp(workspaceId, appId).id).map((row) => this.view(row)));
  }

  private ownRow(workspaceId: string, appId: string, domainId: string): DomainRow {
    const app = this.getApp(workspaceId, appId);
    const row = this.ctx.db.select().from(appDomains).where(and(eq(appDomains.id, domainId), eq(appDomains.appId, app.id))).get();
    if (!row) throw new ApiError("NOT_FOUND", "Domain not found");
    return row;
  }

  private rowById(domainId: string): DomainRow | undefined {
    return this.ctx.db.select().from(appDomains).where(eq(appDomains.id, domainId)).get();
  }

  get(workspaceId: string, appId: string, domainId: string) {
    return this.view(this.ownRow(workspaceId, appId, domainId));
  }

  /** The domain serves this certificate from now on (and ACME leaves it alone). Verified domains only. */
  uploadCertificate(workspaceId: string, appId: string, domainId: string, certificate: string, privateKey: string) {
    const row = this.ownRow(workspaceId, appId, domainId);
    if (!isVerified(row)) {
      throw new ApiError("DOMAIN_NOT_VERIFIED", `${row.domain} is not verified yet: create the TXT record ${challengeRecordName(row.domain)} shown with the domain first`);
    }
    try {
      this.certificates.upload(row.domain, certificate, privateKey);
    } catch (error) {
      if (error instanceof CertificateProblem) throw new ApiError("INVALID_CERTIFICATE", error.message);
      throw error;
    }
    return this.view(row);
  }

  /** The uploaded certificate goes: ACME orders one when it is on. */
  removeCertificate(workspaceId: string, appId: string, domainId: string) {
    const row = this.ownRow(workspaceId, appId, domainId);
    if (!this.certificates.removeUpload(row.domain)) throw new ApiError("NOT_FOUND", `${row.domain} has no uploaded certificate`);
    return this.view(row);
  }

  /** A pending claim of the app's workspace, looked up at once (the record may exist already). */
  async add(workspaceId: string, appId: string, input: string) {
    const app = this.getApp(workspaceId, appId);
    const domain = normalizedDomain(input, { platformDomain: this.ctx.config.domain, apiHosts: this.ctx.config.apiHosts });
    if (challengeRecordName(domain).length > MAX_DNS_NAME_LENGTH) {
      throw new ApiError("VALIDATION_FAILED", `Invalid body field 'domain': at most ${MAX_DNS_NAME_LENGTH - challengeRecordName("").length} characters, so that its TXT record ${challengeRecordName("…")} is a valid DNS name`);
    }
    const own = this.ctx.db.select({ appId: appDomains.appId }).from(appDomains).where(and(eq(appDomains.domain, domain), eq(appDomains.workspaceId, app.workspaceId))).get();
    if (own) throw new ApiError("DOMAIN_TAKEN", own.appId === app.id ? `${domain} is already one of this app's domains` : `${domain} is already a domain of another app of this workspace: remove it there first`);
    const reservedUntil = this.reservedElsewhere(app.workspaceId, domain);
    if (reservedUntil !== null) throw new ApiError("DOMAIN_TAKEN", reservedMessage(domain, reservedUntil));
    if (this.rowsOf(app.id).length >= MAX_DOMAINS_PER_APP) throw new ApiError("QUOTA_EXCEEDED", `An app has at most ${MAX_DOMAINS_PER_APP} domains`);
    const inWorkspace = this.ctx.db.select({ count: count() }).from(appDomains).where(eq(appDomains.workspaceId, app.workspaceId)).get()!.count;
    if (inWorkspace >= this.settings.maxPerWorkspace) {
      throw new ApiError("QUOTA_EXCEEDED", `A workspace's apps have at most ${this.settings.maxPerWorkspace} domains together (PLATFORM_MAX_DOMAINS_PER_WORKSPACE); remove one first`);
    }
    const row: DomainRow = { id: newId("dom"), appId: app.id, workspaceId: app.workspaceId, domain, verifiedAt: null, checkedAt: null, checkProblem: null, recordPresent: null, lostAt: null, createdAt: Date.now() };
    issueVerificationToken(this.ctx.db, app.workspaceId);
    this.ctx.db.insert(appDomains).values(row).run();
    this.dns.forget(domain);
    return this.view(await this.lookUpChallenge(row));
  }

  /** POST …/verify: the TXT record looked up now. The domain as it is after. */
  async verify(workspaceId: string, appId: string, domainId: string) {
    const row = this.ownRow(workspaceId, appId, domainId);
    this.dns.forget(row.domain);
    return this.view(await this.lookUpChallenge(row));
  }

  /**
   * Looks up the claim's TXT record and notes whether it holds the workspace's token. A claim not
   * verified is verified when it does, unless another workspace keeps the name reserved or holds
   * it with its own token still among the values found: a holder whose token is gone loses the
   * name to this claim. The row as it is after (it may have been removed meanwhile: then as it was).
   */
  private async lookUpChallenge(row: DomainRow): Promise<DomainRow> {
    const records = await this.dns.txtRecords(challengeRecordName(row.domain));
    const now = Date.now();
    // Nothing awaits from here to the writes: no other claim changes in between.
    const current = this.rowById(row.id);
    if (!current) return row;
    const token = verificationTokenOf(this.ctx.db, current.workspaceId);
    const recordPresent = records === null ? null : holdsToken(records, token);
    const problem = challengeProblem(current.domain, records, token ?? "");
    if (isVerified(current)) {
      const values = { checkedAt: now, recordPresent, checkProblem: recordPresent === false ? goneMessage(current.domain) : problem };
      this.ctx.db.update(appDomains).set(values).where(eq(appDomains.id, row.id)).run();
      return { ...current, ...values };
    }
    const holder = this.holderElsewhere(current.workspaceId, current.domain);
    const holderPublished = holder !== undefined && records !== null && holdsToken(records, verificationTokenOf(this.ctx.db, holder.workspaceId));
    const verifies = recordPresent === true && !holderPublished && this.reservedElsewhere(current.workspaceId, current.domain, now) === null;
    const checkProblem = holderPublished ? `${problem ?? ""} The other workspace's record is still published there: the name stays with it.`.trim() : problem;
    const values = verifies ? { checkedAt: now, recordPresent, checkProblem: null, verifiedAt: now, lostAt: null } : { checkedAt: now, recordPresent, checkProblem };
    this.ctx.db.transaction((tx) => {
      // The holder first: one verified claim per name at a time (app_domains_verified_domain).
      if (verifies && holder) tx.update(appDomains).set({ verifiedAt: null, lostAt: now, recordPresent: false, checkProblem: null, checkedAt: now }).where(eq(appDomains.id, holder.id)).run();
      tx.update(appDomains).set(values).where(eq(appDomains.id, row.id)).run();
    });
    if (verifies) this.verified({ ...current, ...values }, holder);
    return { ...current, ...values };
  }

  /**
   * A claim just verified: it routes (in place of the claim it took the name from, whose
   * certificate goes), its certificate is ordered, and its workspace's reservation is used up.
   */
  private verified(row: DomainRow, tookFrom: DomainRow | undefined) {
    this.ctx.db.delete(domainReservations).where(eq(domainReservations.domain, row.domain)).run();
    if (tookFrom) this.certificates.forget(row.domain);
    const app = this.ctx.db.select({ subdomain: apps.subdomain }).from(apps).where(eq(apps.id, row.appId)).get();
    if (app?.subdomain) this.ctx.proxyRoutes.setDomain(row.domain, app.subdomain);
    else if (tookFrom) this.ctx.proxyRoutes.deleteDomain(row.domain);
    console.log(`[domains] ${row.domain} verified for workspace ${row.workspaceId}${tookFrom ? ` (taken over from workspace ${tookFrom.workspaceId}, whose record was gone)` : ""}`);
    this.certificates.hostsChanged();
  }

  /**
   * The background check: the TXT record of every claim not reserved to another workspace, one
   * lookup at a time (each bounded by the DNS checker's timeout), workspaces taking turns so that
   * one with many names on a DNS server that never answers holds the others back by one lookup
   * at most; within a workspace, least recently checked first.
   */
  checkClaims(): Promise<void> {
    this.checking ??= (async () => {
      const now = Date.now();
      this.ctx.db.delete(domainReservations).where(lte(domainReservations.reservedUntil, now)).run();
      const queue = new FairQueue<DomainRow>();
      for (const row of this.ctx.db.select().from(appDomains).orderBy(asc(appDomains.checkedAt)).all()) {
        if (this.reservedElsewhere(row.workspaceId, row.domain, now) === null) queue.add(row.workspaceId, row);
      }
      for (let row = queue.next(); row !== undefined; row = queue.next()) await this.lookUpChallenge(row);
    })()
      .catch((error) => console.error("[domains] the check of domain claims failed:", error))
      .finally(() => {
        this.checking = null;
      });
    return this.checking;
  }

  /** Gone before anything awaits: a second removal of it gets 404. Shown as it is after the removal. */
  remove(workspaceId: string, appId: string, domainId: string) {
    const row = this.ownRow(workspaceId, appId, domainId);
    this.ctx.db.delete(appDomains).where(eq(appDomains.id, row.id)).run();
    this.released(row);
    return this.view(row);
  }

  /** A claim is gone: a verified one stops routing, loses its certificate and stays reserved to its workspace for a while. */
  private released(row: DomainRow) {
    if (!isVerified(row)) return;
    this.ctx.proxyRoutes.deleteDomain(row.domain);
    this.certificates.forget(row.domain);
    if (this.settings.reservationMs === 0) return;
    const reservation = { domain: row.domain, workspaceId: row.workspaceId, reservedUntil: Date.now() + this.settings.reservationMs };
    this.ctx.db.insert(domainReservations).values(reservation).onConflictDoUpdate({ target: domainReservations.domain, set: reservation }).run();
  }

  /** The app is routed by another subdomain now (or none): its verified domains follow. */
  subdomainChanged(appId: string, subdomain: string | null) {
    for (const row of this.rowsOf(appId)) {
      if (!isVerified(row)) continue;
      if (subdomain) this.ctx.proxyRoutes.setDomain(row.domain, subdomain);
      else this.ctx.proxyRoutes.deleteDomain(row.domain);
    }
  }

  /** The app is being removed: its domains stop routing and are reserved (their rows go with the app's). */
  unroute(appId: string) {
    for (const row of this.rowsOf(appId)) this.released(row);
  }
}

function heldMessage(domain: string): string {
  return `${domain} is held by another workspace on this platform, which proved it controls the name: this claim takes it over only when its TXT record is found and that workspace's record is no longer published.`;
}

function reservedMessage(domain: string, reservedUntil: number): string {
  return `${domain} was removed lately by another workspace and stays reserved to it until ${new Date(reservedUntil).toISOString()}`;
}

function lostMessage(domain: string, lostAt: number): string {
  return `${domain} was taken over by another workspace at ${new Date(lostAt).toISOString()}: its TXT record was found while this workspace's was not published. The domain no longer routes to this app; publishing the record again takes it back only once the other workspace's record is gone.`;
}

function goneMessage(domain: string): string {
  return `The TXT record ${challengeRecordName(domain)} does not hold this workspace's value (any more): the domain keeps routing, but another workspace that publishes its own record there takes it over. Publish it again to keep the name.`;
}
