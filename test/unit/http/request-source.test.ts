// Where a request comes from and the browser checks built on it, without a server: forwarded
// headers count only from a trusted peer; the Host allow-list (DNS rebinding) and the Origin check.
import { describe, expect, test } from "bun:test";
import { assertAllowedHost, assertSameOrigin, requestSourceOf, type RequestSource } from "../../../src/http/request-source";
import { parseCidrList } from "../../../src/http/trusted-proxies";

const peer = (address: string) => ({ requestIP: () => ({ address }) });
const forwarded = {
  host: "127.0.0.1:3000",
  "x-forwarded-for": "203.0.113.9, 198.51.100.4",
  "x-forwarded-host": "paas.example.com",
  "x-forwarded-proto": "https",
};
const request = (headers: Record<string, string>) => new Request("http://127.0.0.1:3000/api/auth/login", { method: "POST", headers });
const config = { apiTrustedProxies: parseCidrList("10.0.0.0/8"), apiHosts: ["paas.example.com"] };

describe("the request's source", () => {
  test("from an untrusted peer the forwarded headers are ignored", () => {
    expect(requestSourceOf(config, peer("192.0.2.50"), request(forwarded))).toEqual({
      peerAddress: "192.0.2.50",
      clientAddress: "192.0.2.50",
      host: "127.0.0.1:3000",
      https: false,
    });
  });

  test("from a trusted peer they are the client, the host and the scheme", () => {
    expect(requestSourceOf(config, peer("10.0.0.2"), request(forwarded))).toEqual({
      peerAddress: "10.0.0.2",
      clientAddress: "198.51.100.4",
      host: "paas.example.com",
      https: true,
    });
    const plain = requestSourceOf(config, peer("10.0.0.2"), request({ host: "127.0.0.1:3000", "x-forwarded-proto": "https, http" }));
    expect(plain).toEqual({ peerAddress: "10.0.0.2", clientAddress: "10.0.0.2", host: "127.0.0.1:3000", https: false });
  });

  test("without a server to ask there is no address", () => {
    expect(requestSourceOf(config, null, request(forwarded)).clientAddress).toBeNull();
  });
});

describe("the Host allow-list", () => {
  const source = (host: string): RequestSource => ({ peerAddress: null, clientAddress: null, host, https: false });
  const allowed = (host: string, apiHosts = config.apiHosts) => {
    try {
      assertAllowedHost({ apiHosts }, source(host));
      return true;
    } catch (error) {
      expect((error as { code: string }).code).toBe("HOST_NOT_ALLOWED");
      return false;
    }
  };

  test("IP literals, localhost and the configured names pass, with or without a port, in any case", () => {
    for (const host of ["127.0.0.1:3000", "192.168.1.20", "[::1]:3000", "[2001:db8::5]", "localhost:3000", "LOCALHOST", "app.localhost", "paas.example.com", "PAAS.Example.com.:443"]) {
      expect({ host, allowed: allowed(host) }).toEqual({ host, allowed: true });
    }
  });

  test("any other name is refused, also one that only starts or ends like an allowed one", () => {
    for (const host of ["attacker.example", "paas.example.com.attacker.example", "evil-paas.example.com", "localhost.attacker.example", "127.0.0.1.nip.io", ""]) {
      expect({ host, allowed: allowed(host) }).toEqual({ host, allowed: false });
    }
  });

  test("\"*\" allows any name", () => {
    expect(allowed("attacker.example", ["*"])).toBe(true);
  });
});

describe("the Origin check", () => {
  const source: RequestSource = { peerAddress: null, clientAddress: null, host: "Paas.example.com", https: true };
  const origin = (value?: string) => request(value ? { origin: value } : {});

  test("a page of the same host passes; another site, a malformed Origin, or none where one is required do not", () => {
    expect(() => assertSameOrigin(origin("https://paas.example.com"), source, true)).not.toThrow();
    expect(() => assertSameOrigin(origin(), source, false)).not.toThrow();
    for (const [value, required] of [["https://evil.example", false], ["null", false], [undefined, true]] as const) {
      expect(() => assertSameOrigin(origin(value), source, required)).toThrow(expect.objectContaining({ code: "CSRF_REJECTED" }));
    }
  });
});
