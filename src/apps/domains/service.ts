// An app's own domains (custom domains): host names it answers at through the public proxy besides
// its subdomain. A domain added is a claim of the app's workspace, `pending` until the workspace's
// TXT record is found (./verification.ts): only then does the proxy route it (to the app's
// subdomain, src/proxy/routes.ts, so it follows whatever container serves the app, with the app's
// limits and traffic) and may it get a certificate. Several workspaces may claim one name; the first
// to verify it holds it, the others' claims show as `lost`. A verified domain removed stays reserved
// to its workspace for PLATFORM_DOMAIN_RESERVATION_HOURS, so that nobody else takes it while its
// DNS still points here. Each domain shows its certificate and whether its DNS points here; a
// certificate may be uploaded for a verified one in place of the one ACME orders.
import { Cron } from "croner";
import { and, asc, count, eq, gt, isNotNull, isNull, lte, ne } from "drizzle-orm";
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
import { normalizedDomain } from "./names";
import { challengeProblem, challengeRecordName, verificationToken } from "./verification";
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

  /** Looks up the TXT record of every pending domain on PLATFORM_DOMAIN_CHECK_SCHEDULE. */
  start() {
    this.job = new Cron(this.settings.checkSchedule, { protect: true }, () => this.checkPending());
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

  /** Who else holds `domain` against `workspaceId`: a verified claim or a reservation of another workspace. */
  private heldElsewhere(workspaceId: string, domain: string, now = Date.now()): "verified" | { reservedUntil: number } | null {
    const verified = this.ctx.db
      .select({ id: appDomains.id })
      .from(appDomains)
      .where(and(eq(appDomains.domain, domain), isNotNull(appDomains.verifiedAt), ne(appDomains.workspaceId, workspaceId)))
      .get();
    if (verified) return "verified";
    const reservation = this.ctx.db
      .select({ reservedUntil: domainReservations.reservedUntil })
      .from(domainReservations)
      .where(and(eq(domainReservations.domain, domain), ne(domainReservations.workspaceId, workspaceId), gt(domainReservations.reservedUntil, now)))
      .get();
    return reservation ?? null;
  }

  private verificationOf(row: DomainRow): DomainView["verification"] {
    const holder = isVerified(row) ? null : this.heldElsewhere(row.workspaceId, row.domain);
    return {
      status: isVerified(row) ? "verified" : holder ? "lost" : "pending",
      record: { type: "TXT", name: challengeRecordName(row.domain), value: verificationToken(this.ctx.db, row.workspaceId) },
      verifiedAt: row.verifiedAt === null ? null : new Date(row.verifiedAt).toISOString(),
      checkedAt: row.checkedAt === null ? null : new Date(row.checkedAt).toISOString(),
      message: holder ? lostMessage(row.domain, holder) : row.checkProblem,
    };
  }

  async view(row: DomainRow): Promise<DomainView> {
    return {
      id: row.id,
      appId: row.appId,
      domain: row.domain,
      unicodeDomain: domainToUnicode(row.domain),
      url: this.addresses.urlOf(row.domain),
      verification: this.verificationOf(row),
      certificate: this.certificates.statusOf(row.domain, Date.now(), isVerified(row)),
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
    const holder = this.heldElsewhere(app.workspaceId, domain);
    if (holder) throw new ApiError("DOMAIN_TAKEN", lostMessage(domain, holder));
    if (this.rowsOf(app.id).length >= MAX_DOMAINS_PER_APP) throw new ApiError("QUOTA_EXCEEDED", `An app has at most ${MAX_DOMAINS_PER_APP} domains`);
    const inWorkspace = this.ctx.db.select({ count: count() }).from(appDomains).where(eq(appDomains.workspaceId, app.workspaceId)).get()!.count;
    if (inWorkspace >= this.settings.maxPerWorkspace) {
      throw new ApiError("QUOTA_EXCEEDED", `A workspace's apps have at most ${this.settings.maxPerWorkspace} domains together (PLATFORM_MAX_DOMAINS_PER_WORKSPACE); remove one first`);
    }
    const row: DomainRow = { id: newId("dom"), appId: app.id, workspaceId: app.workspaceId, domain, verifiedAt: null, checkedAt: null, checkProblem: null, createdAt: Date.now() };
    this.ctx.db.insert(appDomains).values(row).run();
    this.dns.forget(domain);
    return this.view(await this.lookUpChallenge(row));
  }

  /** POST …/verify: the TXT record looked up now. The domain as it is after. */
  async verify(workspaceId: string, appId: string, domainId: string) {
    const row = this.ownRow(workspaceId, appId, domainId);
    this.dns.forget(row.domain);
    return this.view(isVerified(row) ? row : await this.lookUpChallenge(row));
  }

  /**
   * Looks up the claim's TXT record and, when it holds the workspace's token and no other workspace
   * holds the name, verifies the claim: from then on it routes and gets certificates. The row as it
   * is after (it may have been removed meanwhile: then as it was).
   */
  private async lookUpChallenge(row: DomainRow): Promise<DomainRow> {
    const token = verificationToken(this.ctx.db, row.workspaceId);
    const records = await this.dns.txtRecords(challengeRecordName(row.domain));
    const now = Date.now();
    const problem = challengeProblem(row.domain, records, token);
    // Nothing awaits from here to the write: no other claim can be verified in between.
    const current = this.rowById(row.id);
    if (!current) return row;
    const verifies = problem === null && this.heldElsewhere(current.workspaceId, current.domain, now) === null;
    const values = { checkedAt: now, checkProblem: verifies ? null : problem, ...(verifies ? { verifiedAt: now } : {}) };
    this.ctx.db.update(appDomains).set(values).where(eq(appDomains.id, row.id)).run();
    if (verifies) this.verified({ ...current, ...values });
    return { ...current, ...values };
  }

  /** A claim just verified: it routes, its certificate is ordered, and its workspace's reservation is used up. */
  private verified(row: DomainRow) {
    this.ctx.db.delete(domainReservations).where(eq(domainReservations.domain, row.domain)).run();
    const app = this.ctx.db.select({ subdomain: apps.subdomain }).from(apps).where(eq(apps.id, row.appId)).get();
    if (app?.subdomain) this.ctx.proxyRoutes.setDomain(row.domain, app.subdomain);
    console.log(`[domains] ${row.domain} verified for workspace ${row.workspaceId}`);
    this.certificates.hostsChanged();
  }

  /**
   * The background check: the TXT record of each pending claim not held by another workspace,
   * least recently checked first, one lookup at a time.
   */
  checkPending(): Promise<void> {
    this.checking ??= (async () => {
      const now = Date.now();
      this.ctx.db.delete(domainReservations).where(lte(domainReservations.reservedUntil, now)).run();
      const pending = this.ctx.db.select().from(appDomains).where(isNull(appDomains.verifiedAt)).orderBy(asc(appDomains.checkedAt)).all();
      for (const row of pending) {
        if (this.heldElsewhere(row.workspaceId, row.domain, now)) continue;
        await this.lookUpChallenge(row);
      }
    })()
      .catch((error) => console.error("[domains] the check of pending domains failed:", error))
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

function lostMessage(domain: string, holder: "verified" | { reservedUntil: number }): string {
  return holder === "verified"
    ? `${domain} belongs to another workspace on this platform, which proved it controls the name`
    : `${domain} was removed lately by another workspace and stays reserved to it until ${new Date(holder.reservedUntil).toISOString()}`;
}
