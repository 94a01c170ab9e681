// The Certificates service (src/certificates/service.ts) on a real SQLite database and data dir,
// with a stand-in CA that signs with openssl (and fails or holds its orders on demand). Which
// certificate a host gets is checked by real TLS handshakes on loopback, as a browser would see it.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { X509Certificate } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, createServer, type Server } from "node:tls";
import type { AcmeIssuer } from "../../../src/certificates/acme";
import { CertificateFiles, type StoredPair } from "../../../src/certificates/files";
import { CertificateProblem } from "../../../src/certificates/pem";
import { Certificates } from "../../../src/certificates/service";
import type { TlsSettings } from "../../../src/config";
import { openDatabase, type PlatformDb } from "../../../src/db";
import { certificates } from "../../../src/db/schema";
import { makeCa, makeCertificate, type TestCa, type TestPair } from "../../helpers/certificates";
import { tempDir } from "../../helpers/temp";

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

let ca: TestCa;
let fallback: TestPair;

/** Stands in for AcmeIssuer: signs with the test's CA, or fails, or holds its orders until released. */
class StandInIssuer {
  /** Every order, in the order they came. */
  readonly orders: string[] = [];
  /** What each order that succeeded gave, in the order they came. */
  readonly issued: { host: string; pair: TestPair }[] = [];
  inFlight = 0;
  maxInFlight = 0;
  validityDays = 90;
  /** Set: orders fail with this message. */
  failure: string | null = null;
  /** Set: orders sign for these names instead of the host's. */
  signedNames: string[] | null = null;
  private gate: { opened: Promise<void>; open: () => void } | null = null;

  hold() {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    this.gate = { opened, open };
  }

  release() {
    this.gate?.open();
    this.gate = null;
  }

  async order(host: string): Promise<StoredPair> {
    this.orders.push(host);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.gate) await this.gate.opened;
      if (this.failure) throw new Error(this.failure);
      const pair = await makeCertificate({ names: this.signedNames ?? [host], ca, days: this.validityDays });
      this.issued.push({ host, pair });
      return { chainPem: pair.chainPem, keyPem: pair.keyPem };
    } finally {
      this.inFlight--;
    }
  }

  /** The fingerprint of the last certificate issued for `host`. */
  lastIssuedFingerprint(host: string): string {
    const last = this.issued.findLast((entry) => entry.host === host);
    if (!last) throw new Error(`nothing was issued for ${host}`);
    return fingerprintOf(last.pair.leafPem);
  }
}

let db: PlatformDb;
let files: CertificateFiles;
let issuer: StandInIssuer;
let wanted: string[];
/** The workspace of each wanted host; unlisted: one shared workspace. */
let owners: Record<string, string>;
/** The wanted hosts that are custom domains, and whether their DNS points here. */
let customDomains: Record<string, boolean>;
let service: Certificates;

function tlsSettings(ownCertificate: TestPair | null = null): TlsSettings {
  return {
    port: 0,
    ownCertificate: ownCertificate && { certFile: ownCertificate.certFile, keyFile: ownCertificate.keyFile },
    acme: null,
    renewalSchedule: "0 0 1 1 *",
    apiDomain: null,
    publicIps: [],
    dnsServers: [],
  };
}

/** A service on the test's database and files, as main.ts makes one (load, without the schedule). */
function makeService(options: { own?: TestPair; acme?: boolean } = {}): Certificates {
  service = new Certificates({
    db,
    config: { tls: tlsSettings(options.own) },
    files,
    issuer: options.acme === false ? null : (issuer as unknown as AcmeIssuer),
    wantedHosts: () => wanted.map((host) => ({ host, owner: owners[host] ?? "workspace", checkDns: host in customDomains })),
    pointsHere: async (host) => customDomains[host] ?? true,
  });
  service.load();
  return service;
}

