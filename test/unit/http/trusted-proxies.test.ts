// CIDR parsing and matching for PLATFORM_TRUSTED_PROXIES, and the client address behind a chain
// of proxies: only what trusted proxies appended to X-Forwarded-For is believed.
import { describe, expect, test } from "bun:test";
import {
  cidrContains,
  clientBehindProxies,
  isIpLiteral,
  isLoopback,
  lastHeaderValue,
  parseAddress,
  parseCidr,
  parseCidrList,
} from "../../../src/http/trusted-proxies";

describe("addresses", () => {
  test("IPv4 and IPv6 spellings are read, anything else is not an address", () => {
    for (const text of ["192.0.2.1", "0.0.0.0", "::", "::1", "2001:db8::1", "[2001:db8::1]", "fe80::1%eth0", "1:2:3:4:5:6:7:8", "::ffff:192.0.2.1", "64:ff9b::192.0.2.1"]) {
      expect(isIpLiteral(text)).toBe(true);
    }
    for (const text of ["", "localhost", "example.com", "256.0.0.1", "1.2.3", "01.2.3.4", "1.2.3.4.5", "1:2:3:4:5:6:7:8:9", "1::2::3", ":1", "12345::", "g::1", "1.2.3.4/8", " "]) {
      expect(isIpLiteral(text)).toBe(false);
    }
  });

  test("an IPv4-mapped IPv6 address is its IPv4 address", () => {
    expect(parseAddress("::ffff:10.1.2.3")).toEqual(parseAddress("10.1.2.3"));
    expect(parseAddress("::ffff:a01:203")).toEqual(parseAddress("10.1.2.3"));
    expect(parseAddress("::1")?.family).toBe(6);
  });

  test("loopback is 127.0.0.0/8 and ::1, in either spelling", () => {
    for (const address of ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.1"]) expect(isLoopback(address)).toBe(true);
    for (const address of ["128.0.0.1", "10.0.0.1", "::2", "::", null]) expect(isLoopback(address)).toBe(false);
  });
});

describe("CIDR ranges", () => {
  test("IPv4 and IPv6 ranges contain their addresses only", () => {
    const private10 = parseCidr("10.0.0.0/8");
    expect(cidrContains(private10, "10.255.1.2")).toBe(true);
    expect(cidrContains(private10, "11.0.0.1")).toBe(false);
    expect(cidrContains(private10, "::ffff:10.0.0.1")).toBe(true);
    expect(cidrContains(private10, "2001:db8::1")).toBe(false);
    const documentation6 = parseCidr("2001:db8::/32");
    expect(cidrContains(documentation6, "2001:db8:ffff::1")).toBe(true);
    expect(cidrContains(documentation6, "2001:db9::1")).toBe(false);
    expect(cidrContains(documentation6, "10.0.0.1")).toBe(false);
  });

  test("host bits are ignored, a bare address is one address, /0 is everything of its family", () => {
    expect(cidrContains(parseCidr("192.168.1.77/24"), "192.168.1.1")).toBe(true);
    expect(cidrContains(parseCidr("192.0.2.1"), "192.0.2.1")).toBe(true);
    expect(cidrContains(parseCidr("192.0.2.1"), "192.0.2.2")).toBe(false);
    expect(cidrContains(parseCidr("0.0.0.0/0"), "203.0.113.9")).toBe(true);
    expect(cidrContains(parseCidr("0.0.0.0/0"), "::1")).toBe(false);
    expect(cidrContains(parseCidr("::/0"), "::1")).toBe(true);
  });

  test("a list is comma-separated, empty is empty, and a bad entry is an error that names it", () => {
    expect(parseCidrList("")).toEqual([]);
    expect(parseCidrList(" 10.0.0.0/8 , ::1 ,")).toHaveLength(2);
    for (const bad of ["10.0.0.0/33", "::/129", "10.0.0.0/8/1", "10.0.0.0/x", "proxy.example.com", "10.0.0.0/-1", "::ffff:10.0.0.0/104"]) {
      expect(() => parseCidrList(`127.0.0.1,${bad}`)).toThrow(bad);
    }
  });
});

describe("the client behind proxies", () => {
  const trusted = parseCidrList("10.0.0.0/8,::1");

  test("an untrusted peer is the client, whatever X-Forwarded-For it sends", () => {
    expect(clientBehindProxies(trusted, "203.0.113.5", "198.51.100.1")).toBe("203.0.113.5");
    expect(clientBehindProxies([], "127.0.0.1", "198.51.100.1")).toBe("127.0.0.1");
  });

  test("behind a trusted peer, the right-most address no trusted proxy has", () => {
    expect(clientBehindProxies(trusted, "10.0.0.2", "198.51.100.1")).toBe("198.51.100.1");
    // The client wrote "192.0.2.66" itself; the proxies appended the rest.
    expect(clientBehindProxies(trusted, "10.0.0.2", "192.0.2.66, 198.51.100.1, 10.0.0.9")).toBe("198.51.100.1");
    expect(clientBehindProxies(trusted, "::1", "2001:db8::7")).toBe("2001:db8::7");
  });

  test("a trusted peer without the header is the client; a chain of trusted ones is its left end", () => {
    expect(clientBehindProxies(trusted, "10.0.0.2", null)).toBe("10.0.0.2");
    expect(clientBehindProxies(trusted, "10.0.0.2", "10.0.0.3, 10.0.0.4")).toBe("10.0.0.3");
  });

  test("a malformed entry ends the walk at the last address believed", () => {
    expect(clientBehindProxies(trusted, "10.0.0.2", "198.51.100.1, not-an-address")).toBe("10.0.0.2");
    expect(clientBehindProxies(trusted, "10.0.0.2", "junk, 10.0.0.3")).toBe("10.0.0.3");
  });

  test("list headers a trusted proxy set are read from the right", () => {
    expect(lastHeaderValue("http, https")).toBe("https");
    expect(lastHeaderValue("example.com")).toBe("example.com");
    expect(lastHeaderValue(" ")).toBeNull();
    expect(lastHeaderValue(null)).toBeNull();
  });
});
