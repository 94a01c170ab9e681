// The domain claims' TXT lookups (src/apps/domains/service.ts) on a real SQLite database, with a
// DNS stand-in whose answers (and how long they take) each test sets: the background check takes
// turns between workspaces, and a verified claim whose record was never published (a claim from
// before proofs existed) is taken over by a workspace that publishes its own.
import { beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openDatabase, type PlatformDb } from "../../src/db";
import { appDomains, apps, workspaces } from "../../src/db/schema";
import { AppDomains } from "../../src/apps/domains/service";
import { issueVerificationToken, verificationTokenOf } from "../../src/apps/domains/verification";
import type { AppRow, AppsContext } from "../../src/apps/deployer";
import type { PublicAddresses } from "../../src/apps/view";
import type { DnsChecker } from "../../src/certificates/dns-check";
import { tempDir } from "../helpers/temp";

/** Stands in for the DNS checker: TXT values per record name, each answer after `delayMs` of its workspace. */
class StandInDns {
  readonly txt = new Map<string, string[]>();
  /** Record names in the order they were looked up. */
  readonly lookedUp: string[] = [];
  slowNames = new Set<string>();
  async txtRecords(name: string): Promise<string[] | null> {
    this.lookedUp.push(name);
    if (this.slowNames.has(name)) {
      // A DNS server that never answers: the checker gives up at its timeout (here short).
      await Bun.sleep(30);
      return null;
    }
    return this.txt.get(name) ?? [];
  }
  forget() {}
  async check() {
    return { status: "ok", addresses: [], expected: [], message: null, checkedAt: new Date().toISOString() };
  }
}

let db: PlatformDb;
let dns: StandInDns;
let routes: Map<string, string>;
let forgotten: string[];
let domains: AppDomains;

function addWorkspaceWithApp(workspaceId: string, subdomain: string) {
  db.insert(workspaces).values({ id: workspaceId, name: workspaceId, createdAt: 1 }).run();
  db.insert(apps)
    .values({ id: `app_${workspaceId}`, workspaceId, name: subdomain, runtime: "node", status: "running", memoryMB: 64, startupCommand: "npm start", autoRestart: true, autoDeploy: false, machineId: "local", subdomain, createdAt: 1, updatedAt: 1 })
    .run();
  issueVerificationToken(db, workspaceId);
}

function addClaim(workspaceId: string, domain: string, values: Partial<typeof appDomains.$inferInsert> = {}) {
  const id = `dom_${workspaceId}_${domain}`;
  db.insert(appDomains).values({ id, appId: `app_${workspaceId}`, workspaceId, domain, createdAt: 1, ...values }).run();
  return id;
}

const claim = (id: string) => db.select().from(appDomains).all().find((row) => row.id === id)!;

beforeEach(() => {
  db = openDatabase(join(tempDir(), "platform.db"));
  dns = new StandInDns();
  routes = new Map();
  forgotten = [];
  const ctx = {
    db,
    config: { domain: "platform.test", apiHosts: [], tls: { acme: null }, customDomains: { reservationMs: 3_600_000, maxPerWorkspace: 100, checkSchedule: "0 */5 * * * *" } },
    proxyRoutes: { setDomain: (domain: string, subdomain: string) => routes.set(domain, subdomain), deleteDomain: (domain: string) => routes.delete(domain) },
    // Every name has a certificate: the one its verified claim's workspace got.
    certificates: { forget: (host: string) => forgotten.push(host), hostsChanged() {}, statusOf: () => ({ status: "issued", source: "acme" }) },
  } as unknown as AppsContext;
  const getApp = (workspaceId: string, appId: string) => db.select().from(apps).all().find((app) => app.id === appId && app.workspaceId === workspaceId) as AppRow;
  const addresses = { urlOf: (host: string) => `http://${host}` } as unknown as PublicAddresses;
  domains = new AppDomains(ctx, getApp, addresses, dns as unknown as DnsChecker);
  for (const [workspaceId, subdomain] of [["ws_many", "many"], ["ws_one", "one"], ["ws_two", "two"]]) addWorkspaceWithApp(workspaceId!, subdomain!);
});