async function until(condition: () => boolean, what: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

const issuedFor = (hosts: string[]) => until(() => hosts.every((host) => service.statusOf(host).status === "issued"), `the certificates of ${hosts.join(", ")}`);

const rowOf = (host: string) => db.select().from(certificates).where(eq(certificates.host, host)).get();

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

// One TLS listener on loopback for the whole file: each handshake asks the current test's service.
let tlsServer: Server;
let tlsPort: number;

/** The fingerprint of the certificate a client asking for `serverName` (SNI) is shown. */
function servedFingerprint(serverName: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port: tlsPort, servername: serverName, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on("error", reject);
  });
}

beforeAll(async () => {
  ca = await makeCa("Stand-in ACME CA");
  fallback = await makeCertificate({ names: ["fallback.test"] });
  tlsServer = createServer(
    { cert: fallback.chainPem, key: fallback.keyPem, SNICallback: (name, answer) => answer(null, service.served.secureContextFor(name)) },
    (socket) => socket.end(),
  );
  await new Promise<void>((resolve) => tlsServer.listen(0, "127.0.0.1", resolve));
  tlsPort = (tlsServer.address() as { port: number }).port;
});

afterAll(() => {
  tlsServer.close();
});

beforeEach(() => {
  const dataDir = tempDir();
  db = openDatabase(join(dataDir, "platform.sqlite"));
  files = new CertificateFiles(dataDir);
  issuer = new StandInIssuer();
  wanted = [];
  owners = {};
  customDomains = {};
});

afterEach(() => {
  service?.stop();
  issuer.release();
});

describe("ordering", () => {
  test("orders a certificate for each wanted host, and never for localhost names", async () => {
    wanted = ["a.example.test", "localhost", "app.localhost", "b.example.test"];
    makeService();
    service.check();
    await issuedFor(["a.example.test", "b.example.test"]);
    service.check();
    await Bun.sleep(20);

    expect([...issuer.orders].sort()).toEqual(["a.example.test", "b.example.test"]);
    for (const host of ["localhost", "app.localhost"]) {
      expect(service.statusOf(host)).toMatchObject({ status: "none", source: null });
      expect(service.servesHttps(host)).toBe(false);
    }
    const status = service.statusOf("a.example.test");
    expect(status).toMatchObject({ status: "issued", source: "acme", lastError: null, nextAttemptAt: null });
    expect(status.issuer).toContain("CN=Stand-in ACME CA");
    expect(service.servesHttps("a.example.test")).toBe(true);
    expect(service.servesHttps("unknown.example.test")).toBe(false);
    expect(await servedFingerprint("a.example.test")).toBe(issuer.lastIssuedFingerprint("a.example.test"));
    expect(await servedFingerprint("b.example.test")).toBe(issuer.lastIssuedFingerprint("b.example.test"));
    expect(rowOf("a.example.test")).toMatchObject({ source: "acme", failures: 0, lastError: null });
    expect(files.read("a.example.test")).not.toBeNull();
  });

  test("orders one certificate at a time platform-wide, and never two for one host", async () => {
    wanted = ["a.example.test", "b.example.test", "c.example.test"];
    makeService();
    issuer.hold();
    service.check();
    service.check();
    service.hostsChanged();
    await Bun.sleep(50);
    expect(issuer.orders).toHaveLength(1);
    for (const host of wanted) expect(service.statusOf(host).status).toBe("pending");

    issuer.release();
    await issuedFor(wanted);
    service.check();
    await Bun.sleep(20);
    expect([...issuer.orders].sort()).toEqual(["a.example.test", "b.example.test", "c.example.test"]);
    expect(issuer.maxInFlight).toBe(1);
  });

  test("a host that is no longer wanted when its certificate comes is not stored", async () => {
    wanted = ["a.example.test"];
    makeService();
    issuer.hold();
    service.check();
    wanted = [];
    service.hostsChanged();
    issuer.release();
    await until(() => issuer.inFlight === 0, "the order");
    await Bun.sleep(20);

    expect(rowOf("a.example.test")).toBeUndefined();
    expect(files.read("a.example.test")).toBeNull();
    expect(service.servesHttps("a.example.test")).toBe(false);
  });

  test("a stored certificate serves again after a restart, without a new order", async () => {
    wanted = ["a.example.test"];
    makeService();
    service.check();
    await issuedFor(["a.example.test"]);

    const restarted = makeService();
    expect(restarted.servesHttps("a.example.test")).toBe(true);
    restarted.check();
    await Bun.sleep(20);
    expect(issuer.orders).toEqual(["a.example.test"]);
    expect(await servedFingerprint("a.example.test")).toBe(issuer.lastIssuedFingerprint("a.example.test"));
  });
});

