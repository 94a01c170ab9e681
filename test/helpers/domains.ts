// Custom domains in tests: claim one for an app and prove it with the TXT record the API shows,
// published on the test's own DNS server (./dns-server.ts).
import { TestServer } from "./server";
import { startDnsServer, type DnsServer } from "./dns-server";

const dnsServers = new WeakMap<TestServer, DnsServer>();

/** A test server resolving with a DNS server of its own (PLATFORM_DNS_SERVERS); stop both with `stop`. */
export async function startServerWithDns(env: Record<string, string> = {}): Promise<{ server: TestServer; dns: DnsServer; stop(): Promise<void> }> {
  const dns = await startDnsServer();
  try {
    const server = await TestServer.start({ ...env, PLATFORM_DNS_SERVERS: dns.address });
    dnsServers.set(server, dns);
    return { server, dns, stop: () => server.stop().finally(() => dns.stop()) };
  } catch (error) {
    await dns.stop();
    throw error;
  }
}

/** The DNS server of a server started by startServerWithDns. */
export function dnsServerOf(server: TestServer): DnsServer {
  const dns = dnsServers.get(server);
  if (!dns) throw new Error("this test server has no DNS server of its own: start it with startServerWithDns");
  return dns;
}

/** POST …/domains: the answer as it came. */
export const claimDomain = (server: TestServer, key: string, appId: string, domain: string) => server.request("POST", `/api/apps/${appId}/domains`, { key, body: { domain } });

/** Publishes the claim's TXT record and asks for it to be looked up; the domain after. Throws unless it is verified then. */
export async function proveDomain(server: TestServer, key: string, dns: DnsServer, appId: string, claimed: { id: string; verification: { record: { name: string; value: string } } }) {
  await dns.addTxt(claimed.verification.record.name, claimed.verification.record.value);
  const response = await server.request("POST", `/api/apps/${appId}/domains/${claimed.id}/verify`, { key });
  if (response.body.domain?.verification?.status !== "verified") throw new Error(`not verified: ${JSON.stringify(response.body)}`);
  return response.body.domain;
}

/** Claims `domain` for the app and proves it: the domain, verified. */
export async function addVerifiedDomain(server: TestServer, key: string, dns: DnsServer, appId: string, domain: string) {
  const claimed = await claimDomain(server, key, appId, domain);
  if (claimed.status !== 201) throw new Error(`claim of ${domain}: ${claimed.status} ${JSON.stringify(claimed.body)}`);
  return proveDomain(server, key, dns, appId, claimed.body.domain);
}