describe("the background check of domain claims", () => {
  test("workspaces take turns: one with many names on a DNS server that never answers holds another back by one lookup at most", async () => {
    // ws_many's claims were all checked longer ago than the others', so a check in that order alone would do them first.
    for (let index = 0; index < 20; index++) {
      addClaim("ws_many", `n${index}.many.test`, { checkedAt: index });
      dns.slowNames.add(`_platform-challenge.n${index}.many.test`);
    }
    addClaim("ws_one", "www.one.test", { checkedAt: 1_000 });
    addClaim("ws_two", "www.two.test", { checkedAt: 2_000 });
    await domains.checkClaims();
    expect(dns.lookedUp).toHaveLength(22);
    expect(dns.lookedUp.indexOf("_platform-challenge.www.one.test")).toBeLessThanOrEqual(2);
    expect(dns.lookedUp.indexOf("_platform-challenge.www.two.test")).toBeLessThanOrEqual(2);
    // Within a workspace, least recently checked first.
    expect(dns.lookedUp.filter((name) => name.includes("many"))).toEqual(Array.from({ length: 20 }, (_, index) => `_platform-challenge.n${index}.many.test`));
  });

  test("verified claims are looked up too: whether their record is still published shows, and they keep routing", async () => {
    const published = addClaim("ws_one", "www.one.test", { verifiedAt: 1 });
    const gone = addClaim("ws_two", "www.two.test", { verifiedAt: 1 });
    dns.txt.set("_platform-challenge.www.one.test", [verificationTokenOf(db, "ws_one")!]);
    await domains.checkClaims();
    expect([claim(published).recordPresent, claim(published).verifiedAt]).toEqual([true, 1]);
    expect([claim(gone).recordPresent, claim(gone).verifiedAt]).toEqual([false, 1]);
    const shown = await domains.get("ws_two", "app_ws_two", gone);
    expect(shown.verification).toMatchObject({ status: "verified", recordPresent: false, message: expect.stringContaining("does not hold this workspace's value") });
  });

  test("a claim verified at migration, whose record was never published, is taken over by a workspace publishing its own: routes and certificate follow", async () => {
    const migrated = addClaim("ws_one", "shop.test", { verifiedAt: 1 });
    domains.routeAll();
    expect(routes.get("shop.test")).toBe("one");
    const newcomer = addClaim("ws_two", "shop.test");
    dns.txt.set("_platform-challenge.shop.test", [verificationTokenOf(db, "ws_two")!]);
    await domains.checkClaims();
    expect(claim(newcomer).verifiedAt).not.toBeNull();
    expect([claim(migrated).verifiedAt, claim(migrated).lostAt !== null]).toEqual([null, true]);
    expect(routes.get("shop.test")).toBe("two");
    expect(forgotten).toEqual(["shop.test"]);
    const lost = await domains.get("ws_one", "app_ws_one", migrated);
    expect(lost.verification).toMatchObject({ status: "lost", message: expect.stringContaining("taken over by another workspace") });
    // Nothing of the new holder's certificate shows to the workspace that lost the name.
    expect(lost.certificate).toMatchObject({ status: "none", source: null, expiresAt: null });
  });

  test("a holder whose token is still among the values keeps the name", async () => {
    const holder = addClaim("ws_one", "shop.test", { verifiedAt: 1 });
    const newcomer = addClaim("ws_two", "shop.test");
    dns.txt.set("_platform-challenge.shop.test", [verificationTokenOf(db, "ws_two")!, verificationTokenOf(db, "ws_one")!]);
    await domains.checkClaims();
    expect([claim(holder).verifiedAt, claim(newcomer).verifiedAt]).toEqual([1, null]);
    const shown = await domains.get("ws_two", "app_ws_two", newcomer);
    expect(shown.verification).toMatchObject({ status: "pending", recordPresent: true, message: expect.stringContaining("still published") });
    expect(forgotten).toEqual([]);
  });
});