describe("fairness between workspaces", () => {
  test("orders are taken in turn from each workspace: one with many hosts does not hold another's back", async () => {
    wanted = ["a1.example.test", "a2.example.test", "a3.example.test", "a4.example.test"];
    for (const host of wanted) owners[host] = "workspace-a";
    makeService();
    issuer.hold();
    service.check();
    await until(() => issuer.orders.length === 1, "the first order");
    wanted = [...wanted, "b1.example.test"];
    owners["b1.example.test"] = "workspace-b";
    service.hostsChanged();
    issuer.release();
    await issuedFor(wanted);
    expect(issuer.orders).toEqual(["a1.example.test", "b1.example.test", "a2.example.test", "a3.example.test", "a4.example.test"]);
    expect(issuer.maxInFlight).toBe(1);
  });

  test("a custom domain is ordered only once its DNS points here, and says it waits until then", async () => {
    wanted = ["www.example.test"];
    customDomains["www.example.test"] = false;
    makeService();
    service.check();
    await Bun.sleep(30);
    expect(issuer.orders).toEqual([]);
    expect(service.statusOf("www.example.test")).toMatchObject({ status: "waiting", source: "acme" });
    customDomains["www.example.test"] = true;
    service.check();
    await issuedFor(["www.example.test"]);
    expect(issuer.orders).toEqual(["www.example.test"]);
  });

  test("a host that may get no certificate yet (a domain not verified) shows waiting, or none without ACME", () => {
    makeService();
    expect(service.statusOf("pending.example.test", Date.now(), false)).toMatchObject({ status: "waiting" });
    makeService({ acme: false });
    expect(service.statusOf("pending.example.test", Date.now(), false)).toMatchObject({ status: "none", source: null });
  });
});

