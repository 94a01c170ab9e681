// The registrable-domain rule behind the start's cookie-tossing warning (src/auth/cookie-scope.ts).
import { describe, expect, test } from "bun:test";
import { dashboardNamesSharingAppsDomain, registrableDomainOf } from "../../../src/auth/cookie-scope";

describe("registrableDomainOf", () => {
  test("the last two labels, or three under a known two-label suffix", () => {
    expect(registrableDomainOf("apps.example.com")).toBe("example.com");
    expect(registrableDomainOf("Example.COM.")).toBe("example.com");
    expect(registrableDomainOf("a.b.example.co.uk")).toBe("example.co.uk");
    expect(registrableDomainOf("co.uk")).toBeNull();
  });

  test("none for IP literals, single labels and localhost names", () => {
    for (const name of ["127.0.0.1", "::1", "paas", "localhost", "app.localhost"]) expect(registrableDomainOf(name)).toBeNull();
  });
});

describe("dashboardNamesSharingAppsDomain", () => {
  const config = (domain: string, apiDomain: string | null, apiHosts: string[]) => ({ domain, apiHosts, tls: { apiDomain } as never });

  test("names of the dashboard (PLATFORM_API_DOMAIN, PLATFORM_API_HOSTS) under the apps' registrable domain", () => {
    expect(dashboardNamesSharingAppsDomain(config("apps.example.com", "paas.example.com", ["paas.example.com", "vps.example.net"]))).toEqual(["paas.example.com"]);
    expect(dashboardNamesSharingAppsDomain(config("apps.example.com", null, ["apps.example.com"]))).toEqual(["apps.example.com"]);
    expect(dashboardNamesSharingAppsDomain(config("apps.example.co.uk", "paas.other.co.uk", ["*"]))).toEqual([]);
    expect(dashboardNamesSharingAppsDomain(config("localhost", null, ["localhost"]))).toEqual([]);
  });
});
