// The DNS check of custom domains (src/certificates/dns-check.ts) against a real DNS server on
// loopback, pebble-challtestsrv, whose records each test sets. No other resolver is ever asked.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { NetworkInterfaceInfo } from "node:os";
import { DnsChecker, detectPublicAddresses } from "../../../src/certificates/dns-check";
import { startDnsServer, type DnsServer } from "../../helpers/dns-server";

let dns: DnsServer;

/** Makes `host` answer A and AAAA queries with exactly these addresses (none: no record). */
const setRecords = (host: string, addresses: string[]) => dns.setAddresses(host, addresses);

beforeAll(async () => {
  dns = await startDnsServer();
  // By default every name has an A record 127.0.0.1; here a name has only the records a test gives it.
  await dns.setDefaultA("");
});

afterAll(() => dns?.stop());

const checkerFor = (expected: string[], options: { cacheMs?: number; timeoutMs?: number } = {}) => new DnsChecker({ expected, servers: [dns.address], ...options });

describe("DnsChecker.check", () => {
  test("ok when every address the name resolves to is this server's, asking the server on the port given", async () => {
    // Only the test's server knows this name, so an answer proves setServers kept its port.
    await setRecords("shop.example.test", ["127.0.0.9", "2001:db8::9"]);
    const check = await checkerFor(["127.0.0.9", "2001:DB8:0:0::9"]).check("shop.example.test");
    expect(check).toMatchObject({ status: "ok", addresses: ["127.0.0.9", "2001:db8::9"], expected: ["127.0.0.9", "2001:db8::9"], message: null });
    expect(Date.now() - Date.parse(check.checkedAt)).toBeLessThan(10_000);
  });

  test("ok with only an A record when the server also has an IPv6 address", async () => {
    await setRecords("v4only.example.test", ["127.0.0.9"]);
    const check = await checkerFor(["127.0.0.9", "2001:db8::9"]).check("v4only.example.test");
    expect(check).toMatchObject({ status: "ok", addresses: ["127.0.0.9"], message: null });
  });

  test("mismatch when an A record points elsewhere: the message names the stray and the expected address", async () => {
    await setRecords("moved.example.test", ["127.0.0.9", "127.0.0.44"]);
    const check = await checkerFor(["127.0.0.9"]).check("moved.example.test");
    expect(check.status).toBe("mismatch");
    expect(check.addresses).toEqual(["127.0.0.44", "127.0.0.9"]);
    expect(check.message).toBe("moved.example.test resolves to 127.0.0.44, which is not this server (127.0.0.9): point its A record at 127.0.0.9.");
  });

  test("mismatch when an AAAA record points elsewhere and the server has no IPv6: remove it", async () => {
    await setRecords("stray-v6.example.test", ["127.0.0.9", "2001:db8::77"]);
    const check = await checkerFor(["127.0.0.9"]).check("stray-v6.example.test");
    expect(check.status).toBe("mismatch");
    expect(check.message).toContain("2001:db8::77");
    expect(check.message).toContain("remove its AAAA record");
  });

  test("unresolved when the name has no record: the message says which record to add", async () => {
    await setRecords("nothing.example.test", []);
    const check = await checkerFor(["127.0.0.9"]).check("nothing.example.test");
    expect(check).toMatchObject({ status: "unresolved", addresses: [], expected: ["127.0.0.9"] });
    expect(check.message).toContain("add an A record pointing at 127.0.0.9");
  });

  test("unresolved, within the timeout, when the DNS server never answers", async () => {
    const silent = await Bun.udpSocket({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const checker = new DnsChecker({ expected: ["127.0.0.9"], servers: [`127.0.0.1:${silent.port}`], timeoutMs: 300 });
      const started = Date.now();
      const check = await checker.check("silent.example.test");
      expect(check.status).toBe("unresolved");
      expect(Date.now() - started).toBeLessThan(900);
    } finally {
      silent.close();
    }
  });

  test("unknown when this server's address is not known, with the addresses found and a hint to set PLATFORM_PUBLIC_IP", async () => {
    await setRecords("unknown.example.test", ["127.0.0.9"]);
    const check = await checkerFor([]).check("unknown.example.test");
    expect(check).toMatchObject({ status: "unknown", addresses: ["127.0.0.9"], expected: [] });
    expect(check.message).toContain("PLATFORM_PUBLIC_IP");
  });

  test("a changed record is seen only after forget(), whatever the spelling of the host", async () => {
    await setRecords("cached.example.test", ["127.0.0.44"]);
    const checker = checkerFor(["127.0.0.9"]);
    expect((await checker.check("cached.example.test")).status).toBe("mismatch");
    await setRecords("cached.example.test", ["127.0.0.9"]);
    expect((await checker.check("Cached.Example.Test.")).status).toBe("mismatch");
    checker.forget("cached.example.test");
    expect((await checker.check("cached.example.test")).status).toBe("ok");
  });

  test("the cache lasts cacheMs", async () => {
    await setRecords("expiring.example.test", ["127.0.0.44"]);
    const checker = checkerFor(["127.0.0.9"], { cacheMs: 200 });
    expect((await checker.check("expiring.example.test")).status).toBe("mismatch");
    await setRecords("expiring.example.test", ["127.0.0.9"]);
    expect((await checker.check("expiring.example.test")).status).toBe("mismatch");
    await Bun.sleep(250);
    expect((await checker.check("expiring.example.test")).status).toBe("ok");
  });

  test("concurrent checks of one host share one lookup", async () => {
    await setRecords("busy.example.test", ["127.0.0.9"]);
    const checker = checkerFor(["127.0.0.9"]);
    const [first, second] = await Promise.all([checker.check("busy.example.test"), checker.check("busy.example.test")]);
    expect(second).toBe(first);
  });
});

describe("DnsChecker.txtRecords", () => {
  test("the TXT values of a name, looked up afresh each time; none for a name without; null when no answer comes", async () => {
    const checker = checkerFor([]);
    await dns.addTxt("_platform-challenge.txt.example.test", "platform-verification=one");
    await dns.addTxt("_platform-challenge.txt.example.test", "something else");
    expect((await checker.txtRecords("_platform-challenge.TXT.example.test."))?.sort()).toEqual(["platform-verification=one", "something else"]);
    await dns.clearTxt("_platform-challenge.txt.example.test");
    expect(await checker.txtRecords("_platform-challenge.txt.example.test")).toEqual([]);
    // A server that never answers (a port of our own that drops every datagram): null within the timeout.
    const silent = await Bun.udpSocket({ hostname: "127.0.0.1", port: 0 });
    try {
      const startedAt = Date.now();
      const unanswered = new DnsChecker({ expected: [], servers: [`127.0.0.1:${silent.port}`], timeoutMs: 300 });
      expect(await unanswered.txtRecords("_platform-challenge.txt.example.test")).toBeNull();
      expect(Date.now() - startedAt).toBeLessThan(2000);
    } finally {
      silent.close();
    }
  });
});

describe("detectPublicAddresses", () => {
  const entry = (address: string, internal = false): NetworkInterfaceInfo =>
    address.includes(":")
      ? { address, netmask: "ffff:ffff:ffff:ffff::", family: "IPv6", mac: "02:00:00:00:00:01", internal, cidr: `${address}/64`, scopeid: 0 }
      : { address, netmask: "255.255.255.0", family: "IPv4", mac: "02:00:00:00:00:01", internal, cidr: `${address}/24` };

  test("keeps only global unicast addresses, sorted and once each", () => {
    const interfaces = {
      lo: [entry("127.0.0.1", true), entry("::1", true)],
      eth0: [entry("51.15.20.30"), entry("10.0.0.5"), entry("2a01:4f8:1:2::10"), entry("fe80::1"), entry("fd00::2")],
      eth1: [entry("51.15.20.30"), entry("192.168.1.20"), entry("169.254.3.4")],
      docker0: [entry("172.17.0.1"), entry("fe80::42:acff:fe11:1")],
      "br-5f1c": [entry("172.18.0.1")],
      tailscale0: [entry("100.101.102.103"), entry("fd7a:115c:a1e0::1")],
      docs: [entry("203.0.113.5"), entry("198.51.100.7"), entry("192.0.2.2"), entry("2001:db8::1"), entry("3fff::1")],
      teredo: [entry("2001:0:53aa:64c::1")],
      wg0: [entry("2A01:4F8:1:2:0:0:0:11")],
    };
    expect(detectPublicAddresses(interfaces)).toEqual(["2a01:4f8:1:2::10", "2a01:4f8:1:2::11", "51.15.20.30"]);
  });

  test("a machine with only private addresses has none", () => {
    expect(detectPublicAddresses({ lo: [entry("127.0.0.1", true)], eth0: [entry("192.0.2.2"), entry("fd00::2"), entry("fe80::fc:ff:fe00:1")] })).toEqual([]);
  });
});