describe("after a failed order", () => {
  test("the backoff stays with the host name: removing the host and adding it again orders nothing sooner", async () => {
    wanted = ["a.example.test"];
    makeService();
    issuer.failure = "the CA could not reach a.example.test";
    service.check();
    await until(() => service.statusOf("a.example.test").status === "failed", "the failure");
    const nextAttemptAt = Date.parse(service.statusOf("a.example.test").nextAttemptAt!);

    wanted = [];
    service.forget("a.example.test");
    service.hostsChanged();
    wanted = ["a.example.test"];
    service.hostsChanged();
    await Bun.sleep(30);
    expect(issuer.orders).toHaveLength(1);
    expect(service.statusOf("a.example.test")).toMatchObject({ status: "failed", lastError: "the CA could not reach a.example.test" });
    expect(Date.parse(service.statusOf("a.example.test").nextAttemptAt!)).toBe(nextAttemptAt);

    // After the wait the next failure doubles it, as if the host had never gone.
    const startedAt = Date.now();
    service.check(nextAttemptAt + 1000);
    await until(() => issuer.orders.length === 2 && issuer.inFlight === 0, "the second order");
    await until(() => rowOf("a.example.test")?.failures === 2, "the second failure");
    expect(rowOf("a.example.test")!.nextAttemptAt! - startedAt).toBeGreaterThanOrEqual(10 * MINUTE_MS);
  });


  test("no new order before the backoff, which doubles with each failure; a success clears it", async () => {
    wanted = ["a.example.test"];
    makeService();
    issuer.failure = "Connection refused: the CA could not reach a.example.test";
    const attempt = async (now: number, expectedBackoffMs: number) => {
      const startedAt = Date.now();
      const ordersBefore = issuer.orders.length;
      service.check(now);
      await until(() => issuer.orders.length > ordersBefore && service.statusOf("a.example.test").status === "failed", "the failure");
      const finishedAt = Date.now();
      const status = service.statusOf("a.example.test");
      expect(status.lastError).toBe("Connection refused: the CA could not reach a.example.test");
      expect(Date.parse(status.lastAttemptAt!)).toBeGreaterThanOrEqual(startedAt);
      expect(Date.parse(status.lastAttemptAt!)).toBeLessThanOrEqual(finishedAt);
      expect(Date.parse(status.nextAttemptAt!)).toBeGreaterThanOrEqual(startedAt + expectedBackoffMs);
      expect(Date.parse(status.nextAttemptAt!)).toBeLessThanOrEqual(finishedAt + expectedBackoffMs);
      return Date.parse(status.nextAttemptAt!);
    };

    let nextAttemptAt = await attempt(Date.now(), 5 * MINUTE_MS);
    expect(issuer.orders).toHaveLength(1);

    service.check(nextAttemptAt - MINUTE_MS);
    await Bun.sleep(20);
    expect(issuer.orders).toHaveLength(1);
    expect(service.statusOf("a.example.test").status).toBe("failed");

    nextAttemptAt = await attempt(nextAttemptAt + 1000, 10 * MINUTE_MS);
    expect(issuer.orders).toHaveLength(2);
    service.check(nextAttemptAt - MINUTE_MS);
    await Bun.sleep(20);
    expect(issuer.orders).toHaveLength(2);

    nextAttemptAt = await attempt(nextAttemptAt + 1000, 20 * MINUTE_MS);
    expect(rowOf("a.example.test")?.failures).toBe(3);

    issuer.failure = null;
    service.check(nextAttemptAt + 1000);
    await issuedFor(["a.example.test"]);
    expect(service.statusOf("a.example.test")).toMatchObject({ status: "issued", lastError: null, nextAttemptAt: null });
    expect(rowOf("a.example.test")?.failures).toBe(0);
  });

  test("the other hosts are still ordered", async () => {
    wanted = ["a.example.test", "b.example.test"];
    makeService();
    issuer.failure = "the CA is down";
    service.check();
    await until(() => wanted.every((host) => service.statusOf(host).status === "failed"), "both failures");
    issuer.failure = null;
    wanted = ["a.example.test", "b.example.test", "c.example.test"];
    service.hostsChanged();
    await issuedFor(["c.example.test"]);
    expect(service.statusOf("a.example.test").status).toBe("failed");
  });

  test("a failure that cannot be saved (a full disk) is logged, and the other hosts are still ordered", async () => {
    wanted = ["a.example.test", "b.example.test"];
    makeService();
    issuer.failure = "the CA is down";
    // What SQLite answers on a full disk, for every write of a certificate row.
    db.$client.run("CREATE TRIGGER full_disk BEFORE INSERT ON certificates BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
    const logged: string[] = [];
    const originalError = console.error;
    console.error = (...parts: unknown[]) => void logged.push(parts.join(" "));
    try {
      service.check();
      await until(() => issuer.orders.length === 2 && issuer.inFlight === 0, "both orders");
      await Bun.sleep(20);
    } finally {
      console.error = originalError;
    }
    expect([...issuer.orders].sort()).toEqual(wanted);
    expect(logged.filter((line) => line.includes("database or disk is full"))).toHaveLength(2);
    // Space again: the next check orders them, nothing was remembered that holds them back.
    db.$client.run("DROP TRIGGER full_disk");
    issuer.failure = null;
    service.check();
    await issuedFor(wanted);
  });

  test("a certificate from the CA for another host is refused, and said so", async () => {
    wanted = ["a.example.test"];
    makeService();
    issuer.signedNames = ["other.example.test"];
    service.check();
    await until(() => service.statusOf("a.example.test").status === "failed", "the refusal");
    expect(service.statusOf("a.example.test").lastError).toBe(
      "The CA's certificate was refused: The certificate is not valid for a.example.test: it names other.example.test.",
    );
    expect(files.read("a.example.test")).toBeNull();
    expect(service.servesHttps("a.example.test")).toBe(false);
  });
});

describe("renewal", () => {
  test("a certificate is renewed once past two thirds of its life, not before", async () => {
    wanted = ["a.example.test"];
    issuer.validityDays = 3;
    makeService();
    service.check();
    await issuedFor(["a.example.test"]);
    const status = service.statusOf("a.example.test");
    const renewsAt = Date.parse(status.renewsAt!);
    expect(renewsAt - Date.parse(status.notBefore!)).toBe(2 * DAY_MS);
    const first = await servedFingerprint("a.example.test");

    service.check(renewsAt - MINUTE_MS);
    await Bun.sleep(20);
    expect(issuer.orders).toHaveLength(1);

    service.check(renewsAt + MINUTE_MS);
    await until(() => issuer.issued.length === 2 && issuer.inFlight === 0, "the renewal");
    await Bun.sleep(10);
    expect(issuer.orders).toEqual(["a.example.test", "a.example.test"]);
    const renewed = await servedFingerprint("a.example.test");
    expect(renewed).not.toBe(first);
    expect(renewed).toBe(issuer.lastIssuedFingerprint("a.example.test"));
  });

  test("a failed renewal keeps the certificate in place, and backs off from the first step", async () => {
    wanted = ["a.example.test"];
    issuer.validityDays = 3;
    makeService();
    service.check();
    await issuedFor(["a.example.test"]);
    const renewsAt = Date.parse(service.statusOf("a.example.test").renewsAt!);

    issuer.failure = "the CA is down";
    const startedAt = Date.now();
    service.check(renewsAt + MINUTE_MS);
    await until(() => issuer.orders.length === 2 && service.statusOf("a.example.test").lastError !== null, "the failed renewal");
    const status = service.statusOf("a.example.test");
    expect(status).toMatchObject({ status: "issued", source: "acme", lastError: "the CA is down" });
    expect(Date.parse(status.nextAttemptAt!) - startedAt).toBeGreaterThanOrEqual(5 * MINUTE_MS);
    expect(Date.parse(status.nextAttemptAt!) - startedAt).toBeLessThan(6 * MINUTE_MS);
    expect(await servedFingerprint("a.example.test")).toBe(issuer.lastIssuedFingerprint("a.example.test"));
  });
});

describe("which certificate serves a host", () => {
  test("an uploaded one over the platform's own, the platform's own over ACME's", async () => {
    const own = await makeCertificate({ names: ["*.example.test"] });
    const uploaded = await makeCertificate({ names: ["b.example.test"], ca });
    wanted = ["a.example.test", "b.example.test", "other.test"];
    makeService({ own });
    service.upload("b.example.test", uploaded.chainPem, uploaded.keyPem);
    service.check();
    await issuedFor(["other.test"]);
    service.check();
    await Bun.sleep(20);

    // The hosts the own certificate covers and the uploaded one are never ordered.
    expect(issuer.orders).toEqual(["other.test"]);
    expect(await servedFingerprint("a.example.test")).toBe(fingerprintOf(own.leafPem));
    expect(await servedFingerprint("b.example.test")).toBe(fingerprintOf(uploaded.leafPem));
    expect(await servedFingerprint("other.test")).toBe(issuer.lastIssuedFingerprint("other.test"));
    expect(await servedFingerprint("unknown.test")).toBe(fingerprintOf(fallback.leafPem));
    // As the client wrote it: upper case and a final dot.
    expect(await servedFingerprint("A.Example.Test.")).toBe(fingerprintOf(own.leafPem));
    expect(service.statusOf("a.example.test")).toMatchObject({ status: "issued", source: "platform", renewsAt: null });
    expect(service.statusOf("b.example.test")).toMatchObject({ status: "issued", source: "uploaded", renewsAt: null });
    expect(service.statusOf("other.test")).toMatchObject({ status: "issued", source: "acme" });
    expect(service.served.defaultPair()?.chainPem).toBe(own.chainPem);

    // An upload for a host ACME served takes its place.
    const uploadedOther = await makeCertificate({ names: ["other.test"], ca });
    service.upload("other.test", uploadedOther.chainPem, uploadedOther.keyPem);
    expect(await servedFingerprint("other.test")).toBe(fingerprintOf(uploadedOther.leafPem));
  });

  test("the platform's own certificate set after ACME's serves the hosts it covers in its place", async () => {
    wanted = ["a.example.test"];
    makeService();
    service.check();
    await issuedFor(["a.example.test"]);

    const own = await makeCertificate({ names: ["*.example.test"] });
    makeService({ own });
    expect(await servedFingerprint("a.example.test")).toBe(fingerprintOf(own.leafPem));
    expect(service.statusOf("a.example.test")).toMatchObject({ status: "issued", source: "platform" });
  });

  test("the platform's own certificate replaced on disk serves from the next check", async () => {
    const own = await makeCertificate({ names: ["a.example.test"] });
    wanted = ["a.example.test"];
    makeService({ own, acme: false });
    expect(await servedFingerprint("a.example.test")).toBe(fingerprintOf(own.leafPem));

    const next = await makeCertificate({ names: ["a.example.test", "b.example.test"] });
    writeFileSync(own.certFile, next.chainPem);
    writeFileSync(own.keyFile, next.keyPem);
    service.check();
    expect(await servedFingerprint("a.example.test")).toBe(fingerprintOf(next.leafPem));
    expect(service.statusOf("b.example.test")).toMatchObject({ status: "issued", source: "platform" });
  });

  test("a platform certificate whose key is not its own stops the start with a clear message", async () => {
    const own = await makeCertificate({ names: ["a.example.test"] });
    const other = await makeCertificate({ names: ["a.example.test"] });
    writeFileSync(own.keyFile, other.keyPem);
    expect(() => makeService({ own })).toThrow(
      "PLATFORM_TLS_CERT/PLATFORM_TLS_KEY: The private key does not belong to the certificate (the first one of the chain).",
    );
  });

  test("servesHttps only while the certificate is valid; after its end the status is expired", async () => {
    wanted = ["a.example.test"];
    makeService();
    service.check();
    await issuedFor(["a.example.test"]);
    const status = service.statusOf("a.example.test");
    const notBefore = Date.parse(status.notBefore!);
    const expiresAt = Date.parse(status.expiresAt!);

    expect(service.servesHttps("a.example.test", notBefore)).toBe(true);
    expect(service.servesHttps("a.example.test", expiresAt - 1)).toBe(true);
    expect(service.servesHttps("a.example.test", expiresAt)).toBe(false);
    expect(service.statusOf("a.example.test", expiresAt + 1).status).toBe("expired");
  });
});

describe("onAvailable", () => {
  test("fires once, when the first certificate appears", async () => {
    wanted = ["a.example.test", "b.example.test"];
    makeService();
    let calls = 0;
    service.onAvailable = () => calls++;
    issuer.hold();
    service.check();
    await Bun.sleep(20);
    expect(calls).toBe(0);

    issuer.release();
    await issuedFor(wanted);
    const uploaded = await makeCertificate({ names: ["c.example.test"], ca });
    service.upload("c.example.test", uploaded.chainPem, uploaded.keyPem);
    expect(calls).toBe(1);
  });

  test("fires at the start when the platform's own certificate is there, and not again", async () => {
    const own = await makeCertificate({ names: ["api.example.test"] });
    wanted = ["a.other.test"];
    makeService({ own });
    let calls = 0;
    service.onAvailable = () => calls++;
    service.start();
    expect(calls).toBe(1);
    await issuedFor(["a.other.test"]);
    expect(calls).toBe(1);
  });
});

describe("a host no longer wanted", () => {
  test("is forgotten at the next check: row and files gone, its certificate no longer served", async () => {
    const uploaded = await makeCertificate({ names: ["c.example.test"], ca });
    wanted = ["a.example.test", "b.example.test", "c.example.test"];
    makeService();
    service.upload("c.example.test", uploaded.chainPem, uploaded.keyPem);
    service.check();
    await issuedFor(["a.example.test", "b.example.test"]);

    wanted = ["a.example.test"];
    service.hostsChanged();
    for (const host of ["b.example.test", "c.example.test"]) {
      expect(rowOf(host)).toBeUndefined();
      expect(files.read(host)).toBeNull();
      expect(service.servesHttps(host)).toBe(false);
      expect(await servedFingerprint(host)).toBe(fingerprintOf(fallback.leafPem));
    }
    expect(service.servesHttps("a.example.test")).toBe(true);
    expect(files.read("a.example.test")).not.toBeNull();
  });
});

describe("upload", () => {
  test("refuses a pair made for another host, and stores nothing", async () => {
    const forOther = await makeCertificate({ names: ["other.example.test"], ca });
    wanted = ["a.example.test"];
    makeService({ acme: false });
    let problem: unknown;
    try {
      service.upload("a.example.test", forOther.chainPem, forOther.keyPem);
    } catch (error) {
      problem = error;
    }
    expect(problem).toBeInstanceOf(CertificateProblem);
    expect((problem as Error).message).toBe("The certificate is not valid for a.example.test: it names other.example.test.");
    expect(rowOf("a.example.test")).toBeUndefined();
    expect(files.read("a.example.test")).toBeNull();
  });

  test("serves with ACME off, and says so in the status it returns", async () => {
    const uploaded = await makeCertificate({ names: ["a.example.test"], ca, days: 30 });
    wanted = ["a.example.test"];
    makeService({ acme: false });
    service.check();
    expect(service.statusOf("a.example.test")).toMatchObject({ status: "none", source: null });

    const status = service.upload("a.example.test", uploaded.chainPem, uploaded.keyPem);
    expect(status).toMatchObject({ status: "issued", source: "uploaded", lastError: null, renewsAt: null });
    expect(Date.parse(status.expiresAt!) - Date.parse(status.notBefore!)).toBe(30 * DAY_MS);
    expect(rowOf("a.example.test")?.source).toBe("uploaded");
    expect(await servedFingerprint("a.example.test")).toBe(fingerprintOf(uploaded.leafPem));
  });
});

describe("removeUpload", () => {
  test("returns false when nothing was uploaded, and leaves an ACME certificate in place", async () => {
    wanted = ["a.example.test"];
    makeService();
    expect(service.removeUpload("a.example.test")).toBe(false);
    service.check();
    await issuedFor(["a.example.test"]);
    expect(service.removeUpload("a.example.test")).toBe(false);
    expect(service.statusOf("a.example.test")).toMatchObject({ status: "issued", source: "acme" });
    expect(files.read("a.example.test")).not.toBeNull();
  });

  test("removes the uploaded certificate, and ACME takes over", async () => {
    const uploaded = await makeCertificate({ names: ["a.example.test"], ca });
    wanted = ["a.example.test"];
    makeService();
    service.upload("a.example.test", uploaded.chainPem, uploaded.keyPem);
    service.check();
    await Bun.sleep(20);
    expect(issuer.orders).toEqual([]);

    expect(service.removeUpload("a.example.test")).toBe(true);
    await issuedFor(["a.example.test"]);
    expect(service.statusOf("a.example.test").source).toBe("acme");
    expect(await servedFingerprint("a.example.test")).toBe(issuer.lastIssuedFingerprint("a.example.test"));
  });
});
