// An app's own domains (custom domains): host names it answers at through the public proxy besides
// its subdomain. Each belongs to one app platform-wide. The proxy maps each to its app's subdomain
// (src/proxy/routes.ts), so it follows whatever container serves the app, and its limits and
// traffic are the app's.
import { and, eq } from "drizzle-orm";
import { domainToUnicode } from "node:url";
import type { Static } from "@sinclair/typebox";
import { appDomains, apps } from "../../db/schema";
import { newId } from "../../crypto/tokens";
import { ApiError } from "../../http/errors";
import type { AppRow, AppsContext } from "../deployer";
import { normalizedDomain } from "./names";
import type { AppDomainSchema } from "./model";

export const MAX_DOMAINS_PER_APP = 50;

type DomainRow = typeof appDomains.$inferSelect;

export class AppDomains {
  constructor(
    private readonly ctx: AppsContext,
    /** The workspace's app, or NOT_FOUND (AppsService.get). */
    private readonly getApp: (workspaceId: string, appId: string) => AppRow,
    /** The public proxy's port, as app URLs show it. */
    private readonly proxyPort: () => number,
  ) {}

  /** Every app's domains into the proxy's table (at start). */
  routeAll() {
    const rows = this.ctx.db.select({ domain: appDomains.domain, subdomain: apps.subdomain }).from(appDomains).innerJoin(apps, eq(apps.id, appDomains.appId)).all();
    for (const { domain, subdomain } of rows) if (subdomain) this.ctx.proxyRoutes.setDomain(domain, subdomain);
  }

  view(row: DomainRow): Static<typeof AppDomainSchema> {
    const port = this.proxyPort();
    return {
      id: row.id,
      appId: row.appId,
      domain: row.domain,
      unicodeDomain: domainToUnicode(row.domain),
      url: `http://${row.domain}${port === 80 ? "" : `:${port}`}`,
      createdAt: new Date(row.createdAt).toISOString(),
    };
  }

  private rowsOf(appId: string): DomainRow[] {
    return this.ctx.db.select().from(appDomains).where(eq(appDomains.appId, appId)).orderBy(appDomains.createdAt).all();
  }

  list(workspaceId: string, appId: string) {
    return this.rowsOf(this.getApp(workspaceId, appId).id).map((row) => this.view(row));
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
    return this.view(row);
  }

  remove(workspaceId: string, appId: string, domainId: string) {
    const app = this.getApp(workspaceId, appId);
    const row = this.ctx.db.select().from(appDomains).where(and(eq(appDomains.id, domainId), eq(appDomains.appId, app.id))).get();
    if (!row) throw new ApiError("NOT_FOUND", "Domain not found");
    this.ctx.db.delete(appDomains).where(eq(appDomains.id, row.id)).run();
    this.ctx.proxyRoutes.deleteDomain(row.domain);
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
