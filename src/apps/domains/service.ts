// An app's own domains (custom domains): host names it answers at through the public proxy besides
// its subdomain. Each belongs to one app platform-wide. The proxy maps each to its app's subdomain
// (src/proxy/routes.ts), so it follows whatever container serves the app, and its limits and
// traffic are the app's. Each shows its certificate and whether its DNS points here; a certificate
// may be uploaded for it in place of the one ACME orders.
import { and, eq, isNotNull, ne } from "drizzle-orm";
import { domainToUnicode } from "node:url";
import type { Static } from "@sinclair/typebox";
import { appDomains, apps } from "../../db/schema";
import { newId } from "../../crypto/tokens";
import { ApiError } from "../../http/errors";
import type { AppRow, AppsContext } from "../deployer";
import type { PublicAddresses } from "../view";
import type { DnsChecker } from "../../certificates/dns-check";
import { CertificateProblem } from "../../certificates/pem";
import { normalizedDomain } from "./names";
import type { AppDomainSchema } from "./model";

export const MAX_DOMAINS_PER_APP = 50;

type DomainRow = typeof appDomains.$inferSelect;

export class AppDomains {
  private get certificates() {
    return this.ctx.certificates;
  }

  constructor(
    private readonly ctx: AppsContext,
    /** The workspace's app, or NOT_FOUND (AppsService.get). */
    private readonly getApp: (workspaceId: string, appId: string) => AppRow,
    /** URLs and certificates of hosts. */
    private readonly addresses: PublicAddresses,
    /** The DNS check of custom domains (src/certificates/dns-check.ts). */
    private readonly dns: DnsChecker,
  ) {}

  /** Every app's domains into the proxy's table (at start). */
  routeAll() {
    const rows = this.ctx.db.select({ domain: appDomains.domain, subdomain: apps.subdomain }).from(appDomains).innerJoin(apps, eq(apps.id, appDomains.appId)).all();
    for (const { domain, subdomain } of rows) if (subdomain) this.ctx.proxyRoutes.setDomain(domain, subdomain);
  }

  /** Every host name an app answers at: subdomains and own domains (apps being deleted left out). */
  servedHosts(): string[] {
    const live = ne(apps.status, "deleting");
    const subdomains = this.ctx.db.select({ subdomain: apps.subdomain }).from(apps).where(and(live, isNotNull(apps.subdomain))).all();
    const domains = this.ctx.db.select({ domain: appDomains.domain }).from(appDomains).innerJoin(apps, eq(apps.id, appDomains.appId)).where(live).all();
    return [...subdomains.map(({ subdomain }) => `${subdomain}.${this.ctx.config.domain}`), ...domains.map(({ domain }) => domain)];
  }

  async view(row: DomainRow): Promise<Static<typeof AppDomainSchema>> {
    return {
      id: row.id,
      appId: row.appId,
      domain: row.domain,
      unicodeDomain: domainToUnicode(row.domain),
      url: this.addresses.urlOf(row.domain),
      certificate: this.addresses.certificateOf(row.domain),
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

  get(workspaceId: string, appId: string, domainId: string) {
    return this.view(this.ownRow(workspaceId, appId, domainId));
  }

  /** The domain serves this certificate from now on (and ACME leaves it alone). */
  uploadCertificate(workspaceId: string, appId: string, domainId: string, certificate: string, privateKey: string) {
    const row = this.ownRow(workspaceId, appId, domainId);
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

  add(workspaceId: string, appId: string, input: string) {
    const app = this.getApp(workspaceId, appId);
    const domain = normalizedDomain(input, { platformDomain: this.ctx.config.domain, apiHosts: this.ctx.config.apiHosts });
    const owner = this.ctx.db.select({ appId: appDomains.appId }).from(appDomains).where(eq(appDomains.domain, domain)).get();
    if (owner) throw new ApiError("DOMAIN_TAKEN", owner.appId === app.id ? `${domain} is already one of this app's domains` : `${domain} belongs to another app on this platform`);
    if (this.rowsOf(app.id).length >= MAX_DOMAINS_PER_APP) throw new ApiError("QUOTA_EXCEEDED", `An app has at most ${MAX_DOMAINS_PER_APP} domains`);
    const row: DomainRow = { id: newId("dom"), appId: app.id, domain, createdAt: Date.now() };
    this.ctx.db.insert(appDomains).values(row).run();
    if (app.subdomain) this.ctx.proxyRoutes.setDomain(domain, app.subdomain);
    this.dns.forget(domain);
    this.certificates.hostsChanged();
    return this.view(row);
  }

  /** Gone before anything awaits: a second removal of it gets 404. Shown as it is after the removal. */
  remove(workspaceId: string, appId: string, domainId: string) {
    const row = this.ownRow(workspaceId, appId, domainId);
    this.ctx.db.delete(appDomains).where(eq(appDomains.id, row.id)).run();
    this.ctx.proxyRoutes.deleteDomain(row.domain);
    this.certificates.forget(row.domain);
    return this.view(row);
  }

  /** The app is routed by another subdomain now (or none): its domains follow. */
  subdomainChanged(appId: string, subdomain: string | null) {
    for (const { domain } of this.rowsOf(appId)) {
      if (subdomain) this.ctx.proxyRoutes.setDomain(domain, subdomain);
      else this.ctx.proxyRoutes.deleteDomain(domain);
    }
  }

  /** The app is being removed: its domains stop routing (their rows go with the app's). */
  unroute(appId: string) {
    for (const { domain } of this.rowsOf(appId)) this.ctx.proxyRoutes.deleteDomain(domain);
  }
}
